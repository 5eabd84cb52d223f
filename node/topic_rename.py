"""`topicswarm topics rename`: a topic and its subtopics under a new key, which is also the name of the
community the node joins for it (`crawler.topic_rename` moves the crawler's rows; this adds the node's)."""

from __future__ import annotations

from typing import Any

from crawler import taxonomy
from crawler.repository import Repository
from crawler.topic_rename import move_keys_unique, rename_rows, subtree_where, typed_key
from node import metrics
from node.cooperation import store


def rename_topic(repo: Repository, old: str, new: str) -> dict[str, Any]:
    """Rename `old` to `new` (as typed: folder names joined by /) in one transaction, with the node stopped
    (its crawl, models and communities hold the keys in memory). Raises TaxonomyError when refused."""
    new = typed_key(new)
    for ensure_schema in (taxonomy.ensure_schema, store.ensure_schema, metrics.ensure_schema):
        ensure_schema(repo)
    with repo.transaction() as db:
        documents = _filed(db, "documents", old)
        queued = _filed(db, "frontier", old)
        moved = rename_rows(db, old, new)
        move_keys_unique(db, "crawl_state", "topic", moved)
        models = store.move_topics(db, moved)
    return {
        "old": old,
        "new": new,
        "moved": moved,
        "documents": documents,
        "queued": queued,
        "models": models,
    }


def _filed(db: Any, table: str, key: str) -> int:
    """Rows of `table` filed under the topic or its subtopics."""
    where, params = subtree_where("topic", key)
    return int(db.execute(f"SELECT count(*) FROM {table} WHERE {where}", params).fetchone()[0])
