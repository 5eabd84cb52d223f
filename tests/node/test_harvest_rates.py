"""The harvest a node reports per topic: its queue's share accepted, or for a topic without a queue of its
own (a subtopic made by refining) the share of the node's pages filed in it."""

from __future__ import annotations

from crawler.repository import Repository
from crawler.taxonomy import POSITIVE, Taxonomy, TrainingDocument, ensure_schema, store_taxonomy
from node.stored_state import harvest_rates

TOPICS = ("Databases", "Databases/Tuning", "Science", "Science/Mathematics")


def test_a_folder_above_topics_with_figures_of_their_own_has_none(tmp_path):
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
    # Databases/Tuning (no queue of its own): 1 of the node's 4 pages; Science: nothing of its own to show
    assert rates == {"Databases": 0.5, "Databases/Tuning": 0.25, "Science/Mathematics": 0.95}
