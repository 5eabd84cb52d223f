"""The harvest a node reports per topic: its queue's share accepted; for a folder above queued topics,
theirs summed; for a topic without bookmarks below it, which has no queue (a subtopic made by refining),
the share of the node's pages filed in it."""

from __future__ import annotations

from crawler.repository import Repository
from crawler.taxonomy import POSITIVE, Taxonomy, TrainingDocument, ensure_schema, store_taxonomy
from node.stored_state import harvest_figures, harvest_rates

TOPICS = ("Databases", "Databases/Tuning", "Science", "Science/Mathematics")


def test_a_folder_above_topics_with_figures_of_their_own_has_theirs_summed(tmp_path):
    with Repository(tmp_path / "r.sqlite") as repo:
        ensure_schema(repo)
        docs = tuple(
            TrainingDocument(t, POSITIVE, url=f"http://h.test/{t}") for t in ("Databases", TOPICS[3])
        )
        store_taxonomy(repo, Taxonomy(TOPICS, docs))
        with repo.transaction() as db:
            for topic, fetched, accepted in (("Databases", 10, 5), ("Science/Mathematics", 20, 19)):
                db.conn.execute(
                    "INSERT INTO topic_stats (at, topic, fetched, accepted, harvest_rate, mean_confidence) "
                    "VALUES (1.0, ?, ?, ?, 0, 0)",
                    [topic, fetched, accepted],
                )
            for i, topic in enumerate(["Databases/Tuning", "Science/Mathematics", None, None]):
                db.conn.execute(
                    "INSERT INTO documents (url, final_url, host, status, fingerprint, fetched_at, topic, "
                    "accepted) VALUES (?, ?, 'h.test', 200, 'ab', 1.0, ?, ?)",
                    [f"http://h.test/{i}", f"http://h.test/{i}", topic, int(topic is not None)],
                )
        rates = harvest_rates(repo)
    # Databases/Tuning (no bookmarks, no queue): 1 of the node's 4 pages; Science: its subtopic's queue
    assert rates == {"Databases": 0.5, "Databases/Tuning": 0.25, "Science": 0.95, "Science/Mathematics": 0.95}


def test_a_bookmarked_topic_whose_queue_fetched_nothing_yet_is_not_crawled_yet(tmp_path):
    topics = ("Math", "Math/Algebra", "Math/Geometry")
    with Repository(tmp_path / "r.sqlite") as repo:
        ensure_schema(repo)
        docs = tuple(TrainingDocument(t, POSITIVE, url=f"http://h.test/{t}") for t in topics[1:])
        store_taxonomy(repo, Taxonomy(topics, docs))
        with repo.transaction() as db:
            db.conn.execute(
                "INSERT INTO topic_stats (at, topic, fetched, accepted, harvest_rate, mean_confidence) "
                "VALUES (1.0, 'Math/Algebra', 8, 6, 0, 0)"
            )
            db.conn.execute(  # a page of Algebra's queue that Geometry's classifier took
                "INSERT INTO documents (url, final_url, host, status, fingerprint, fetched_at, topic, "
                "accepted) VALUES ('http://h.test/1', 'http://h.test/1', 'h.test', 200, 'ab', 1.0, ?, 1)",
                ["Math/Geometry"],
            )
        figures = harvest_figures(repo)
    assert figures["harvest"] == {"Math": 0.75, "Math/Algebra": 0.75, "Math/Geometry": 0.0}
    assert figures["unfetched_topics"] == ["Math/Geometry"]
