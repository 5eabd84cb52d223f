"""A topic's indicator keywords (the UI's `k`, `PUT /api/topics/KEY/keywords`) reach the crawl's topic model
at once and after a restart: they used to be stored and listed, and no page was ever classified with them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

from crawler.focus import TopicFocus
from node.cli import main
from node.cli.demo import map_bookmarks
from node.client import AsyncNodeClient
from node.datadir import DataDir
from node.service import NodeService
from simnet.web import serve_web
from tests.node.test_cli_status import BOOKMARKS, HANG_GUARD, loopback_config, store_bookmarks


@asynccontextmanager
async def running_node(data: DataDir) -> AsyncIterator[NodeService]:
    """An offline node that crawls nothing, once it has fetched the bookmarks and trained on them."""
    service = NodeService(data, loopback_config(), offline=True, max_pages=0)
    async with trio.open_nursery() as nursery:
        await nursery.start(service.run)
        with trio.fail_after(HANG_GUARD):
            while not isinstance(getattr(service.crawler, "policy", None), TopicFocus):
                await trio.sleep(0.1)
        yield service
        service.request_stop()


@pytest.mark.trio
async def test_keywords_set_through_the_api_retrain_the_crawls_model_and_survive_a_restart(tmp_path):
    data = DataDir(tmp_path / "node").ensure()
    async with serve_web("fixture") as web:
        store_bookmarks(data, map_bookmarks(BOOKMARKS.read_text(), web.map_upstream))
        async with running_node(data) as service:
            policy = service.crawler.policy
            assert policy.model.indicators == {}
            async with AsyncNodeClient.from_data_dir(data) as client:
                listed = await client.set_keywords("Databases", ["vacuum", " write ahead "])
            assert listed["keywords"] == ["vacuum", "write ahead"]
            assert service.crawler.policy is policy  # trained again in place: its archetypes stay
            assert policy.model.indicators == {"Databases": ("vacuum", "write ahead")}
        async with running_node(data) as restarted:
            assert restarted.crawler.policy.model.indicators == {"Databases": ("vacuum", "write ahead")}


ODD_NAMES = """<!DOCTYPE NETSCAPE-Bookmark-file-1>
<DL><p>
    <DT><H3>C/C++ &amp; more? #1 50%</H3>
    <DL><p><DT><A HREF="http://127.0.0.1:9/c.html">C</A></DL><p>
    <DT><H3>Databases</H3>
    <DL><p><DT><A HREF="http://127.0.0.1:9/db.html">DB</A></DL><p>
</DL><p>
"""


@pytest.mark.trio
async def test_a_topic_whose_name_holds_a_slash_a_question_mark_or_a_hash_takes_keywords(tmp_path):
    data = DataDir(tmp_path / "node").ensure()
    store_bookmarks(data, ODD_NAMES)
    service = NodeService(data, loopback_config(), offline=True, max_pages=0)
    async with trio.open_nursery() as nursery:
        await nursery.start(service.run)
        async with AsyncNodeClient.from_data_dir(data) as client:
            key = next(t["key"] for t in (await client.topics())["topics"] if t["key"] != "Databases")
            assert key == "C%2FC++ & more? #1 50%25"  # "/" and "%" in a name are escaped in its key
            listed = await client.set_keywords(key, ["pointer"])
        service.request_stop()
    assert listed["key"] == key and listed["keywords"] == ["pointer"]


def keywords_cli(capsys, data: DataDir, *args: str) -> tuple[int, str]:
    code = main(["topics", "keywords", "--data", str(data.root), *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_the_cli_shows_sets_and_clears_keywords_without_a_node(tmp_path, capsys):
    data = DataDir(tmp_path / "node").ensure()
    store_bookmarks(data, ODD_NAMES)
    assert keywords_cli(capsys, data, "Databases") == (
        0,
        "Databases: no indicator keywords (set some with `topicswarm topics keywords KEY WORD...`)\n",
    )
    assert keywords_cli(capsys, data, "Databases", "vacuum", " write   ahead ") == (
        0,
        "Databases: vacuum, write ahead (a page of the topic must hold one of them)\n",
    )
    assert keywords_cli(capsys, data, "Databases", "--json") == (
        0,
        '{"key": "Databases", "keywords": ["vacuum", "write ahead"]}\n',
    )
    cleared = keywords_cli(capsys, data, "Databases", "--clear")
    assert cleared[1].startswith("Databases: no indicator keywords")
    code, said = keywords_cli(capsys, data, "Databasse", "x")
    meant = "no topic 'Databasse' (did you mean 'Databases'?): list topics with `topicswarm topics list`"
    assert code == 2 and meant in said
    code, said = keywords_cli(capsys, data, "Databases", *["w"] * 101)
    assert code == 2 and "at most 100 keywords a topic" in said


@pytest.mark.trio
async def test_keywords_set_with_the_cli_while_the_node_runs_reach_its_crawl(tmp_path, capsys):
    data = DataDir(tmp_path / "node").ensure()
    async with serve_web("fixture") as web:
        store_bookmarks(data, map_bookmarks(BOOKMARKS.read_text(), web.map_upstream))
        async with running_node(data) as service:
            argv = ["topics", "keywords", "--data", str(data.root), "Sysadmin", "apache"]
            assert await trio.to_thread.run_sync(main, argv) == 0
            assert service.crawler.policy.model.indicators == {"Sysadmin": ("apache",)}
    assert capsys.readouterr().out == "Sysadmin: apache (a page of the topic must hold one of them)\n"
