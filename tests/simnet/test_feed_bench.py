"""The feed benchmark (simnet.bench.feed_discovery) crawls one feed-serving web without feeds, with their
entries tunnelled and with them judged by their words."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from simnet.bench.feed_discovery import found_via_feeds, main
from tests.crawler.test_feeds import blog
from tests.mock_web import Web, crawl, crawler_for

BOOKMARKS = Path(__file__).resolve().parents[2] / "simnet" / "webs" / "fixture-bookmarks.html"


def test_only_the_crawls_reading_feeds_ask_for_them_and_each_stores_the_budget(capsys):
    main(["--web", "fixture", "--bookmarks", str(BOOKMARKS), "--pages", "60"])
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    without = result["without_feeds"]
    assert without["feed_requests"] == 0 and without["via_feeds"] == 0
    for name in ("feeds_tunnelled", "feeds_judged"):
        assert result[name]["feed_requests"] > 0
        assert result["ratio"][name]["requests"] == round(result[name]["requests"] / without["requests"], 3)
    for name in ("without_feeds", "feeds_tunnelled", "feeds_judged"):
        figures = result[name]
        assert figures["stored"] == 60 and 0 < figures["relevant"] <= figures["stored"] < figures["requests"]
        assert figures["via_feeds_relevant"] <= figures["via_feeds"] <= figures["stored"]
        assert figures["recall"] == round(figures["relevant"] / result["relevant_in_web"], 4)


@pytest.mark.trio
async def test_pages_found_through_a_feed_are_those_only_its_entries_linked_first(tmp_path):
    crawler = crawler_for(Web(blog()), tmp_path)
    await crawl(crawler, "http://blog.test/")  # the feed lists new.html and x.html; new.html links old.html
    web = SimpleNamespace(label_of=lambda url: "posts" if url.endswith("new.html") else "other")
    assert found_via_feeds(crawler.repo, web, {"Blog": "posts"}) == (2, 1)
