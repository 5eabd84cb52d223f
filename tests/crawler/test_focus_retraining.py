"""The focus's re-organisation retrains only the topics whose training documents changed (the topic with new
archetypes, its ancestors and their siblings), and the model it gets is the one a full training gives."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import metamodels.topic_model as topic_model
from crawler.focus import FocusSettings, TopicFocus
from crawler.frontier import Frontier
from crawler.repository import Repository
from crawler.taxonomy import FETCHED, NEGATIVE, POSITIVE, Taxonomy, TrainingDocument
from metamodels.topic_model import train_topic_model_from_texts
from tests.crawler.test_focus import store_pages

BOOKMARKS = {
    "Databases/Queries": [
        "SQL query planner uses an index on the table to select rows; a join reads two tables.",
        "The database index speeds up a SELECT query; the planner estimates rows of a join.",
        "An SQL join of two tables; the optimizer picks an index scan for the SELECT query.",
    ],
    "Databases/Storage": [
        "The storage engine writes pages to disk; the write-ahead log makes each transaction durable.",
        "Vacuum reclaims disk pages; the buffer cache keeps hot pages and the log records each write.",
        "A checkpoint flushes dirty pages to disk; the transaction log is replayed after a crash.",
    ],
    "Sysadmin/Web": [
        "Configure the Apache web server virtual host; restart the daemon and read the access log.",
        "The web server serves static files; a virtual host maps the domain to a document root.",
        "Apache modules rewrite URLs; the web server daemon reloads its virtual host configuration.",
    ],
    "Sysadmin/Network": [
        "The firewall blocks network ports; configure the interface address and the default route.",
        "DNS resolves host names; the network interface gets its address from the DHCP server.",
        "A router forwards packets between networks; the firewall filters ports on the interface.",
    ],
}
OTHERS = [
    "The football team won the match; the players scored goals in the second half of the game.",
    "A recipe for tomato soup: onions, garlic, olive oil, and fresh basil cooked slowly in a pot.",
]
CRAWLED = [  # pages the crawl accepted in Databases/Queries: archetype candidates
    "The query planner chooses an index for the SQL table and a join order for the SELECT query.",
    "A SELECT query with a join: the planner reads the index of each table and estimates rows.",
    "SQL window functions and a join in one SELECT query; the index on the table serves the planner.",
]
# SVMs whose training documents change when Databases/Queries gains archetypes: it and Databases (their
# positives), Databases/Storage (its sibling's), Sysadmin (its sibling Databases'); the Sysadmin children
# compete only with each other
RETRAINED = {"Databases", "Databases/Queries", "Databases/Storage", "Sysadmin"}


def nested_taxonomy() -> Taxonomy:
    docs = [
        TrainingDocument(
            topic,
            POSITIVE,
            url=f"http://{topic.replace('/', '-').lower()}{i}.test/",
            text=text,
            status=FETCHED,
        )
        for topic, texts in BOOKMARKS.items()
        for i, text in enumerate(texts)
    ]
    docs += [
        TrainingDocument("", NEGATIVE, url=f"http://other{i}.test/", text=t, status=FETCHED)
        for i, t in enumerate(OTHERS)
    ]
    return Taxonomy(("Databases", *BOOKMARKS, "Sysadmin"), tuple(docs))


def store_crawled_queries(focus: TopicFocus, repo: Repository) -> None:
    """A hub linking to three accepted Databases/Queries pages on two hosts."""
    focus.attach(SimpleNamespace(repo=repo, frontier=Frontier()))
    targets = [f"http://q{i % 2}.test/{i}" for i in range(len(CRAWLED))]
    pages = [("http://hub.test/", "hub.test", None, 0.0, False, "links to query pages", targets)]
    pages += [
        (url, url.split("/")[2], "Databases/Queries", 1.0, True, text, [])
        for url, text in zip(targets, CRAWLED, strict=True)
    ]
    store_pages(repo, pages)


@pytest.fixture
def trained_svms(monkeypatch) -> list[int]:
    """Counts the topic SVMs trained (a list of one number, read after the training)."""
    count = [0]
    train = topic_model.train_linear_svm

    def counted(*args, **kwargs):
        count[0] += 1
        return train(*args, **kwargs)

    monkeypatch.setattr(topic_model, "train_linear_svm", counted)
    return count


def test_a_reorganisation_retrains_only_the_topics_whose_documents_changed(tmp_path, trained_svms):
    focus = TopicFocus(nested_taxonomy(), FocusSettings(learning_pages=0, n_auth=3, n_conf=3))
    assert trained_svms[0] == len(RETRAINED) + 2  # every topic at the start
    before = focus.model
    with Repository(tmp_path / "repo.db") as repo:
        store_crawled_queries(focus, repo)
        trained_svms[0] = 0
        added = focus.reorganise()
    assert set(added) == {"Databases/Queries"}
    assert trained_svms[0] == len(RETRAINED)
    for topic in ("Sysadmin/Web", "Sysadmin/Network"):
        assert focus.model.models[topic] is before.models[topic]


def test_the_retrained_model_is_the_one_a_full_training_on_the_same_documents_gives(tmp_path):
    focus = TopicFocus(nested_taxonomy(), FocusSettings(learning_pages=0, n_auth=3, n_conf=3))
    with Repository(tmp_path / "repo.db") as repo:
        store_crawled_queries(focus, repo)
        focus.reorganise()
    positives, negatives = focus._training_texts()
    assert sum(map(len, focus.archetypes.values())) > 0
    full = train_topic_model_from_texts(focus.featurizer, positives, negatives, settings=focus.model_settings)
    assert focus.model == full
    texts = CRAWLED + [text for texts in BOOKMARKS.values() for text in texts] + OTHERS
    assert focus.model.classify_texts(texts) == full.classify_texts(texts)
