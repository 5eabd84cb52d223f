from types import SimpleNamespace

import pytest

from crawler.focus import (
    HARVESTING,
    HUB_PRIORITY,
    LEARNING,
    SEED_PRIORITY,
    FocusSettings,
    TopicFocus,
    boost_entries,
    in_subtree,
    inherited_priority,
    strategy_priority,
)
from crawler.frontier import Frontier, FrontierEntry
from crawler.parse import Link, ParsedPage
from crawler.policy import CrawledPage, PageVerdict
from crawler.repository import DocumentRecord, LinkRecord, Repository, StoredPage
from crawler.taxonomy import FETCHED, NEGATIVE, POSITIVE, Taxonomy, TrainingDocument

DB = [
    "SQL query planner uses an index on the table to select rows; the transaction commits rows to the table.",
    "The database index speeds up a SELECT query; a table holds rows and columns; SQL joins two tables.",
    "Transactions in the database: commit and rollback; the optimizer picks an index scan on the table.",
]
OPS = [
    "Configure the Apache web server virtual host; restart the daemon and read the server log files.",
    "The firewall blocks network ports; the system administrator configures the daemon with apt packages.",
    "Install packages with apt, configure the network interface and the DNS server; restart the daemon.",
]
OTHER = [
    "The football team won the match; the players scored goals in the second half of the game.",
    "A recipe for tomato soup: onions, garlic, olive oil, and fresh basil cooked slowly in a pot.",
]
DB_PAGE = (
    "The query planner chooses an index for the SQL table; the transaction commits the rows of the table."
)
OPS_PAGE = "The administrator restarts the Apache daemon after editing the virtual host of the web server."
GERMAN_DB_PAGE = (
    "Der Anfrageplaner wählt einen Index für die SQL Tabelle und die Transaktion schreibt die Zeilen der "
    "Tabelle, wenn sie über den Index gelesen werden: query index table SQL transaction rows commit."
)


def taxonomy():
    docs = [
        TrainingDocument("Databases", POSITIVE, url=f"http://db{i}.test/", text=t, status=FETCHED)
        for i, t in enumerate(DB)
    ]
    docs += [
        TrainingDocument("Sysadmin", POSITIVE, url=f"http://ops{i}.test/", text=t, status=FETCHED)
        for i, t in enumerate(OPS)
    ]
    docs += [
        TrainingDocument("", NEGATIVE, url=f"http://other{i}.test/", text=t, status=FETCHED)
        for i, t in enumerate(OTHER)
    ]
    return Taxonomy(("Databases", "Sysadmin"), tuple(docs))


def focus(**options):
    return TopicFocus(taxonomy(), FocusSettings(**{"learning_pages": 0, **options}))  # harvesting at once


def page(text, topic=None, depth=1, tunnel=0, priority=0.5, url="http://db0.test/page", origin=None):
    entry = FrontierEntry(
        url=url,
        host=url.split("/")[2],
        priority=priority,
        depth=depth,
        topic=topic,
        tunnel=tunnel,
        origin=origin,
    )
    parsed = ParsedPage(url=url, base_url=url, title="", text=text)
    return CrawledPage(entry, url, 200, "text/html", {}, parsed, "f", 0, len(text), 0.0)


def link(url):
    return Link(url, "", "a", 0, 0)


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        ("bfs", 1 / 3),
        ("dfs", 3.0),
        ("classifier", 0.6),
        ("classifier_bfs", 0.2),
        ("classifier_dfs", 1.8),
        ("bookmark", 0.9 / 3),
    ],
)
def test_the_six_strategies(strategy, expected):
    assert strategy_priority(strategy, depth=2, confidence=0.6, bookmark_confidence=0.9) == pytest.approx(
        expected
    )


def test_unknown_strategy_is_refused():
    with pytest.raises(ValueError, match="strategy must be one of"):
        FocusSettings(strategy="random")


def test_pages_are_classified_into_their_topic_and_off_topic_pages_rejected():
    f = focus()
    verdicts = f.score_pages(
        [page(DB_PAGE, "Databases"), page(OPS_PAGE, "Databases", url="http://o.test/"), page(OTHER[0] * 2)]
    )
    assert verdicts[0].topic == "Databases" and verdicts[0].accepted
    assert verdicts[1].topic == "Sysadmin" and verdicts[1].accepted  # soft focus while harvesting
    assert verdicts[2] == PageVerdict(None, verdicts[2].confidence, False)
    assert f.counters["Databases"].fetched == 2 and f.counters["Databases"].accepted == 1


def test_language_check_rejects_a_foreign_page_with_topic_words():
    assert not focus().score_pages([page(GERMAN_DB_PAGE, "Databases")])[0].accepted
    assert focus(language="").score_pages([page(GERMAN_DB_PAGE, "Databases")])[0].accepted


def test_accepted_page_links_get_the_strategy_priority_and_its_topic_queue():
    f = focus(strategy="classifier_bfs")
    p = page(DB_PAGE, "Databases", depth=1)
    verdict = PageVerdict("Databases", 1.2, True)
    assert f.link_priority(p, link("http://db0.test/x"), verdict) == pytest.approx(0.6)
    assert f.link_topic(p, verdict) == "Databases"


def test_a_page_queued_behind_the_rest_after_a_failed_request_passes_on_no_negative_priority():
    demoted = FrontierEntry("http://a.test/p", "a.test:80", priority=-2.0, depth=3)
    assert inherited_priority(demoted, "classifier_bfs") == 0.0
    kept = FrontierEntry("http://a.test/q", "a.test:80", priority=0.4, depth=3)
    assert inherited_priority(kept, "classifier_bfs") == 0.4


def test_tunnelling_decays_the_inherited_priority_and_stops_at_the_depth_limit():
    f = focus(tunnel_depth=2, tunnel_decay=0.5)
    rejected = PageVerdict(None, -0.3, False)
    first = page(OTHER[0], "Databases", depth=2, tunnel=0, priority=0.8)
    assert f.link_priority(first, link("http://db0.test/a"), rejected) == pytest.approx(0.4)
    assert f.link_topic(first, rejected) == "Databases"  # tunnelled in the queue it came from
    second = page(OTHER[0], "Databases", depth=3, tunnel=1, priority=0.4)
    assert f.link_priority(second, link("http://db0.test/b"), rejected) == pytest.approx(0.2)
    third = page(OTHER[0], "Databases", depth=4, tunnel=2, priority=0.2)
    assert f.link_priority(third, link("http://db0.test/c"), rejected) is None
    assert focus(tunnel_depth=0).link_priority(first, link("http://db0.test/a"), rejected) is None


def test_links_given_up_at_the_tunnel_depth_are_counted_until_the_crawl_reaches_them_another_way():
    f = focus(tunnel_depth=1)
    f.crawler = SimpleNamespace(frontier=Frontier())
    rejected = PageVerdict(None, -0.3, False)
    deep = page(OTHER[0], "Databases", depth=3, tunnel=1)
    for url in ("http://db0.test/a", "http://db0.test/b", "http://db0.test/a"):  # a twice: one link
        assert f.link_priority(deep, link(url), rejected) is None
    shallow = page(OTHER[0], "Databases", depth=2, tunnel=0)
    assert f.link_priority(shallow, link("http://db0.test/c"), rejected) is not None  # within the depth
    assert f.beyond_tunnel() == (2, False)
    f.crawler.frontier.add(FrontierEntry(url="http://db0.test/b", host="db0.test", priority=1.0, depth=1))
    assert f.beyond_tunnel() == (1, False)  # queued from an accepted page after all: not left behind


@pytest.mark.parametrize("boost", [HUB_PRIORITY, SEED_PRIORITY], ids=["a hub's link", "a bookmark"])
def test_a_rejected_page_moved_to_the_front_passes_on_an_unjudged_links_priority_not_its_boost(boost):
    f = focus(tunnel_depth=2, tunnel_decay=0.5)  # classifier_bfs: an unjudged link at depth d: 1 / (d + 1)
    rejected = PageVerdict(None, -0.3, False)
    boosted = page(OTHER[0], "Databases", depth=1, tunnel=0, priority=boost)
    tunnelled = f.link_priority(boosted, link("http://db0.test/a"), rejected)
    assert tunnelled == pytest.approx(0.5 * 0.5)  # not 0.5 * boost, ahead of every accepted page's links
    accepted = f.link_priority(boosted, link("http://db0.test/b"), PageVerdict("Databases", 0.6, True))
    assert tunnelled < accepted == pytest.approx(0.3)


def test_learning_phase_is_sharp_and_keeps_to_seed_hosts_until_harvesting():
    f = focus(learning_pages=2, retrain=False)
    assert f.phase == LEARNING
    ops_in_db_queue = f.score_pages([page(OPS_PAGE, "Databases")])[0]
    assert not ops_in_db_queue.accepted  # sharp focus: another topic than the queue's
    db = page(DB_PAGE, "Databases", url="http://db0.test/p")
    verdict = f.score_pages([db])[0]
    assert verdict.accepted
    assert f.link_priority(db, link("http://elsewhere.test/x"), verdict) is None  # parked
    assert f.link_priority(db, link("http://db1.test/y"), verdict) is not None  # a seed host
    frontier = Frontier()
    f.crawler = SimpleNamespace(frontier=frontier)
    f.score_pages([page(OPS_PAGE, "Databases")])  # the third page: the switch
    assert f.phase == HARVESTING
    assert f.score_pages([page(OPS_PAGE, "Databases")])[0].accepted  # soft focus now
    f.link_priority(db, link("http://db0.test/z"), verdict)  # applies pending frontier changes on the loop
    assert frontier.seen("http://elsewhere.test/x") and len(frontier) == 1


def test_a_dry_frontier_ends_the_learning_phase_early_and_queues_the_parked_links():
    f = focus(learning_pages=50, retrain=False)
    db = page(DB_PAGE, "Databases", url="http://db0.test/p")
    verdict = f.score_pages([db])[0]
    assert f.link_priority(db, link("http://elsewhere.test/x"), verdict) is None  # parked
    frontier = Frontier()
    f.crawler = SimpleNamespace(frontier=frontier)
    assert f.frontier_dry() and f.phase == HARVESTING
    assert frontier.seen("http://elsewhere.test/x") and len(frontier) == 1
    assert not f.frontier_dry()  # nothing held back any more: the crawl may end


@pytest.mark.parametrize(("crawled", "phase", "left"), [(150, HARVESTING, 0), (30, LEARNING, 20)])
def test_a_focus_attached_to_a_crawl_that_went_on_learns_only_what_is_left_of_the_phase(
    tmp_path, crawled, phase, left
):
    f = focus(learning_pages=50, retrain=False)
    with Repository(tmp_path / "r.db") as repo:
        f.attach(SimpleNamespace(repo=repo, stats=SimpleNamespace(total_pages=crawled), frontier=Frontier()))
    assert f.phase == phase
    if left:
        f.score_pages([page(DB_PAGE, "Databases")] * left)
        assert f.phase == LEARNING
        f.score_pages([page(DB_PAGE, "Databases")])  # the switch comes with the batch after the phase's last
        assert f.phase == HARVESTING


def test_a_dry_frontier_in_the_learning_phase_with_nothing_parked_changes_nothing():
    f = focus(learning_pages=50, retrain=False)
    f.crawler = SimpleNamespace(frontier=Frontier())
    assert not f.frontier_dry() and f.phase == LEARNING


def test_feed_entries_are_judged_by_their_words_without_counting_as_pages():
    f = focus()
    feed = page("", "Databases", url="http://db0.test/feed.xml")
    verdicts = f.score_entries(feed, [f"Query plans\n{DB_PAGE}", OPS_PAGE, OTHER[1], ""])
    assert [(v.topic, v.accepted) for v in verdicts] == [
        ("Databases", True),
        ("Sysadmin", True),  # soft focus while harvesting
        (None, False),
        (None, False),
    ]
    assert f.counters == {}  # nothing was fetched
    off = focus(judge_feed_entries=False).score_entries(feed, [DB_PAGE])
    assert not off[0].accepted


def test_in_the_learning_phase_a_feed_entry_counts_only_in_the_feeds_queue():
    f = focus(learning_pages=10, retrain=False)
    feed = page("", "Databases", url="http://db0.test/feed.xml")
    db, ops = f.score_entries(feed, [DB_PAGE, OPS_PAGE])
    assert db.accepted and db.topic == "Databases"
    assert not ops.accepted and ops.topic is None


def test_boost_moves_queued_links_to_the_front():
    frontier = Frontier()
    for i, prio in enumerate([0.9, 0.5, 0.1]):
        frontier.add(FrontierEntry(url=f"http://h{i}.test/", host=f"h{i}.test", priority=prio, topic="T"))
    assert boost_entries(frontier, {"http://h2.test/", "http://unknown.test/"}, HUB_PRIORITY) == 1
    first = frontier.pop(lambda host: 0.0, 0.0)
    assert first.url == "http://h2.test/" and first.priority == HUB_PRIORITY
    assert len(frontier) == 2


def store_small_crawl(f, repo):
    f.attach(SimpleNamespace(repo=repo, frontier=Frontier()))
    # a hub on its own host links to three accepted database pages on two hosts, and a queued link
    pages = [
        (
            "http://hub.test/",
            "hub.test",
            None,
            0.0,
            False,
            "links",
            ["http://a.test/1", "http://a.test/2", "http://b.test/1", "http://queued.test/"],
        ),
        ("http://a.test/1", "a.test", "Databases", 2.0, True, DB[0] + " planner", []),
        ("http://a.test/2", "a.test", "Databases", 1.5, True, DB[1] + " optimizer", []),
        ("http://b.test/1", "b.test", "Databases", 0.4, True, DB[2] + " vacuum", ["http://a.test/1"]),
        ("http://db0.test/", "db0.test", "Databases", 1.0, True, DB[0], ["http://a.test/1"]),
        ("http://c.test/1", "c.test", None, -0.2, False, DB_PAGE, ["http://c.test/next"]),  # wrongly rejected
    ]
    store_pages(repo, pages)


def store_pages(repo, pages):
    """Stores (url, host, topic, confidence, accepted, text, links) pages as the crawl would."""
    with repo.transaction():
        for doc_id, (url, host, topic, conf, accepted, text, links) in enumerate(pages, start=1):
            record = DocumentRecord(
                url,
                url,
                host,
                200,
                "text/html",
                "t",
                text,
                f"fp{doc_id}",
                0,
                0.0,
                1,
                topic=topic,
                confidence=conf,
                accepted=accepted,
            )
            repo.insert_page(
                StoredPage(record, tuple(LinkRecord(u, u.split("/")[2]) for u in links), doc_id=doc_id)
            )


def test_reorganisation_adds_archetypes_retrains_and_boosts_hub_links(tmp_path):
    f = focus(n_auth=5, n_conf=5, n_hub=2)
    with Repository(tmp_path / "repo.db") as repo:
        store_small_crawl(f, repo)
        before = f.model
        added = f.reorganise()
        stats = repo.db.execute(
            "SELECT count(*) FROM training_documents WHERE source = 'archetype'"
        ).fetchone()
        reconsidered = repo.db.execute(
            "SELECT accepted, topic FROM documents WHERE url = 'http://c.test/1'"
        ).fetchone()
    assert added["Databases"] >= 1
    assert set(f.archetypes["Databases"]) <= {
        "http://a.test/1",
        "http://a.test/2",
        "http://b.test/1",
        "http://db0.test/",
    }
    assert stats[0] == added["Databases"]
    assert f.model is not before
    assert "http://queued.test/" in f._pending.boost
    requeued = {e.url: e.topic for e in f._pending.requeue}
    assert requeued.get("http://c.test/next") == "Databases"  # reconsidered with the retrained model
    assert reconsidered == (1, "Databases")


def test_progress_shows_harvest_rate_per_topic():
    f = focus()
    f.score_pages([page(DB_PAGE, "Databases"), page(OTHER[1], "Databases")])
    assert f.progress_text() == "harvesting: harvest Databases 0.50 (2)"


def test_in_subtree():
    assert in_subtree("A/B", "A") and in_subtree("A", "A")
    assert not in_subtree("AB", "A") and not in_subtree(None, "A")


@pytest.mark.parametrize(("n_conf", "expected"), [(10, 4), (2, 2)])
def test_sparse_bookmarks_take_their_most_confident_learning_pages_as_archetypes(tmp_path, n_conf, expected):
    f = focus(n_auth=1, n_conf=n_conf, sparse_seeds=3)
    with Repository(tmp_path / "repo.db") as repo:
        store_small_crawl(f, repo)
        added = f.reorganise(learning_done=True)
    assert added["Databases"] == expected
    most_confident_first = ["http://a.test/1", "http://a.test/2", "http://db0.test/", "http://b.test/1"]
    assert list(f.archetypes["Databases"]) == most_confident_first[:expected]


def test_without_the_sparse_rule_archetypes_follow_the_relaxed_rule(tmp_path):
    f = focus(n_auth=1, n_conf=1, sparse_seeds=0)
    with Repository(tmp_path / "repo.db") as repo:
        store_small_crawl(f, repo)
        added = f.reorganise(learning_done=True)
    assert added.get("Databases", 0) <= 2  # at most n_auth + n_conf


def store_pooled_result(repo, url, topic, confidence):
    """A peer's result as cooperation pools it: a preview for text, the peer's verdict and confidence."""
    with repo.transaction() as db:
        db.conn.execute(
            "INSERT INTO documents (url, final_url, host, status, content_type, title, text, fingerprint, "
            "fetched_at, topic, confidence, accepted, origin, origins) "
            "VALUES (?, ?, ?, 200, 'text/html', 't', 'a preview', ?, 0, ?, ?, 1, 'peer', '[\"peer\"]')",
            [url, url, url.split("/")[2], f"fp-{url}", topic, confidence],
        )


@pytest.mark.parametrize("learning_done", [True, False])
def test_a_peers_pooled_results_never_become_archetypes(tmp_path, learning_done):
    f = focus(n_auth=5, n_conf=5, n_hub=2, sparse_seeds=3)
    with Repository(tmp_path / "repo.db") as repo:
        store_small_crawl(f, repo)
        store_pooled_result(repo, "http://a.test/3", "Databases", 9.0)  # linked to by nothing it crawled
        store_pooled_result(repo, "http://b.test/2", "Databases", 9.0)
        f.reorganise(learning_done=learning_done)
        texts = [row[0] for row in repo.db.execute("SELECT text FROM training_documents")]
    assert f.archetypes["Databases"]
    assert not {"http://a.test/3", "http://b.test/2"} & set(f.archetypes["Databases"])
    assert "a preview" not in texts


def test_reconsidered_links_join_the_frontier_only_where_the_crawler_allows():
    f = focus()
    frontier = Frontier()
    f.crawler = SimpleNamespace(frontier=frontier, allows=lambda url: "allowed.test" in url)
    for host in ("allowed.test", "elsewhere.test"):
        f._pending.requeue.append(FrontierEntry(url=f"http://{host}/x", host=host, topic="Databases"))
    f.link_priority(page(DB_PAGE, "Databases"), link("http://db0.test/y"), PageVerdict("Databases", 1, True))
    assert frontier.seen("http://allowed.test/x") and not frontier.seen("http://elsewhere.test/x")


def test_indicator_keywords_keep_a_topic_to_the_pages_holding_one_and_can_be_changed_later():
    f = TopicFocus(taxonomy(), FocusSettings(learning_pages=0), indicators={"Databases": ("postgresql",)})
    db_page = page(DB_PAGE, "Databases")
    assert not f.score_pages([db_page])[0].accepted  # a database page without the keyword
    assert f.score_pages([page(DB_PAGE + " PostgreSQL", "Databases")])[0].accepted
    assert f.score_pages([page(OPS_PAGE, "Sysadmin", url="http://o.test/")])[0].accepted  # no rule there
    f.set_indicators({})
    assert f.score_pages([db_page])[0].accepted
    f.set_indicators({"Databases": ("planner",), "Gone/Topic": ("x",)})  # a topic no longer imported
    assert f.score_pages([db_page])[0].accepted


@pytest.mark.parametrize("balanced", [False, True])
def test_the_crawls_topic_model_weighs_classes_as_the_focus_settings_say(balanced):
    assert focus(balanced_classes=balanced).model.settings.balanced is balanced
