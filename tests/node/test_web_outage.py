"""A node whose web goes away (its hosts down, or the computer offline) keeps its queued links, says why it
waits and when it tries again, also when it is stopped and started in between, and crawls on by itself once
the web is back."""

from __future__ import annotations

import pytest
import tomli_w
import trio

from crawler.repository import Repository
from crawler.repository_schema import FAILED, QUEUED
from node.cli.demo import demo_crawler_settings, map_bookmarks
from node.cli.status import crawl_lines
from node.client import AsyncNodeClient
from node.config import parse_config
from node.datadir import DataDir
from node.service import NodeService
from node.stored_state import stopped_status
from simnet.web import serve_web_in_subprocess
from tests.fixture_node import BOOKMARKS

RETRY_DELAY = 3.0
CONFIG = parse_config(
    tomli_w.dumps(
        {
            "crawler": {**demo_crawler_settings(), "host_bad_retry_delay": RETRY_DELAY},
            "node": {"metrics_interval": 0.5},
        }
    )
)


def frontier_counts(repo) -> dict[tuple[int, str | None], int]:
    rows = repo.db.execute("SELECT state, error, count(*) FROM frontier GROUP BY state, error")
    return {(state, error): count for state, error, count in rows}


def own_pages(repo) -> int:
    return repo.db.execute("SELECT count(*) FROM documents WHERE origin IS NULL").fetchone()[0]


async def wait_for_crawl(client: AsyncNodeClient, done) -> dict:
    while not done(crawl := (await client.status())["crawl"]):
        await trio.sleep(0.2)
    return crawl


@pytest.mark.slow
@pytest.mark.trio
async def test_a_node_whose_web_went_away_crawls_on_when_it_is_back(tmp_path):
    data = DataDir(tmp_path / "node")
    with trio.fail_after(120):
        service = NodeService(data, CONFIG, offline=True)
        async with trio.open_nursery() as nursery:
            await nursery.start(service.run)
            async with AsyncNodeClient.from_data_dir(data) as client:
                with serve_web_in_subprocess("fixture") as web:
                    port = web.port
                    bookmarks = map_bookmarks(BOOKMARKS.read_text(), web.map_upstream)
                    await client.import_topics(bookmarks_html=bookmarks)
                    await client.crawl("start")
                    while await service.db(own_pages) < 20:
                        await trio.sleep(0.1)
                blocked = await wait_for_crawl(client, lambda c: not c["active"] and c["reason"] == "blocked")
                counts = await service.db(frontier_counts)
            service.request_stop()
        assert "tried again in" in blocked["detail"]
        assert counts.get((FAILED, "host_bad"), 0) == 0  # nothing dropped: every link waits
        waiting = blocked["hosts_waiting"]
        assert waiting["hosts"] >= 1 and waiting["links"] == counts[(QUEUED, None)] > 0
        assert 0 < waiting["next_try_in_s"] <= RETRY_DELAY
        assert f"{waiting['links']} links wait for a try" in "\n".join(crawl_lines(blocked))
        with Repository(data.repository) as repo:
            stored = own_pages(repo)
            assert stopped_status(data, repo)["crawl"]["hosts_waiting"]["links"] == waiting["links"]

        with serve_web_in_subprocess("fixture", port=port):
            service = NodeService(data, CONFIG, offline=True)
            async with trio.open_nursery() as nursery:
                await nursery.start(service.run)
                async with AsyncNodeClient.from_data_dir(data) as client:
                    await wait_for_crawl(client, lambda c: c["reason"] == "exhausted")
                    counts = await service.db(frontier_counts)
                    assert await service.db(own_pages) > stored
                service.request_stop()
    assert counts.get((QUEUED, None), 0) == 0 and counts.get((FAILED, "host_bad"), 0) == 0
