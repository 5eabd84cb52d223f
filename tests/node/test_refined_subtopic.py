"""A node that accepts a refinement's proposal crawls and filters for the new subtopic: the crawl's topic
model files pages in it, and its meta-classifier is built from the node's own model, no peer having it."""

from __future__ import annotations

import pytest

from node.cli.demo import demo_crawler_settings
from tests.fixture_node import crawled_fixture_node

PAGES = 60
CONFIG = {"crawler": demo_crawler_settings(), "node": {"max_pages": PAGES}}
KEY = "Databases/Transactions"

# py-libp2p 0.8.1 leaves the sockets of connections closed at host shutdown to the garbage collector.
pytestmark = pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)


@pytest.mark.trio
async def test_an_accepted_subtopic_is_crawled_for_and_its_meta_classifier_builds(tmp_path):
    """The dead end this replaces: the subtopic had no training document, the crawl's model never learned
    it, and `meta build` for it answered "has no model yet: import training documents for it first"."""
    async with crawled_fixture_node(tmp_path, CONFIG, offline=False) as (service, client):
        proposals = (await client.refine("Databases", 2))["proposals"]
        proposal = max(proposals, key=lambda p: p["size"])
        accepted = await client.accept_proposal(proposal["id"], "Transactions")
        assert accepted["subtopic"] == KEY and accepted["training_documents"] >= 2
        assert KEY in service.crawler.policy.model.topics  # the crawl's focus, retrained at once
        built = await client.build_meta(KEY, 0.2)
        assert built["peers_used"] == 0
        meta = await client.meta(KEY)
    assert [m["origin"] for m in meta["models"]] == ["local"]
