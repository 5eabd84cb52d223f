"""A topic's indicator keywords (the UI's `k`, `PUT /api/topics/KEY/keywords`) reach the crawl's topic model
at once and after a restart: they used to be stored and listed, and no page was ever classified with them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

from crawler.focus import TopicFocus
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
