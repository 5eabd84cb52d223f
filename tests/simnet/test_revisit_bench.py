"""The revisit benchmark (simnet.bench.revisit_cost) revisits the same crawl with and without validators."""

import json

from simnet.bench.revisit_cost import main


def test_revisits_with_etags_receive_no_body_and_without_them_every_page(capsys):
    main(["--web", "fixture", "--pages", "40"])
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    crawled, with_v, without_v = result["crawled"], result["with_validators"], result["without_validators"]
    assert crawled["pages"] == 40 and crawled["body_bytes"] > 0
    assert 0 < with_v["revisits"] == without_v["revisits"] <= 40
    assert with_v["not_modified"] == with_v["revisits"] and with_v["body_bytes"] == 0
    assert without_v["not_modified"] == 0 and without_v["body_bytes"] > 0
    assert with_v["changed"] == without_v["changed"] == 0  # the web did not change
    assert with_v["pages"] == without_v["pages"] == 0  # at the page limit: revisits only


def test_sitemaps_read_again_are_unchanged_both_ways_and_with_etags_cost_no_body(capsys):
    main(["--web", "fixture", "--pages", "60", "--sitemaps"])
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    crawled, with_v, without_v = result["crawled"], result["with_validators"], result["without_validators"]
    assert result["sitemaps"] and crawled["sitemaps_read"] > 0
    assert with_v["sitemaps_unchanged"] == without_v["sitemaps_unchanged"] == crawled["sitemaps_read"]
    assert with_v["sitemaps_read"] == without_v["sitemaps_read"] == 0
    assert with_v["body_bytes"] == 0 and without_v["body_bytes"] > 0
