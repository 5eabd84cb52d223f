"""The node's own tables: a metrics history sampled every few seconds (the UI's plots), the crawl state.

Both live in the node's repository (`Repository.migrate("node", ...)`), so a restarted node shows its history
and resumes each topic's crawl in the state the user left it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from crawler.repository import Repository

RUNNING, PAUSED, STOPPED = "running", "paused", "stopped"
CRAWL_STATES = (RUNNING, PAUSED, STOPPED)
ALL_TOPICS = "*"  # the key of the node-wide crawl state


def _schema_v1(db: Any) -> None:
    db.executescript(
        """
        CREATE TABLE IF NOT EXISTS node_metrics (
            id INTEGER PRIMARY KEY,
            t REAL NOT NULL,
            pages INTEGER NOT NULL,
            pages_per_s REAL NOT NULL,
            frontier_size INTEGER NOT NULL,
            errors TEXT NOT NULL DEFAULT '{}',
            peers_online INTEGER NOT NULL DEFAULT 0,
            bytes_in INTEGER NOT NULL DEFAULT 0,
            bytes_out INTEGER NOT NULL DEFAULT 0,
            harvest TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX IF NOT EXISTS node_metrics_t ON node_metrics(t);
        CREATE TABLE IF NOT EXISTS crawl_state (
            topic TEXT PRIMARY KEY,
            state TEXT NOT NULL,
            updated_at REAL NOT NULL
        );
        """
    )


MIGRATIONS = [_schema_v1]


def ensure_schema(repo: Repository) -> None:
    repo.migrate("node", MIGRATIONS)


@dataclass(frozen=True)
class MetricsSample:
    t: float
    pages: int
    pages_per_s: float
    frontier_size: int
    errors: dict[str, int] = field(default_factory=dict)
    peers_online: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    harvest: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def record_sample(repo: Repository, sample: MetricsSample, keep: int) -> None:
    """Append one sample and drop the oldest beyond `keep`."""
    with repo.transaction() as db:
        db.conn.execute(
            "INSERT INTO node_metrics (t, pages, pages_per_s, frontier_size, errors, peers_online, bytes_in, "
            "bytes_out, harvest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                sample.t,
                sample.pages,
                sample.pages_per_s,
                sample.frontier_size,
                json.dumps(sample.errors, sort_keys=True),
                sample.peers_online,
                sample.bytes_in,
                sample.bytes_out,
                json.dumps(sample.harvest, sort_keys=True),
            ],
        )
        db.conn.execute(
            "DELETE FROM node_metrics WHERE id <= (SELECT max(id) FROM node_metrics) - ?", [max(keep, 1)]
        )


def samples_since(repo: Repository, since: float = 0.0, limit: int = 5000) -> list[MetricsSample]:
    """Samples taken after `since` (a Unix time), oldest first, at most the newest `limit`."""
    rows = repo.db.execute(
        "SELECT t, pages, pages_per_s, frontier_size, errors, peers_online, bytes_in, bytes_out, harvest "
        "FROM (SELECT * FROM node_metrics WHERE t > ? ORDER BY id DESC LIMIT ?) ORDER BY id",
        [since, limit],
    ).fetchall()
    return [
        MetricsSample(t, pages, rate, frontier, json.loads(errors), peers, bin_, bout, json.loads(harvest))
        for t, pages, rate, frontier, errors, peers, bin_, bout, harvest in rows
    ]


def load_crawl_states(repo: Repository) -> dict[str, str]:
    """Persisted crawl states: `ALL_TOPICS` for the node-wide state, else topic keys."""
    return {topic: state for topic, state in repo.db.execute("SELECT topic, state FROM crawl_state")}


def save_crawl_state(repo: Repository, topic: str, state: str, at: float) -> None:
    if state not in CRAWL_STATES:
        raise ValueError(f"crawl state must be one of {', '.join(CRAWL_STATES)}, not {state!r}")
    with repo.transaction() as db:
        db.conn.execute(
            "INSERT INTO crawl_state (topic, state, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT(topic) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at",
            [topic, state, at],
        )
