"""Pausing one topic holds its queue back while the node crawls the others; starting it resumes it."""

from __future__ import annotations

import pytest
import trio

from crawler.repository import Repository
from crawler.repository_schema import DONE
from crawler.taxonomy import parse_bookmarks, store_taxonomy
from node.cli.demo import map_bookmarks
from node.cli.topics import fetch_training_pages
from node.client import AsyncNodeClient
from node.config import parse_config
from node.datadir import DataDir
from node.service import NodeService
from simnet.paths import PROJECT_ROOT
from simnet.web import serve_web_in_subprocess

CONFIG = """[crawler]
download_delay = 0.0
autothrottle_enabled = false
concurrent_requests_per_domain = 4
retry_times = 0
download_timeout = 3.0
allowed_hosts = ["127.0.0.0/8"]

[node]
metrics_interval = 1.0
"""
BOOKMARKS = PROJECT_ROOT / "simnet/webs/fixture-bookmarks.html"
PAUSED = "Databases"
TIMEOUT = 90.0  # hang guard only


@pytest.fixture(scope="module")
def fixture_web():
    with serve_web_in_subprocess("fixture") as web:
        yield web


def local_bookmarks(web) -> str:
    return map_bookmarks(BOOKMARKS.read_text(), web.map_upstream)


def done_by_topic(repo) -> dict[str, int]:
    rows = repo.db.execute(f"SELECT topic, count(*) FROM frontier WHERE state = {DONE} GROUP BY topic")
    return {topic: count for topic, count in rows if topic}


async def wait_for(service: NodeService, predicate, what: str) -> dict[str, int]:
    with trio.move_on_after(TIMEOUT):
        while True:
            done = await service.db(done_by_topic)
            if predicate(done):
                return done
            await trio.sleep(0.2)
    raise AssertionError(f"{what} within {TIMEOUT:.0f} s; done per topic: {done}")


@pytest.mark.slow
@pytest.mark.trio
async def test_paused_topic_is_not_fetched_while_others_proceed_and_resumes_after_start(
    tmp_path, fixture_web
):
    data = DataDir(tmp_path / "node")
    service = NodeService(data, parse_config(CONFIG), offline=True)
    async with trio.open_nursery() as nursery:
        await nursery.start(service.run)
        async with AsyncNodeClient.from_data_dir(data) as client:
            await client.crawl("pause")  # nothing is fetched until the topic is paused
            await client.import_topics(bookmarks_html=local_bookmarks(fixture_web))
            await client.crawl("pause", topic=PAUSED)
            await client.crawl("start", topic="Sysadmin")  # starts the node; Mathematics runs too
            done = await wait_for(
                service, lambda d: d.get("Sysadmin", 0) >= 5 and d.get("Mathematics", 0) >= 5, "others crawl"
            )
            assert PAUSED not in done
            assert (await service.db(queued_in, PAUSED)) > 0  # its seeds wait in its queue
            topics = {t["key"]: t["crawl"] for t in (await client.topics())["topics"]}
            assert topics[PAUSED] == "paused" and topics["Sysadmin"] == "running"
            await client.crawl("start", topic=PAUSED)
            await wait_for(service, lambda d: d.get(PAUSED, 0) > 0, "the resumed topic crawls")
        service.request_stop()


def queued_in(repo, topic: str) -> int:
    sql = "SELECT count(*) FROM frontier WHERE state = 0 AND topic = ?"
    return repo.db.execute(sql, [topic]).fetchone()[0]


@pytest.mark.slow
@pytest.mark.trio
async def test_pausing_a_topic_imported_before_the_node_ran_leaves_the_others_crawling(tmp_path, fixture_web):
    """`topics import` with no node running stores the topics without a crawl state of their own; pausing
    one of them once had stopped every topic's crawl."""
    data = DataDir(tmp_path / "node").ensure()
    config = parse_config(CONFIG)
    taxonomy = await fetch_training_pages(parse_bookmarks(local_bookmarks(fixture_web)), config.crawler)
    repo = Repository(data.repository)
    store_taxonomy(repo, taxonomy)
    repo.close()
    service = NodeService(data, config, offline=True)
    async with trio.open_nursery() as nursery:
        await nursery.start(service.run)
        async with AsyncNodeClient.from_data_dir(data) as client:
            await client.crawl("pause", topic=PAUSED)
            before = await service.db(done_by_topic)
            await wait_for(
                service,
                lambda d: (
                    sum(d.values()) - d.get(PAUSED, 0) >= sum(before.values()) - before.get(PAUSED, 0) + 10
                ),
                "the topics not paused crawl on",
            )
            status = await client.status()
            assert status["crawl"]["state"] == "running"
            assert status["crawl"]["held_topics"] == {PAUSED: "paused"}
        service.request_stop()
