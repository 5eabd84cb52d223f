"""A running node computes the link authority (HITS) and PageRank its search weighs, as its pages grow:
without them two of the ranking's four signals were 0 on every node. (The fixture web's sites link within
their own hosts, which HITS (Bharat-Henzinger) does not count, so its authorities stay 0 here; the crawl
test from a hub page sees them.)"""

from __future__ import annotations

import pytest
import trio

import node.service
from crawler.repository import Repository
from node.cli.demo import map_bookmarks
from node.client import AsyncNodeClient
from node.config import replace_settings
from node.datadir import DataDir
from node.service import NodeService
from simnet.web import serve_web
from tests.node.test_cli_status import BOOKMARKS, HANG_GUARD, loopback_config, store_bookmarks

PAGES = 30


@pytest.mark.trio
async def test_search_through_a_running_node_weighs_link_authority_and_pagerank(tmp_path, monkeypatch):
    monkeypatch.setattr(node.service, "LINK_SCORES_CHECK_S", 0.2)
    data = DataDir(tmp_path / "node").ensure()
    config = replace_settings(loopback_config(), node={"link_scores_pages": 10})
    async with serve_web("fixture") as web:
        store_bookmarks(data, map_bookmarks(BOOKMARKS.read_text(), web.map_upstream))
        service = NodeService(data, config, offline=True, max_pages=PAGES)
        async with trio.open_nursery() as nursery:
            await nursery.start(service.run)
            async with AsyncNodeClient.from_data_dir(data) as client:
                with trio.fail_after(HANG_GUARD):
                    while True:
                        hits = (await client.search("server", verdict="any", limit=20))["hits"]
                        if any(hit["signals"]["pagerank"] > 0 for hit in hits):
                            break
                        await trio.sleep(0.2)
                    status = await client.status()
            service.request_stop()
    assert status["documents"]["local"] >= 10  # scored after its pages grew, not only at start
    with Repository(data.repository) as repo:  # the whole graph's scores and each topic's
        scopes = {row[0] for row in repo.db.execute("SELECT DISTINCT topic FROM link_scores")}
    assert scopes == {"", "Databases", "Mathematics", "Sysadmin"}
