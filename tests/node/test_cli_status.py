"""What `topicswarm status` and `crawl start|pause|stop` tell a user about a node's crawl: a node started
after `topics import` crawls the imported bookmarks, a crawl that reached its page limit says it finished and
why (not "running 0.0 pages/s"), and a topic's answer is the state that was asked for."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from contextlib import nullcontext

import pytest
import trio

import node.cli.status as cli_status
from crawler.repository import Repository
from crawler.taxonomy import parse_bookmarks, store_taxonomy
from node.cli.demo import map_bookmarks
from node.cli.status import crawl_lines
from node.client import AsyncNodeClient
from node.config import Config, replace_settings
from node.cooperation import store
from node.datadir import DataDir
from node.service import NodeService
from node.wording import crawl_answer_text
from p2p.messages.results import CrawlResult
from simnet.paths import PROJECT_ROOT
from simnet.web import serve_web

BOOKMARKS = PROJECT_ROOT / "simnet/webs/fixture-bookmarks.html"
MAX_PAGES = 8
HANG_GUARD = 120.0


def loopback_config() -> Config:
    return replace_settings(
        Config(),
        node={"metrics_interval": 0.5, "stats_event_interval": 0.2},
        crawler={
            "download_delay": 0.0,
            "autothrottle_enabled": False,
            "retry_times": 0,
            "download_timeout": 3.0,
            "allowed_hosts": ("127.0.0.0/8",),
        },
        focus={"learning_pages": 0},
    )


def store_bookmarks(data: DataDir, html: str) -> None:
    """The topics of a bookmarks file stored as `topics import --no-fetch` does, before any node runs."""
    repo = Repository(data.repository)
    try:
        store_taxonomy(repo, parse_bookmarks(html, name="bookmarks.html"))
    finally:
        repo.close()


async def wait_for(client: AsyncNodeClient, done, what: str) -> dict:
    with trio.fail_after(HANG_GUARD):
        while True:
            status = await client.status()
            if done(status["crawl"]):
                return status
            await trio.sleep(0.2)
    raise AssertionError(what)  # pragma: no cover


@pytest.mark.trio
async def test_topics_imported_before_the_node_starts_are_crawled_and_the_limit_reads_finished(tmp_path):
    data = DataDir(tmp_path / "node").ensure()
    async with serve_web("fixture") as web:
        store_bookmarks(data, map_bookmarks(BOOKMARKS.read_text(), web.map_upstream))
        service = NodeService(data, loopback_config(), offline=True, max_pages=MAX_PAGES)
        async with trio.open_nursery() as nursery:
            await nursery.start(service.run)
            async with AsyncNodeClient.from_data_dir(data) as client:
                status = await wait_for(client, lambda c: c.get("activity") == "finished", "finished")
                answer = await client.crawl("start")
            service.request_stop()
    crawl = status["crawl"]
    assert status["documents"]["local"] >= MAX_PAGES
    assert crawl["state"] == "running" and crawl["reason"] == "max_pages" and not crawl["active"]
    assert "max_pages" in crawl["detail"] and f"of {MAX_PAGES}" in crawl["detail"]
    assert crawl["pages_per_s"] == 0.0
    assert crawl["feeds"] == {"read": 0, "urls_queued": 0, "unchanged": 0}  # the fixture web names none
    assert crawl["session"]["pages"] >= MAX_PAGES and crawl["session"]["pages_per_s"] > 0
    text = "\n".join(crawl_lines(crawl))
    assert text.startswith("crawl      finished: reached max_pages") and "pages/s)" in text
    assert not re.search(r"(?<![\d.])0\.0 pages/s", text)  # a rate, not a zero (170.0 pages/s is one)
    assert "will not fetch: reached max_pages" in crawl_answer_text(answer, None)
    week = 7 * 86400
    assert week - 600 < crawl["revisits"]["next_in_s"] <= week  # pages just crawled, revisit_after a week
    assert "next stored page, sitemap or feed due again in 7 d" in text


@pytest.mark.parametrize(
    ("seconds", "said"), [(90, "90 s"), (150, "2 min"), (5400, "90 min"), (7200, "2 h"), (1_209_600, "14 d")]
)
def test_the_wait_for_the_next_revisit_reads_in_its_largest_readable_unit(seconds, said):
    idle = {"state": "running", "activity": "finished", "pages": 1, "frontier_size": 0, "active": False}
    text = "\n".join(crawl_lines({**idle, "revisits": {"fetched": 0, "next_in_s": seconds}}))
    assert text.endswith(f"next stored page, sitemap or feed due again in {said}")


def test_status_counts_sitemaps_and_feeds_once_one_was_read():
    idle = {"state": "running", "activity": "finished", "pages": 9, "frontier_size": 0, "active": False}
    assert "sitemaps" not in "\n".join(crawl_lines({**idle, "sitemaps": {"read": 0, "urls_queued": 0}}))
    text = "\n".join(crawl_lines({**idle, "sitemaps": {"read": 3, "urls_queued": 120}}))
    assert "3 sitemaps read, 120 pages they list queued" in text and "unchanged" not in text
    text = "\n".join(crawl_lines({**idle, "sitemaps": {"read": 3, "urls_queued": 120, "unchanged": 2}}))
    assert "3 sitemaps read, 120 pages they list queued; 2 found unchanged when due again" in text
    assert "feeds" not in text
    text = "\n".join(crawl_lines({**idle, "feeds": {"read": 2, "urls_queued": 9, "unchanged": 1}}))
    assert "2 feeds read, 9 pages they list queued; 1 found unchanged when due again" in text


@pytest.mark.slow
@pytest.mark.trio
async def test_peers_pooled_results_do_not_use_up_the_page_limit_after_a_restart(tmp_path):
    data = DataDir(tmp_path / "node").ensure()
    async with serve_web("fixture") as web:
        store_bookmarks(data, map_bookmarks(BOOKMARKS.read_text(), web.map_upstream))
        for limit, pooled in ((MAX_PAGES, 0), (MAX_PAGES + 4, 6)):
            if pooled:  # results a peer shared while the node ran
                repo = Repository(data.repository)
                try:
                    store.ensure_schema(repo)
                    store.pool_results(repo, "12D3KooWPeer", "Databases", pooled_results(pooled), pooled)
                finally:
                    repo.close()
            service = NodeService(data, loopback_config(), offline=True, max_pages=limit)
            async with trio.open_nursery() as nursery:
                await nursery.start(service.run)
                async with AsyncNodeClient.from_data_dir(data) as client:
                    status = await wait_for(client, lambda c: c.get("activity") == "finished", "finished")
                service.request_stop()
    assert status["documents"] == {"local": MAX_PAGES + 4, "pooled": 6}
    assert status["crawl"]["pages"] == MAX_PAGES + 4
    assert f"({MAX_PAGES + 4} of {MAX_PAGES + 4} documents)" in status["crawl"]["detail"]


def pooled_results(count: int) -> list[CrawlResult]:
    return [
        CrawlResult(
            url=f"http://127.0.0.99/pooled{i}.html",
            title=f"pooled {i}",
            preview="a peer's page",
            topic="Databases",
            confidence=1.0,
            fingerprint=f"{i:016x}",
            origin="12D3KooWPeer",
            fetched_at=0.0,
        )
        for i in range(count)
    ]


@pytest.mark.trio
async def test_an_empty_node_says_what_to_do_and_a_topic_answer_is_its_own_state(tmp_path):
    data = DataDir(tmp_path / "node").ensure()
    store_bookmarks(data, BOOKMARKS.read_text())
    # the bookmarks point off loopback: the node must not fetch or queue them, so nothing is queued
    service = NodeService(data, loopback_config(), offline=True)
    service.topics.resume_stored = _nothing  # type: ignore[method-assign]
    async with trio.open_nursery() as nursery:
        await nursery.start(service.run)
        async with AsyncNodeClient.from_data_dir(data) as client:
            idle = (await client.status())["crawl"]
            await client.crawl("pause")
            answer = await client.crawl("stop", topic="Databases")
            paused = (await client.status())["crawl"]
        service.request_stop()
    assert idle["activity"] == "idle" and idle["reason"] == "no_seeds"
    assert "topicswarm topics import" in idle["detail"]
    assert "nothing crawled since the node started" in "\n".join(crawl_lines(idle))
    assert answer["state"] == "stopped" and answer["crawl"]["state"] == "paused"
    assert crawl_answer_text(answer, "Databases") == (
        "crawl stopped for Databases; the whole crawl is paused: `topicswarm crawl start` resumes it"
    )
    assert paused["activity"] == "paused" and paused["detail"].startswith("by the user")


async def _nothing() -> None:
    return None


def test_output_cut_short_by_a_pipe_ends_quietly():
    """`topicswarm ... | head`: the reader is gone before the command writes (no traceback)."""
    command = [sys.executable, "-m", "node.cli", "config", "defaults"]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=PROJECT_ROOT)
    child.stdout.close()  # before the interpreter has even imported the CLI
    try:
        stderr = child.stderr.read().decode()
        child.wait(timeout=60)
    finally:
        child.stderr.close()
    assert "Traceback" not in stderr, stderr
    assert child.returncode == 141


def test_status_text_explains_its_figures(monkeypatch, capsys):
    status = {
        "peer_id": None,
        "api": "http://127.0.0.1:5",
        "uptime_s": 30.0,
        "crawl": {
            "state": "running",
            "activity": "crawling",
            "active": True,
            "pages": 40,
            "pages_per_s": 3.25,
            "frontier_size": 300,
            "in_flight": 4,
            "errors_by_kind": {"http_4xx": 2},
            "session": {"pages": 40, "crawl_seconds": 16.0, "pages_per_s": 2.5},
        },
        "documents": {"local": 40, "pooled": 0},
        "peers_online": 0,
        "bytes_exchanged": {"in": 0, "out": 0},
        "harvest": {"Databases": 0.5},
    }

    class Client:
        def status(self):
            return status

    monkeypatch.setattr(cli_status, "connect", lambda args: nullcontext(Client()))
    assert cli_status.run_status(argparse.Namespace(json=False, data=None)) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == "crawl      crawling  3.2 pages/s (last seconds)  frontier 300, 4 in flight"
    assert lines[3] == "           since the node started 40 pages in 16 s of crawling (2.5 pages/s)"
    assert lines[-2].startswith("harvest    share of the pages fetched for each topic")
    assert lines[-1].split() == ["Databases", "0.50"]


def test_a_crawl_faster_than_a_tenth_of_a_second_still_reads_as_crawled():
    crawl = {
        "activity": "finished",
        "detail": "reached max_pages (8 of 8 documents)",
        "pages": 8,
        "frontier_size": 230,
        "session": {"pages": 8, "crawl_seconds": 0.0, "pages_per_s": 250.0},
    }
    text = "\n".join(crawl_lines(crawl))
    assert "since the node started 8 pages in under 0.1 s of crawling (250.0 pages/s)" in text
    assert "nothing crawled" not in text


def test_topics_held_while_the_crawl_runs_are_named_with_how_to_resume_them():
    crawl = {"state": "running", "active": True, "pages_per_s": 1.0, "frontier_size": 9, "session": {}}
    held = {**crawl, "held_topics": {"Databases": "paused", "Sysadmin": "stopped"}}
    text = "\n".join(crawl_lines(held))
    start = "start one with `topicswarm crawl start --topic KEY`"
    assert f"not crawled: Databases (paused), Sysadmin (stopped); {start}" in text
    assert "not crawled" not in "\n".join(crawl_lines(crawl))
    assert "not crawled" not in "\n".join(crawl_lines({**held, "state": "paused"}))  # the whole crawl is


def test_a_networked_node_shows_the_addresses_to_join_it_and_when_alone_how_to_get_peers():
    from node.cli.status import peer_lines

    addrs = ["/ip4/192.0.2.7/tcp/4001/p2p/12D3KooWX", "/ip4/10.0.0.7/tcp/4001/p2p/12D3KooWX"]
    alone = {
        "peer_id": "12D3KooWX",
        "addrs": addrs,
        "peers_online": 0,
        "bytes_exchanged": {"in": 0, "out": 0},
    }
    lines = peer_lines(alone)
    assert lines[0] == "peers      0 online; exchanged 0 B in, 0 B out"
    assert "--bootstrap MULTIADDR" in lines[1]
    assert lines[2:] == [f"addrs      {addrs[0]}", f"           {addrs[1]}"]

    joined = dict(alone, peers_online=2, bytes_exchanged={"in": 10, "out": 20})
    assert peer_lines(joined) == [
        "peers      2 online; exchanged 10 B in, 20 B out",
        f"addrs      {addrs[0]}",
        f"           {addrs[1]}",
    ]
    strangers = dict(joined, peers_sharing_topics=0)
    assert "none shares a topic with this node: `topicswarm peers` lists" in peer_lines(strangers)[1]
    assert peer_lines(dict(joined, peers_sharing_topics=1)) == peer_lines(joined)
    offline = dict(alone, peer_id=None, addrs=[])
    assert peer_lines(offline) == ["peers      0 online; exchanged 0 B in, 0 B out"]
