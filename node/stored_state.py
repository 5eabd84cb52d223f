"""What a node's repository holds about it, read the same way by the running node's API and by `status`
when no node runs (a user checking on a stopped node wants its pages, harvest and frontier, not only
"no node is running").

Light on purpose: importing it loads no node service, trio or network; only `stopped_status` reads the
peer lists through `node.network`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from crawler.repository import Repository
from crawler.repository_schema import QUEUED
from crawler.taxonomy import IMPORTED, POSITIVE
from metamodels.topic_keys import topic_prefixes
from node.datadir import DataDir
from node.errors import NodeServiceError
from node.metrics import ALL_TOPICS, RUNNING, load_crawl_states, samples_since


def table_exists(repo: Repository, name: str) -> bool:
    return repo.db[name].exists()


def topic_keys(repo: Repository) -> list[str]:
    if not table_exists(repo, "topics"):
        return []
    return [row[0] for row in repo.db.execute("SELECT key FROM topics ORDER BY key")]


def subtopic_pattern(key: str) -> str:
    """A LIKE pattern (ESCAPE '\\') for the keys below topic `key`: `_` and `%` in a key match themselves."""
    return key.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/%"


def document_counts(repo: Repository) -> dict[str, int]:
    local, pooled = repo.db.execute(
        "SELECT coalesce(sum(origin IS NULL), 0), coalesce(sum(origin IS NOT NULL), 0) FROM documents"
    ).fetchone()
    return {"local": int(local), "pooled": int(pooled)}


def harvest_rates(repo: Repository) -> dict[str, float]:
    """Per topic, accepted / fetched of `harvest_counts`; 0.0 for a topic nothing was fetched for yet
    (`harvest_figures` tells those apart)."""
    return _rates(harvest_counts(repo))


def harvest_rate(accepted: int, fetched: int) -> float:
    return accepted / fetched if fetched else 0.0


def _rates(counts: dict[str, tuple[int, int]]) -> dict[str, float]:
    return {topic: harvest_rate(*figures) for topic, figures in counts.items()}


def harvest_counts(repo: Repository) -> dict[str, tuple[int, int]]:
    """Per topic, the (accepted, fetched) pages `harvest_rates` divides: over everything its queue fetched
    (the focus loop's topic_stats); for a folder above topics with queues, theirs summed (`Science`, holding
    only `Science/Mathematics`, has its subtopic's figures), (0, 0) while none fetched anything (with
    hundreds of topics, most wait for their first turn); for a topic without bookmarks below it, which has
    no queue (a subtopic accepted from a refinement, a folder of files), the node's pages filed in it
    against all its pages."""
    own: dict[str, tuple[int, int]] = {}
    if table_exists(repo, "topic_stats"):
        for topic, accepted, fetched in repo.db.execute(
            "SELECT topic, sum(accepted), sum(fetched) FROM topic_stats WHERE topic != '' GROUP BY topic"
        ):
            own[topic] = (int(accepted), int(fetched))
    keys = topic_keys(repo)
    queued = {prefix for topic in _bookmarked_topics(repo) for prefix in topic_prefixes(topic)}
    filed = filed_counts(repo) if set(keys) - set(own) - queued else {}
    counts: dict[str, tuple[int, int]] = {}
    for key in keys:
        if key in own:
            counts[key] = own[key]
        elif key in queued:
            below = [figures for topic, figures in own.items() if topic.startswith(key + "/")]
            counts[key] = (sum(a for a, _ in below), sum(f for _, f in below))
        else:
            counts[key] = filed.get(key, (0, filed[None][1]))
    return counts


def _bookmarked_topics(repo: Repository) -> list[str]:
    """The topics with bookmarks of their own: the crawl queues them, and serves the topics' queues."""
    if not table_exists(repo, "training_documents"):
        return []
    rows = repo.db.execute(
        "SELECT DISTINCT topic FROM training_documents WHERE polarity = ? AND url != '' AND source = ?",
        [POSITIVE, IMPORTED],
    )
    return [topic for (topic,) in rows]


def filed_counts(repo: Repository) -> dict[str | None, tuple[int, int]]:
    """Per topic with pages, (the node's own accepted pages filed in its subtree, all its own pages); None:
    (0, all its own pages)."""
    total = int(repo.db.execute("SELECT count(*) FROM documents WHERE origin IS NULL").fetchone()[0])
    rows = repo.db.execute(
        "SELECT topic, count(*) FROM documents WHERE origin IS NULL AND accepted = 1 AND topic IS NOT NULL "
        "GROUP BY topic"
    ).fetchall()
    counts: dict[str | None, tuple[int, int]] = {None: (0, total)}
    for topic, filed in rows:
        for key in topic_prefixes(topic):
            counts[key] = (counts.get(key, (0, total))[0] + int(filed), total)
    return counts


def harvest_figures(repo: Repository) -> dict[str, Any]:
    """A status's `harvest` and `unfetched_topics`: the topics nothing was fetched for yet, whose harvest
    of 0.0 measures nothing (right after `topics import` every topic's read as a crawl that failed)."""
    counts = harvest_counts(repo)
    return {
        "harvest": _rates(counts),
        "unfetched_topics": sorted(topic for topic, (_, fetched) in counts.items() if not fetched),
    }


def document_details(repo: Repository, doc_id: int) -> dict[str, Any] | None:
    """A stored page as `GET /api/documents/ID` and `topicswarm show` give it: how it was fetched and
    judged, its links and feedback, and the start of its text; None when there is no such document."""
    doc = repo.document(doc_id)
    if doc is None:
        return None
    links = repo.db.execute("SELECT count(*) FROM links WHERE source_id = ?", [doc_id]).fetchone()[0]
    text = doc.pop("text", "") or ""
    details = {
        key: doc.get(key)
        for key in (
            "id",
            "url",
            "final_url",
            "title",
            "host",
            "status",
            "content_type",
            "lang",
            "topic",
            "confidence",
            "accepted",
            "verdict",
            "origin",
            "origins",
            "fetched_at",
            "depth",
            "bytes",
            "duplicate_of",
            "near_duplicate_of",
        )
    }
    details["doc_id"] = details.pop("id")
    details["origin"] = details["origin"] or "local"
    details["text_preview"] = text[:2000]
    details["text_length"] = len(text)
    details["links"] = int(links)
    details["feedback"] = _feedback_of(repo, doc_id)
    return details


def _feedback_of(repo: Repository, doc_id: int) -> list[dict[str, Any]]:
    if not table_exists(repo, "feedback"):
        return []
    return [
        {"kind": kind, "at": at, "query": query}
        for kind, at, query in repo.db.execute(
            "SELECT kind, at, query FROM feedback WHERE doc_id = ? ORDER BY at", [doc_id]
        )
    ]


def score_links(repo: Repository) -> None:
    """Link authority (HITS) and PageRank of the stored pages, overall and per topic: search's `authority`
    and `pagerank` signals read them (thesis chapter 4)."""
    from crawler.ranking import update_link_scores

    update_link_scores(repo, topic_keys(repo))


def waiting_hosts(repo: Repository, now: float) -> dict[str, Any]:
    """`Crawler.waiting_hosts` as the repository keeps it: the bad hosts with a next try and their queued
    links."""
    hosts, links, first = repo.db.execute(
        "SELECT count(DISTINCT h.host), count(f.url), min(h.retry_at) FROM hosts h "
        "JOIN frontier f ON f.host = h.host AND f.state = ? WHERE h.state = 'bad' AND h.retry_at IS NOT NULL",
        [QUEUED],
    ).fetchone()
    return {
        "hosts": int(hosts),
        "links": int(links),
        "next_try_in_s": None if first is None else max(0.0, first - now),
    }


def stopped_status(data: DataDir, repo: Repository) -> dict[str, Any]:
    """The status of a node that does not run: what it stored, the state its crawl resumes in (the topics
    held in it too), the figures of its last metrics sample, and the peers it rejoins when it starts again."""
    from node.network import read_blocked_peers, read_known_peers

    queued = repo.db.execute("SELECT count(*) FROM frontier WHERE state = ?", [QUEUED]).fetchone()[0]
    crawl: dict[str, Any] = {
        "frontier_size": int(queued),
        "hosts_waiting": waiting_hosts(repo, time.time()),
        "resumes": RUNNING,
        "held_topics": {},
        "held_links": 0,
        "bookmarks_to_queue": bookmarks_to_queue(repo),
        "last_sample": None,
    }
    if table_exists(repo, "node_metrics"):  # the node's tables: none before a node first ran here
        states = load_crawl_states(repo)
        crawl["resumes"] = states.get(ALL_TOPICS, RUNNING)
        crawl["held_topics"] = held = stored_held_topics(repo, states)
        crawl["held_links"] = queued_in_topics(repo, held)
        last = samples_since(repo, limit=1)
        crawl["last_sample"] = last[0].to_dict() if last else None
    try:
        blocked: int | None = len(read_blocked_peers(data.blocked_peers))
    except NodeServiceError:
        blocked = None  # the node refuses to start on it, and says why
    return {
        "running": False,
        "data_dir": str(data.root),
        "crawl": crawl,
        "documents": document_counts(repo),
        **harvest_figures(repo),
        "known_peers": len(read_known_peers(data.known_peers)),
        "blocked_peers": blocked,
    }


def stored_held_topics(repo: Repository, states: dict[str, str]) -> dict[str, str]:
    """The topics paused or stopped (key -> state) that the crawl leaves out when the node starts again, as
    `NodeService.held_topics` has them while it runs (a topic no longer imported holds nothing)."""
    keys = set(topic_keys(repo))
    return {
        key: state
        for key, state in sorted(states.items())
        if key != ALL_TOPICS and state != RUNNING and key in keys
    }


def queued_in_topics(repo: Repository, topics: Iterable[str]) -> int:
    """Links queued in these topics' queues."""
    keys = list(topics)
    if not keys:
        return 0
    marks = ", ".join("?" * len(keys))
    sql = f"SELECT count(*) FROM frontier WHERE state = ? AND topic IN ({marks})"
    return int(repo.db.execute(sql, [QUEUED, *keys]).fetchone()[0])


def bookmarks_to_queue(repo: Repository) -> int:
    """The imported topics' bookmarks a node queues when it first starts here (`Topics.resume_stored`), while
    nothing was ever queued: `topics import` stores them, and "0 links queued" alone read as a failure."""
    from crawler.taxonomy import POSITIVE

    if not table_exists(repo, "training_documents"):
        return 0
    if repo.db.execute("SELECT 1 FROM frontier LIMIT 1").fetchone() is not None:
        return 0
    sql = "SELECT count(DISTINCT url) FROM training_documents WHERE polarity = ? AND url != ''"
    return int(repo.db.execute(sql, [POSITIVE]).fetchone()[0])
