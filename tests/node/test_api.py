"""The control API against a real node service (offline, no crawl) in the test's trio loop."""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import closing

import httpx
import pytest
import trio

from crawler.errors import RepositoryFull
from node import api as node_api
from node.client import AsyncNodeClient, NodeError, NodeUnreachable, Unauthorised
from node.config import Config, replace_settings
from node.datadir import DataDir
from node.service import NodeService
from tests.crawler.test_salvage import damage, filled_repository, pages_of

BOOKMARKS = """<!DOCTYPE NETSCAPE-Bookmark-file-1>
<TITLE>Bookmarks</TITLE>
<H1>Bookmarks</H1>
<DL><p>
    <DT><H3>Databases</H3>
    <DL><p>
        <DT><A HREF="http://127.0.0.1:9/none.html">Unreachable page</A>
    </DL><p>
</DL><p>
"""


def quiet_config() -> Config:
    return replace_settings(
        Config(),
        node={"metrics_interval": 0.2, "stats_event_interval": 0.1},
        crawler={"retry_times": 0, "download_timeout": 2.0, "robotstxt_obey": False},
    )


@pytest.fixture
async def node(tmp_path):
    data = DataDir(tmp_path / "node")
    service = NodeService(data, quiet_config(), offline=True)
    async with trio.open_nursery() as nursery:
        await nursery.start(service.run)
        client = AsyncNodeClient.from_data_dir(data)
        try:
            yield service, client
        finally:
            await client.aclose()
            service.request_stop()


@pytest.mark.trio
async def test_requests_without_token_get_401_as_json(node):
    service, _ = node
    async with httpx.AsyncClient(base_url=service.api_url) as plain:
        for path in ("/api/status", "/api/events", "/api/nothing"):
            response = await plain.get(path)
            assert response.status_code == 401
            assert response.json()["error"] == "unauthorised"
        wrong = await plain.get("/api/status", headers={"Authorization": "Bearer not-the-token"})
    assert wrong.status_code == 401


@pytest.mark.trio
async def test_wrong_token_raises_unauthorised(node):
    service, _ = node
    async with AsyncNodeClient(service.api_url, "wrong") as client:
        with pytest.raises(Unauthorised):
            await client.status()


@pytest.mark.trio
async def test_status_has_the_contract_fields(node):
    _, client = node
    status = await client.status()
    assert {
        "peer_id",
        "addrs",
        "uptime_s",
        "crawl",
        "harvest",
        "peers_online",
        "bytes_exchanged",
        "documents",
    } <= set(status)
    assert status["crawl"]["state"] == "running"
    assert {"pages", "pages_per_s", "frontier_size", "errors_by_kind", "bytes_crawled"} <= set(
        status["crawl"]
    )
    assert status["documents"] == {"local": 0, "pooled": 0}
    assert status["bytes_exchanged"] == {"in": 0, "out": 0}


@pytest.mark.trio
async def test_api_file_names_url_and_pid_and_token_is_private(node):
    service, _ = node
    info = json.loads(service.data.api_address.read_text())
    assert info["url"] == service.api_url and info["url"].startswith("http://127.0.0.1:")
    assert service.data.api_token.stat().st_mode & 0o077 == 0


@pytest.mark.trio
async def test_crawl_state_changes_and_unknown_topic_is_404(node):
    _, client = node
    assert (await client.crawl("pause"))["state"] == "paused"
    assert (await client.status())["crawl"]["state"] == "paused"
    assert (await client.crawl("start"))["state"] == "running"
    with pytest.raises(NodeError) as caught:
        await client.crawl("stop", topic="No/Such/Topic")
    assert caught.value.status == 404 and caught.value.kind == "not_found"


@pytest.mark.trio
async def test_crawl_state_persists_across_restart(tmp_path):
    data = DataDir(tmp_path / "node")
    for expected in ("running", "stopped"):
        service = NodeService(data, quiet_config(), offline=True)
        async with trio.open_nursery() as nursery:
            await nursery.start(service.run)
            async with AsyncNodeClient.from_data_dir(data) as client:
                assert (await client.status())["crawl"]["state"] == expected
                await client.crawl("stop")
            service.request_stop()
    assert not data.api_address.exists()
    with pytest.raises(NodeUnreachable):
        AsyncNodeClient.from_data_dir(data)


@pytest.mark.trio
async def test_errors_are_json_with_what_to_do(node):
    service, client = node
    with pytest.raises(NodeError) as caught:
        await client.search("   ", syntax="fts5")  # plain words browse without words; FTS5 cannot
    assert caught.value.status == 400 and "give at least one word" in caught.value.detail
    with pytest.raises(NodeError) as caught:
        await client.document(12345)
    assert caught.value.status == 404
    for beyond_sqlite in (2**63, 10**20):  # an id no SQLite integer holds overflowed the query: a 500
        with pytest.raises(NodeError) as caught:
            await client.document(beyond_sqlite)
        assert caught.value.status == 404 and "take doc_id from a search hit" in caught.value.detail
        with pytest.raises(NodeError) as caught:
            await client.feedback(beyond_sqlite, relevant=True)
        assert caught.value.status == 404
    with pytest.raises(NodeError) as caught:
        await client._call("GET", "/api/no-such-thing")
    assert caught.value.kind == "not_found"
    with pytest.raises(NodeError) as caught:
        await client._call("POST", "/api/feedback", body={"relevant": True})
    assert caught.value.kind == "bad_request" and "doc_id" in caught.value.detail
    async with httpx.AsyncClient(base_url=service.api_url, headers=client._http.headers) as raw:
        broken = await raw.post("/api/topics/import", content=b"{not json")
    assert broken.status_code == 400 and broken.json()["error"] == "bad_request"


@pytest.mark.trio
async def test_hostile_bodies_and_parameters_are_refused_with_what_was_wrong_and_the_node_serves_on(
    node, tmp_path
):
    service, client = node
    async with httpx.AsyncClient(base_url=service.api_url, headers=client._http.headers) as raw:

        async def refused(method: str, path: str, status: int = 400, **options) -> str:
            response = await raw.request(method, path, **options)
            assert response.status_code == status, (path, response.text)
            return response.json()["detail"]

        assert "UTF-8" in await refused("POST", "/api/crawl/start", content=b'{"a": "\xff"}')
        assert "nests too deep" in await refused("POST", "/api/crawl/start", content=b"[" * 100_000)
        lone = b'{"keywords": ["\\ud800"]}'  # a lone UTF-16 surrogate, which no UTF-8 text can hold
        assert "UTF-8" in await refused("PUT", "/api/topics/Databases/keywords", content=lone)
        digits = b'{"doc_id": ' + b"9" * 5001 + b', "opened": true}'
        assert "cannot be read" in await refused("POST", "/api/feedback", content=digits)
        assert "out of range" in await refused("GET", "/api/search?q=sql&weights=text=1e308,confidence=1e308")
        assert "give at least one word" in await refused("GET", "/api/search?syntax=fts5")
        assert b"413" in await declared_too_large(service.api_url, client._http.headers["authorization"])
        huge = {"topic": "Databases", "loss": 10**400}
        assert "too large a number" in await refused("PUT", "/api/meta/loss", content=json.dumps(huge))
        for odd in ("\u0663", "1_0", "+1", " 1"):  # an Arabic-Indic three, underscores, signs, spaces
            assert "whole number" in await refused("GET", f"/api/search?q=sql&limit={odd}")
        assert "whole number" in await refused("GET", "/api/documents/\u0663")
        assert "at most 1000" in await refused(
            "GET", "/api/search", params={"q": "a* " * 3333, "syntax": "fts5"}
        )
        keywords = {"keywords": [None, {"x": 1}]}
        assert "strings" in await refused(
            "PUT", "/api/topics/Databases/keywords", content=json.dumps(keywords)
        )
        assert "'fetch'" in await refused("POST", "/api/topics/import", json={"path": "/x", "fetch": "no"})
        assert "in full" in await refused("POST", "/api/topics/import", json={"path": ""})
        fifo = tmp_path / "bookmarks.html"
        os.mkfifo(fifo)  # read on the node's loop, it had held the node until someone wrote to it
        assert "not a regular file" in await refused("POST", "/api/topics/import", json={"path": str(fifo)})
        assert "not_found" in (await raw.get("/api/status/")).text  # no empty redirect
        not_allowed = await raw.delete("/api/status")
        assert not_allowed.status_code == 405 and set(not_allowed.headers["allow"].split(", ")) == {
            "GET",
            "HEAD",
        }
        long_topic = "t" * 100_000
        assert len(await refused("POST", "/api/crawl/pause", 404, json={"topic": long_topic})) < 200
    assert (await client.status())["crawl"]["state"] == "running"


@pytest.mark.trio
async def test_a_body_that_trickles_in_is_cut_off_with_a_408(node, monkeypatch):
    service, client = node
    monkeypatch.setattr(node_api, "BODY_SECONDS", 0.3)
    url = httpx.URL(service.api_url)
    stream = await trio.open_tcp_stream(url.host, url.port)
    async with stream:
        head = (
            f"POST /api/crawl/start HTTP/1.1\r\nHost: {url.host}\r\n"
            f"Authorization: {client._http.headers['authorization']}\r\nContent-Length: 10\r\n\r\n{{"
        )
        await stream.send_all(head.encode())  # one byte of ten, and then nothing
        answer = b""
        with trio.fail_after(10):
            while b"took longer than" not in answer and (chunk := await stream.receive_some(4096)):
                answer += chunk
    assert answer.startswith(b"HTTP/1.1 408") and b"took longer than" in answer
    assert (await client.status())["crawl"]["state"] == "running"


@pytest.mark.trio
async def test_idle_connections_beyond_the_cap_wait_and_cannot_take_the_nodes_descriptors(
    tmp_path, monkeypatch
):
    from node import api_server

    monkeypatch.setattr(api_server, "MAX_API_CONNECTIONS", 3)
    data = DataDir(tmp_path / "node")
    service = NodeService(data, quiet_config(), offline=True)
    async with trio.open_nursery() as nursery:
        await nursery.start(service.run)
        url = httpx.URL(service.api_url)
        idle = [await trio.open_tcp_stream(url.host, url.port) for _ in range(3)]
        fourth = await trio.open_tcp_stream(url.host, url.port)  # the kernel's backlog takes it
        token = data.read_or_create_token()
        request = f"GET /api/status HTTP/1.1\r\nHost: {url.host}\r\nAuthorization: Bearer {token}\r\n\r\n"
        await fourth.send_all(request.encode())
        with trio.move_on_after(1.0) as waiting:
            await fourth.receive_some(4096)
        assert waiting.cancelled_caught  # not served while three connections are open
        await idle.pop().aclose()
        with trio.fail_after(10):
            assert (await fourth.receive_some(4096)).startswith(b"HTTP/1.1 200")
        for stream in [*idle, fourth]:
            await stream.aclose()
        service.request_stop()


@pytest.mark.trio
async def test_accepts_failing_for_want_of_descriptors_warn_once_and_the_api_recovers(
    tmp_path, monkeypatch, caplog
):
    import errno
    import logging

    from node import api_server

    failures = iter(range(5))
    accept = trio.SocketListener.accept

    async def short_of_descriptors(listener):
        if next(failures, None) is not None:
            raise OSError(errno.EMFILE, "Too many open files")
        return await accept(listener)

    monkeypatch.setattr(trio.SocketListener, "accept", short_of_descriptors)
    monkeypatch.setattr(api_server, "ACCEPT_PAUSE", 0.01)
    caplog.set_level(logging.WARNING, logger="node.api_server")
    data = DataDir(tmp_path / "node")
    service = NodeService(data, quiet_config(), offline=True)
    async with trio.open_nursery() as nursery:
        await nursery.start(service.run)
        async with AsyncNodeClient.from_data_dir(data) as client:
            with trio.fail_after(10):
                assert (await client.status())["crawl"]["state"]
        service.request_stop()
    said = [r.getMessage() for r in caplog.records if r.name == "node.api_server"]
    assert said == [
        "the control API cannot accept connections for now: [Errno 24] Too many open files",
        "the control API accepts connections again (5 attempts failed)",
    ]


@pytest.mark.trio
async def test_an_offline_nodes_topics_say_why_they_have_no_held_out_accuracy(node):
    _, client = node
    await client.import_topics(bookmarks_html=BOOKMARKS, fetch=False)
    (topic,) = (await client.topics())["topics"]
    assert topic["quality"]["accuracy"] is None and "runs offline" in topic["quality"]["why"]


@pytest.mark.trio
async def test_a_topic_a_new_import_lacks_is_no_longer_named_as_held(node):
    _, client = node
    await client.import_topics(bookmarks_html=BOOKMARKS, fetch=False)
    await client.crawl("pause", topic="Databases")
    assert (await client.status())["crawl"]["held_topics"] == {"Databases": "paused"}
    await client.import_topics(bookmarks_html=BOOKMARKS.replace("Databases", "Elsewhere"), fetch=False)
    assert (await client.status())["crawl"]["held_topics"] == {}


async def declared_too_large(url: str, authorization: str) -> bytes:
    """The status line the node answers a body announced at 2 MB with, before any of it is sent (httpx
    would warn of the body it could not finish sending)."""
    host, port = httpx.URL(url).host, httpx.URL(url).port
    stream = await trio.open_tcp_stream(host, port)
    async with stream:
        request = (
            f"POST /api/crawl/start HTTP/1.1\r\nHost: {host}\r\nAuthorization: {authorization}\r\n"
            "Content-Type: application/json\r\nContent-Length: 2000000\r\n\r\n"
        )
        await stream.send_all(request.encode())
        with trio.fail_after(10):
            return (await stream.receive_some(4096)).split(b"\r\n", 1)[0]


@pytest.mark.trio
async def test_a_damaged_repository_page_is_named_with_the_repair_and_the_node_serves_on(
    node, monkeypatch, tmp_path
):
    service, client = node
    other = filled_repository(tmp_path / "other.db", count=60)
    damage(other, pages_of(other, "documents", "leaf")[0][0])
    with closing(sqlite3.connect(other)) as db, pytest.raises(sqlite3.DatabaseError) as real:
        db.execute("SELECT text FROM documents").fetchall()  # SQLite's own error, with its error code

    async def search(*args, **kwargs):
        raise real.value

    monkeypatch.setattr(service.search, "ranked", search)
    with pytest.raises(NodeError) as caught:
        await client.search("sqlite")
    assert caught.value.status == 500 and caught.value.kind == "repository_damaged"
    assert caught.value.detail.startswith(f"{service.data.repository} is damaged (SQLite said: ")
    assert "topicswarm repair --data" in caught.value.detail
    assert (await client.status())["crawl"]["state"] == "running"


@pytest.mark.trio
async def test_a_full_disk_is_a_507_saying_to_free_space_and_the_node_serves_on(node, monkeypatch):
    service, client = node
    failures = [
        RepositoryFull("the disk holding /d/repository.db is full (database or disk is full)"),
        sqlite3.OperationalError("database or disk is full"),  # a write outside `transaction`
    ]
    for failure in failures:

        async def search(*args, failure=failure, **kwargs):
            raise failure

        monkeypatch.setattr(service.search, "ranked", search)
        with pytest.raises(NodeError) as caught:
            await client.search("sqlite")
        assert caught.value.status == 507 and caught.value.kind == "disk_full"
        assert "free some space" in caught.value.detail
    assert (await client.status())["crawl"]["state"] == "running"

    async def broken(*args, **kwargs):
        raise sqlite3.OperationalError("no such table: documents")

    monkeypatch.setattr(service.search, "ranked", broken)
    with pytest.raises(NodeError) as caught:
        await client.search("sqlite")
    assert caught.value.status == 500 and caught.value.kind == "internal"


@pytest.mark.trio
async def test_cooperation_endpoints_say_what_to_do_offline(node):
    _, client = node
    for call in (client.models(), client.build_meta("T", 0.2), client.refine("T", 3), client.meta("T")):
        with pytest.raises(NodeError) as caught:
            await call
        assert caught.value.status == 503 and "offline" in caught.value.detail


@pytest.mark.trio
async def test_offline_refusals_name_the_work_in_plain_words(node):
    """They named the cooperation layer's methods: "build meta needs peers", "set loss needs peers"."""
    _, client = node
    refusals = {
        "building a meta-classifier": lambda: client.build_meta("T", 0.2),
        "setting a meta-classifier's loss": lambda: client.set_loss("T", 0.3),
        "accepting a subtopic proposal": lambda: client.accept_proposal(1),
        "listing peers' models": client.models,
        "refining a topic into subtopics": lambda: client.refine("T", 3),
        "a meta-classifier": lambda: client.meta("T"),
    }
    for work, call in refusals.items():
        with pytest.raises(NodeError) as caught:
            await call()
        assert caught.value.detail.startswith(f"{work} needs peers: this node runs offline"), (
            caught.value.detail
        )


@pytest.mark.trio
async def test_search_and_metrics_shapes(node):
    _, client = node
    found = await client.search("anything")
    assert found == {"hits": [], "total": 0, "prefix": False, "browsed": False}
    assert (await client.search())["browsed"] is True
    with trio.fail_after(10):
        while not (await client.metrics())["samples"]:
            await trio.sleep(0.1)
    sample = (await client.metrics())["samples"][-1]
    assert {
        "t",
        "pages",
        "pages_per_s",
        "frontier_size",
        "errors",
        "peers_online",
        "bytes_in",
        "bytes_out",
        "harvest",
    } == set(sample)
    later = await client.metrics(since=sample["t"] + 1e6)
    assert later["samples"] == []


@pytest.mark.trio
async def test_search_takes_weights_and_query_syntax_and_names_bad_ones(node):
    _, client = node
    assert (await client.search("any*", weights="text=2", user="ann", syntax="fts5"))["total"] == 0
    with pytest.raises(NodeError, match="bogus") as caught:
        await client.search("anything", weights="bogus=1")
    assert caught.value.kind == "bad_query" and caught.value.status == 400


@pytest.mark.trio
async def test_import_topics_through_api_lists_topics_and_keywords(node):
    _, client = node
    answer = await client.import_topics(bookmarks_html=BOOKMARKS)
    assert answer["imported"] == ["Databases"]
    assert answer["seeds"] == 1
    topics = (await client.topics())["topics"]
    assert [t["key"] for t in topics] == ["Databases"]
    assert {
        "key",
        "name",
        "parent",
        "local",
        "pooled",
        "harvest_rate",
        "fetched",
        "quality",
        "keywords",
        "crawl",
    } <= set(topics[0])
    assert topics[0]["fetched"] == 0  # its one bookmark could not be fetched: no harvest to speak of
    updated = await client.set_keywords("Databases", ["sql", " index "])
    assert updated["keywords"] == ["sql", "index"]
    with pytest.raises(NodeError) as caught:
        await client.import_topics(bookmarks_html="<html>not bookmarks")
    assert caught.value.kind == "bad_topics"
    with pytest.raises(NodeError) as caught:
        await client.set_keywords("Databasse", ["sql"])
    assert caught.value.status == 404 and "`topicswarm topics list`" in caught.value.detail
    assert answer["failed"] == 1 and sum(answer["failed_by_error"].values()) == 1  # the unreachable page


@pytest.mark.trio
async def test_event_stream_delivers_stats_and_log_events_until_the_node_stops(node):
    service, client = node
    seen: list[str] = []
    with trio.fail_after(20):
        with pytest.raises(NodeUnreachable):  # the stream ends when the node goes away
            async for kind, data in client.events():
                seen.append(kind)
                if kind == "stats":
                    assert "frontier_size" in data
                    if "log" not in seen:
                        await client.crawl("pause")
                if "log" in seen and "stats" in seen:
                    service.request_stop()
    assert "stats" in seen and "log" in seen


@pytest.mark.trio
async def test_clients_never_send_the_token_through_the_environments_proxy(node, monkeypatch):
    from node.client import NodeClient
    from tests.proxy_server import serve_as_proxy

    service, _ = node
    proxied: list[str] = []
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve_as_proxy, proxied)
        for name in ("HTTP_PROXY", "ALL_PROXY"):
            monkeypatch.setenv(name, f"http://127.0.0.1:{port}")
        async with AsyncNodeClient.from_data_dir(service.data) as client:
            assert "crawl" in await client.status()

        def status_through_the_sync_client() -> dict:
            with NodeClient.from_data_dir(service.data) as client:
                return client.status()

        assert "crawl" in await trio.to_thread.run_sync(status_through_the_sync_client)
        nursery.cancel_scope.cancel()
    assert proxied == []
