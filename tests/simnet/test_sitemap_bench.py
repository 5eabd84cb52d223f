"""The sitemap benchmark (simnet.bench.sitemap_discovery) crawls one sitemap-serving web with and without
reading sitemaps."""

import json
from pathlib import Path

from simnet.bench.sitemap_discovery import main

BOOKMARKS = Path(__file__).resolve().parents[2] / "simnet" / "webs" / "fixture-bookmarks.html"


def test_only_the_crawl_reading_sitemaps_asks_for_them_and_both_store_the_same_number(capsys):
    main(["--web", "fixture", "--bookmarks", str(BOOKMARKS), "--pages", "60"])
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    without, with_ = result["without_sitemaps"], result["with_sitemaps"]
    assert without["sitemap_requests"] == 0 and with_["sitemap_requests"] > 0
    assert without["stored"] == with_["stored"] == 60
    for figures in (without, with_):
        assert 0 < figures["relevant"] <= figures["stored"] < figures["requests"]
        assert figures["harvest_rate"] == round(figures["relevant"] / figures["stored"], 4)
        assert figures["relevant"] <= result["relevant_in_web"]
        assert figures["recall"] == round(figures["relevant"] / result["relevant_in_web"], 4)
    assert result["ratio"]["requests"] == round(with_["requests"] / without["requests"], 3)
