"""The freshness benchmark (simnet.bench.freshness): two crawlers keep a publishing web, one reads feeds;
each published page's wait is the rounds from its publication to the crawler's first 200 for it."""

import json

import pytest

from node.cli.demo import BOOKMARKS as FIXTURE_BOOKMARKS
from simnet.bench.freshness import freshness, main
from simnet.web.layout import RequestRecord

HOST = "127.0.0.10:8080"


def answer(path: str, status: int = 200) -> RequestRecord:
    return RequestRecord(0.0, 0.0, HOST, path, status, None)


def test_a_pages_wait_runs_from_its_publication_to_its_first_answer_of_200():
    published = {
        f"http://{HOST}/a.html": 1,  # a 404 before it was published does not count; fetched in round 3
        f"http://{HOST}/b%20c.html": 2,  # found in the round it appeared, asked for with a query
        f"http://{HOST}/d.html": 3,  # never fetched
        f"http://{HOST}/e/index.html": 3,  # fetched as its folder
    }
    requests = [
        [answer("/index.html"), answer("/a.html", 404)],
        [],
        [answer("/b c.html?x=1")],
        [answer("/a.html"), answer("/a.html"), answer("/e/")],
        [answer("/feed.xml")],
    ]
    figures = freshness(published, requests, rounds=4, settled=1)
    assert figures["published"] == 4 and figures["fetched"] == 3
    assert (figures["median_wait"], figures["mean_wait"], figures["max_wait"]) == (0, 0.67, 2)
    assert figures["published_settled"] == 3 and figures["mean_wait_settled"] == 0.0
    assert figures["asked_before_published"] == 1
    assert figures["first_crawl_requests"] == 2 and figures["requests_per_round"] == round(5 / 4, 1)
    assert figures["feed_requests"] == 1


@pytest.mark.slow
def test_both_crawlers_keep_the_fixture_web_and_only_one_reads_feeds(capsys):
    main(
        [
            "--web",
            "fixture",
            "--sites",
            "python,sqlite",
            "--held",
            "4",
            "--rounds",
            "8",
            "--revisit-rounds",
            "2",
        ]
    )
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    feeds, links = result["feeds"], result["links"]
    assert result["sites"] == 2 and feeds["published"] == links["published"] == 8
    assert feeds["feed_requests"] > 0 and links["feed_requests"] == 0
    for figures in (feeds, links):
        assert 0 < figures["fetched"] <= figures["published"]
        assert 0 <= figures["mean_wait"] <= figures["max_wait"] <= 8
        assert figures["first_crawl_requests"] > 0 and figures["requests_per_round"] > 0
    assert result["ratios"]["feeds"]["requests_per_round"] == round(
        feeds["requests_per_round"] / links["requests_per_round"], 3
    )


@pytest.mark.slow
def test_focused_crawlers_keep_the_pages_of_their_topics_within_their_budget(capsys):
    held, rounds, sites, budget = 3, 4, 5, 2
    main(
        [
            "--web",
            "fixture",
            "--bookmarks",
            str(FIXTURE_BOOKMARKS),
            "--held",
            str(held),
            "--rounds",
            str(rounds),
            "--pages",
            "40",
            "--round-pages",
            str(budget),
            "--revisit-rounds",
            "2",
        ]
    )
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(result) >= {"feeds_judged", "feeds_tunnelled", "links"} and result["sites"] == sites
    for name in ("feeds_judged", "feeds_tunnelled", "links"):
        figures = result[name]
        # one site of five (python) is in no topic's target group: its pages are the others
        assert figures["published"] + figures["other_published"] == held * sites
        assert figures["other_published"] == held
        new = figures["fetched"] + figures["other_fetched"]
        assert new <= figures["stored"] - 40 <= budget * rounds  # the first crawl, then its budget a round
        assert (figures["feed_requests"] > 0) == (name != "links")
    assert set(result["ratios"]) == {"feeds_judged", "feeds_tunnelled"}
