"""A focused crawl that runs out of links before `max_pages` says why: the links it gave up behind pages
its classifier rejected (past `focus.tunnel_depth`), and the setting that would follow them."""

from __future__ import annotations

import pytest

from node.cli.demo import demo_crawler_settings
from tests.fixture_node import crawled_fixture_node

MAX_PAGES = 5000  # more than the fixture web holds: the crawl ends by running out of links
CONFIG = {
    "crawler": demo_crawler_settings(),
    "focus": {"tunnel_depth": 0, "learning_pages": 20},
    "node": {"metrics_interval": 1.0, "max_pages": MAX_PAGES},
}


@pytest.mark.slow
@pytest.mark.trio
async def test_a_crawl_that_runs_dry_names_the_links_left_past_the_tunnel_depth(tmp_path):
    async with crawled_fixture_node(tmp_path, CONFIG, reason="exhausted") as (_service, client):
        crawl = (await client.status())["crawl"]
    beyond = crawl["beyond_tunnel"]
    assert crawl["pages"] < MAX_PAGES and beyond["tunnel_depth"] == 0 and beyond["links"] > 0
    assert f"{beyond['links']} more links lie beyond pages the classifier rejected" in crawl["detail"]
    assert "[focus] tunnel_depth" in crawl["detail"]
