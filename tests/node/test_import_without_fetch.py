"""`topics import --no-fetch` into a running node answers before the bookmarked pages are fetched; the
node fetches them in the background and then focuses its crawl on the topics (it used to wait for a
restart, and crawled unfocused until then)."""

from __future__ import annotations

import pytest
import trio

from crawler.focus import TopicFocus
from node.cli.demo import map_bookmarks
from node.client import AsyncNodeClient
from node.datadir import DataDir
from node.service import NodeService
from simnet.web import serve_web
from tests.node.test_cli_status import BOOKMARKS, HANG_GUARD, loopback_config


@pytest.mark.trio
async def test_bookmarks_imported_without_fetching_are_fetched_and_then_focus_the_crawl(tmp_path):
    data = DataDir(tmp_path / "node").ensure()
    async with serve_web("fixture") as web:
        service = NodeService(data, loopback_config(), offline=True, max_pages=0)
        async with trio.open_nursery() as nursery:
            await nursery.start(service.run)
            async with AsyncNodeClient.from_data_dir(data) as client:
                html = map_bookmarks(BOOKMARKS.read_text(), web.map_upstream)
                answer = await client.import_topics(bookmarks_html=html, fetch=False)
                with trio.fail_after(HANG_GUARD):
                    while not isinstance(getattr(service.crawler, "policy", None), TopicFocus):
                        await trio.sleep(0.1)
            service.request_stop()
    assert answer["failed"] == 0 and set(answer["imported"]) == {"Databases", "Mathematics", "Sysadmin"}
