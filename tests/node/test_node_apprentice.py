"""`crawler.apprentice_enabled` turns the apprentice on in a running node too (it only did in
`topicswarm crawl`): its link priorities are learned during the node's crawl and stored for a restart."""

from __future__ import annotations

import pytest
import trio

from crawler.apprentice_focus import ApprenticeFocus
from crawler.repository import Repository
from node.cli.demo import map_bookmarks
from node.client import AsyncNodeClient
from node.config import replace_settings
from node.datadir import DataDir
from node.service import NodeService
from simnet.web import serve_web
from tests.node.test_cli_status import BOOKMARKS, loopback_config, store_bookmarks, wait_for


@pytest.mark.trio
@pytest.mark.parametrize("enabled", [True, False])
async def test_the_apprentice_setting_decides_whether_a_nodes_crawl_learns_link_priorities(tmp_path, enabled):
    data = DataDir(tmp_path / "node").ensure()
    config = replace_settings(loopback_config(), crawler={"apprentice_enabled": enabled})
    async with serve_web("fixture") as web:
        store_bookmarks(data, map_bookmarks(BOOKMARKS.read_text(), web.map_upstream))
        service = NodeService(data, config, offline=True, max_pages=40)
        async with trio.open_nursery() as nursery:
            await nursery.start(service.run)
            async with AsyncNodeClient.from_data_dir(data) as client:
                await wait_for(client, lambda crawl: crawl["activity"] == "finished", "finished")
            policy = service.crawler.policy
            service.request_stop()
    assert isinstance(policy, ApprenticeFocus) is enabled
    with Repository(data.repository) as repo:
        stored = repo.db["apprentice_models"].exists() and repo.db["apprentice_models"].count > 0
    assert stored is enabled
