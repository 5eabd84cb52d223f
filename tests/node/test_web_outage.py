"""A node whose web goes away (its hosts down, or the computer offline) keeps its queued links, says why it
waits and when it tries again, and crawls on by itself once the web is back."""

from __future__ import annotations

import pytest
import tomli_w
import trio

from crawler.repository import FAILED, QUEUED
from node.cli.demo import demo_crawler_settings, map_bookmarks
from node.client import AsyncNodeClient
from node.config import parse_config
from node.datadir import DataDir
from node.service import NodeService
from simnet.web import serve_web_in_subprocess
from tests.fixture_node import BOOKMARKS

RETRY_DELAY = 2.0
CONFIG = {
    "crawler": {**demo_crawler_settings(), "host_bad_retry_delay": RETRY_DELAY, "concurrent_requests": 2},
    "node": {"metrics_interval": 0.5},
}


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
    service = NodeService(data, parse_config(tomli_w.dumps(CONFIG)), offline=True)
    with trio.fail_after(120):
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
                assert "tried again in" in blocked["detail"]
                counts = await service.db(frontier_counts)
                assert counts.get((FAILED, "host_bad"), 0) == 0
                queued, stored = counts.get((QUEUED, None), 0), await service.db(own_pages)
                assert queued > 0
                with serve_web_in_subprocess("fixture", port=port):
                    await wait_for_crawl(client, lambda c: c["reason"] == "exhausted")
                    assert await service.db(own_pages) > stored
                    counts = await service.db(frontier_counts)
                    assert counts.get((QUEUED, None), 0) == 0 and counts.get((FAILED, "host_bad"), 0) == 0
            service.request_stop()
