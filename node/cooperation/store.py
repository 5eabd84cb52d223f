"""The cooperation layer's tables in the node's repository, and pooled crawl results in `documents`.

Tables (component "cooperation", versioned by `Repository.migrate`):
- `coop_models`: the newest model per (topic, origin, kind) with its role (local, received, meta), version,
  the signed wire form (msgpack), its accuracy measured on this node's labelled documents and its weight;
- `coop_meta`: per topic the meta-classifier (plain data), the user's loss, its members, the loss/accuracy
  curve and the last figures of a build;
- `coop_proposals`: clustering proposals (label, top terms, sample titles, size, abstained, status);
- `coop_cursors`: how far the results of each peer and topic have been synced.
Pooled documents go into `documents` with `origin` (the first peer) and `origins` (every peer, merged).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from crawler.repository import Repository
from crawler.topic_rename import subtree_where
from crawler.urls import host_of
from p2p.codec import pack, unpack
from p2p.messages.models import ModelResponse, SignedModel
from p2p.messages.results import CrawlResult
from p2p.value_checks import shown_text

COMPONENT = "cooperation"
LOCAL, RECEIVED, META = "local", "received", "meta"


def _schema_v1(db: Any) -> None:
    db.executescript(
        """
        CREATE TABLE IF NOT EXISTS coop_models (
            topic TEXT NOT NULL,
            origin TEXT NOT NULL,
            kind TEXT NOT NULL,
            role TEXT NOT NULL,
            version INTEGER NOT NULL,
            fingerprint TEXT NOT NULL DEFAULT '',
            wire BLOB NOT NULL,
            accuracy_local REAL,
            evaluated INTEGER NOT NULL DEFAULT 0,
            weight REAL,
            received_at REAL NOT NULL,
            PRIMARY KEY (topic, origin, kind)
        );
        CREATE TABLE IF NOT EXISTS coop_meta (
            topic TEXT PRIMARY KEY,
            loss REAL NOT NULL,
            model BLOB,
            members TEXT NOT NULL DEFAULT '[]',
            curve TEXT NOT NULL DEFAULT '[]',
            kept INTEGER NOT NULL DEFAULT 0,
            abstained INTEGER NOT NULL DEFAULT 0,
            build TEXT NOT NULL DEFAULT '{}',
            built_at REAL NOT NULL DEFAULT 0
        );
        CREATE TABLE IF NOT EXISTS coop_proposals (
            id INTEGER PRIMARY KEY,
            topic TEXT NOT NULL,
            label TEXT NOT NULL,
            top_terms TEXT NOT NULL,
            sample_titles TEXT NOT NULL,
            size INTEGER NOT NULL,
            abstained INTEGER NOT NULL,
            status TEXT NOT NULL DEFAULT 'open',
            doc_ids TEXT NOT NULL,
            created_at REAL NOT NULL
        );
        CREATE TABLE IF NOT EXISTS coop_cursors (
            peer TEXT NOT NULL,
            topic TEXT NOT NULL,
            cursor INTEGER NOT NULL,
            PRIMARY KEY (peer, topic)
        );
        """
    )


def _schema_v2(db: Any) -> None:
    """Community-measured quality (3.15): the robust accuracy over the reporters, how many reported, and
    when the model first had a say (weight > 0)."""
    for column in ("accuracy_community REAL", "reporters INTEGER NOT NULL DEFAULT 0", "weighted_at REAL"):
        db.execute(f"ALTER TABLE coop_models ADD COLUMN {column}")


# coop_meta's kept and abstained columns (v1) are no longer written: a topic's counts are its documents'
# verdicts as they stand (`filtering.verdict_counts`), which the stored counts of one filtering were not.
MIGRATIONS = [_schema_v1, _schema_v2]


def ensure_schema(repo: Repository) -> None:
    repo.migrate(COMPONENT, MIGRATIONS)


@dataclass(frozen=True)
class StoredModel:
    topic: str
    origin: str
    kind: str
    role: str
    version: int
    fingerprint: str
    model: SignedModel
    accuracy_local: float | None
    evaluated: int
    weight: float | None
    received_at: float


def save_model(
    repo: Repository,
    model: SignedModel,
    role: str,
    *,
    fingerprint: str = "",
    accuracy: float | None = None,
    evaluated: int = 0,
    weight: float | None = None,
) -> None:
    p = model.payload
    with repo.transaction() as db:
        db.conn.execute(
            "INSERT INTO coop_models (topic, origin, kind, role, version, fingerprint, wire, accuracy_local, "
            "evaluated, weight, received_at, weighted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(topic, origin, kind) DO UPDATE SET role = excluded.role, "
            "version = excluded.version, fingerprint = excluded.fingerprint, wire = excluded.wire, "
            "accuracy_local = excluded.accuracy_local, "
            "evaluated = excluded.evaluated, weight = excluded.weight, received_at = excluded.received_at, "
            "weighted_at = coalesce(coop_models.weighted_at, excluded.weighted_at)",
            [
                p.topic,
                p.origin,
                p.kind,
                role,
                p.version,
                fingerprint,
                pack(ModelResponse(p.topic, model).to_wire()),
                accuracy,
                evaluated,
                weight,
                time.time(),
                time.time() if weight else None,
            ],
        )


def set_model_quality(
    repo: Repository,
    topic: str,
    origin: str,
    kind: str,
    accuracy: float | None,
    evaluated: int,
    weight: float,
    *,
    community: float | None = None,
    reporters: int = 0,
) -> None:
    """Record a model's measured quality; weighted_at keeps the time it first got a say (weight > 0)."""
    with repo.transaction() as db:
        db.conn.execute(
            "UPDATE coop_models SET accuracy_local = ?, evaluated = ?, weight = ?, accuracy_community = ?, "
            "reporters = ?, weighted_at = CASE WHEN ? > 0 THEN coalesce(weighted_at, ?) ELSE weighted_at END "
            "WHERE topic = ? AND origin = ? AND kind = ?",
            [accuracy, evaluated, weight, community, reporters, weight, time.time(), topic, origin, kind],
        )


def _row_to_model(row: Sequence[Any]) -> StoredModel:
    topic, origin, kind, role, version, fingerprint, wire, accuracy, evaluated, weight, at = row
    signed = ModelResponse.from_wire(unpack(wire, ModelResponse.MAX_FRAME)).model
    assert signed is not None
    return StoredModel(
        topic, origin, kind, role, version, fingerprint, signed, accuracy, evaluated, weight, at
    )


_MODEL_COLUMNS = (
    "topic, origin, kind, role, version, fingerprint, wire, accuracy_local, evaluated, weight, received_at"
)


def load_models(
    repo: Repository, topic: str | None = None, kind: str | None = None, role: str | None = None
) -> list[StoredModel]:
    clauses, params = [], []
    for column, value in (("topic", topic), ("kind", kind), ("role", role)):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = repo.db.execute(
        f"SELECT {_MODEL_COLUMNS} FROM coop_models{where} ORDER BY topic, role, origin", params
    ).fetchall()
    return [_row_to_model(row) for row in rows]


def model_versions(repo: Repository, topic: str | None = None, kind: str = "linear") -> dict[str, list[Any]]:
    """topic -> the (origin, version) of each held model of the kind (of one topic, or all), read without
    unpacking the models (`load_models` of every topic unpacked 300 models at 150 topics, 0.05 s)."""
    where, params = ("kind = ? AND topic = ?", [kind, topic]) if topic else ("kind = ?", [kind])
    held: dict[str, list[Any]] = {}
    for row_topic, origin, version in repo.db.execute(
        f"SELECT topic, origin, version FROM coop_models WHERE {where}", params
    ).fetchall():
        held.setdefault(row_topic, []).append((origin, version))
    return held


def model_rows(repo: Repository, topic: str | None = None) -> list[dict[str, Any]]:
    """The API's model list with each model's measured quality."""
    where, params = ("WHERE topic = ?", [topic]) if topic else ("", [])
    keys = (
        "topic",
        "origin",
        "version",
        "kind",
        "role",
        "accuracy_local",
        "evaluated",
        "accuracy_community",
        "reporters",
        "weight",
        "received_at",
        "weighted_at",
    )
    rows = repo.db.execute(
        f"SELECT {', '.join(keys)} FROM coop_models {where} ORDER BY topic, role, origin", params
    ).fetchall()
    return [dict(zip(keys, row, strict=True)) for row in rows]


def count_received(repo: Repository) -> int:
    return int(repo.db.execute("SELECT count(*) FROM coop_models WHERE role = ?", [RECEIVED]).fetchone()[0])


# -- meta ---------------------------------------------------------------------------------------------------
def save_meta(repo: Repository, topic: str, **values: Any) -> None:
    """Insert or update a topic's meta row; JSON columns are encoded here."""
    encoded = {k: json.dumps(v) if k in ("members", "curve", "build") else v for k, v in values.items()}
    if "model" in encoded and encoded["model"] is not None:
        encoded["model"] = pack(encoded["model"])
    with repo.transaction() as db:
        db.conn.execute(
            "INSERT INTO coop_meta (topic, loss) VALUES (?, ?) ON CONFLICT(topic) DO NOTHING",
            [topic, values.get("loss", 0.2)],
        )
        if encoded:
            assignments = ", ".join(f"{k} = ?" for k in encoded)
            db.conn.execute(f"UPDATE coop_meta SET {assignments} WHERE topic = ?", [*encoded.values(), topic])


def load_meta(repo: Repository, topic: str) -> dict[str, Any] | None:
    rows = list(repo.db.query("SELECT * FROM coop_meta WHERE topic = ?", [topic]))
    if not rows:
        return None
    row = rows[0]
    for key in ("members", "curve", "build"):
        row[key] = json.loads(row[key])
    row["model"] = None if row["model"] is None else unpack(row["model"], 256 * 1024 * 1024)
    return row


def topic_overview(repo: Repository) -> dict[str, dict[str, Any]]:
    """topic -> {"meta": its meta row's loss, curve, members and build (None before a build; the model
    itself is not unpacked), "model_version": its local model's version (None before one)}, for every
    topic with either, in one read: the Topics screen lists them all, and a read a topic queued that many
    times behind a cooperation round's work (12 s for 150 topics)."""
    overview: dict[str, dict[str, Any]] = {}
    for topic, loss, curve, members, build in repo.db.execute(
        "SELECT topic, loss, curve, members, build FROM coop_meta WHERE model IS NOT NULL"
    ):
        meta = {
            "loss": loss,
            "curve": json.loads(curve),
            "members": json.loads(members),
            "build": json.loads(build),
        }
        overview[topic] = {"meta": meta, "model_version": None}
    for topic, version in repo.db.execute(
        "SELECT topic, version FROM coop_models WHERE role = ? AND kind = 'linear'", [LOCAL]
    ):
        overview.setdefault(topic, {"meta": None})["model_version"] = int(version)
    return overview


def meta_topics(repo: Repository) -> dict[str, float]:
    """topic -> when its meta-classifier was built, for every topic that has one."""
    if not repo.db["coop_meta"].exists():
        return {}
    rows = repo.db.execute("SELECT topic, built_at FROM coop_meta WHERE model IS NOT NULL").fetchall()
    return {topic: float(built_at or 0.0) for topic, built_at in rows}


def meta_weights(repo: Repository, topic: str | None = None) -> dict[str, dict[str, float]]:
    """topic -> origin -> the weight the topic's last meta build gave that origin's model (origin "local"
    for the node's own model), for the topics built so far."""
    where, params = (
        ("WHERE topic = ? AND model IS NOT NULL", [topic]) if topic else ("WHERE model IS NOT NULL", [])
    )
    weights: dict[str, dict[str, float]] = {}
    for row_topic, members in repo.db.execute(f"SELECT topic, members FROM coop_meta {where}", params):
        weights[row_topic] = {m["origin"]: float(m["weight"]) for m in json.loads(members)}
    return weights


# -- proposals ----------------------------------------------------------------------------------------------
def save_proposals(repo: Repository, topic: str, proposals: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Replace the topic's open proposals; returns them with their ids (not the decided ones: `refine`
    listed an accepted proposal among the new ones, under "accept one")."""
    now = time.time()
    with repo.transaction() as db:
        db.conn.execute("DELETE FROM coop_proposals WHERE topic = ? AND status = 'open'", [topic])
        for p in proposals:
            db.conn.execute(
                "INSERT INTO coop_proposals (topic, label, top_terms, sample_titles, size, abstained, "
                "doc_ids, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    topic,
                    p["label"],
                    json.dumps(p["top_terms"]),
                    json.dumps(p["sample_titles"]),
                    p["size"],
                    p["abstained"],
                    json.dumps(p["doc_ids"]),
                    now,
                ],
            )
    return [p for p in load_proposals(repo, topic) if p["status"] == "open"]


def load_proposals(
    repo: Repository, topic: str | None = None, proposal_id: int | None = None
) -> list[dict[str, Any]]:
    clauses, params = [], []
    if topic is not None:
        clauses.append("topic = ?")
        params.append(topic)
    if proposal_id is not None:
        clauses.append("id = ?")
        params.append(proposal_id)
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    result = []
    for row in repo.db.query(f"SELECT * FROM coop_proposals{where} ORDER BY id", params):
        row["top_terms"] = json.loads(row["top_terms"])
        row["sample_titles"] = json.loads(row["sample_titles"])
        row["doc_ids"] = json.loads(row["doc_ids"])
        result.append(row)
    return result


def set_proposal_status(repo: Repository, proposal_id: int, status: str, label: str | None = None) -> None:
    with repo.transaction() as db:
        db.conn.execute(
            "UPDATE coop_proposals SET status = ?, label = coalesce(?, label) WHERE id = ?",
            [status, label, proposal_id],
        )


# -- pooled results -----------------------------------------------------------------------------------------
def cursor_of(repo: Repository, peer: str, topic: str) -> int:
    row = repo.db.execute(
        "SELECT cursor FROM coop_cursors WHERE peer = ? AND topic = ?", [peer, topic]
    ).fetchone()
    return int(row[0]) if row else 0


def pool_results(repo: Repository, peer: str, topic: str, results: Sequence[CrawlResult], cursor: int) -> int:
    """Store a peer's results of `topic` (new URLs as pooled documents, known ones get the peer added to
    their origins) and advance the cursor, in one transaction; returns how many documents are new. A
    result goes in the subtopic of `topic` the peer filed it in when this node has that topic too: filed
    under the topic synced, a community's "Science" results took every "Science/Mathematics" page."""
    added = 0
    with repo.transaction() as db:
        ceiling = pooled_confidence_ceiling(db.conn)
        known = (
            {row[0] for row in db.conn.execute("SELECT key FROM topics")} if db["topics"].exists() else set()
        )
        for r in results:
            row = db.conn.execute("SELECT id, origins FROM documents WHERE url = ?", [r.url]).fetchone()
            if row is not None:
                origins = json.loads(row[1] or "[]")
                if r.origin not in origins:
                    origins.append(r.origin)
                    db.conn.execute(
                        "UPDATE documents SET origins = ? WHERE id = ?", [json.dumps(origins), row[0]]
                    )
                continue
            db.conn.execute(
                "INSERT INTO documents (url, final_url, host, status, content_type, title, text, "
                "fingerprint, fetched_at, topic, confidence, accepted, origin, origins) "
                "VALUES (?, ?, ?, 200, 'text/html', ?, ?, ?, ?, ?, ?, 1, ?, ?)",
                [
                    r.url,
                    r.url,
                    host_of(r.url),
                    shown_text(r.title),
                    shown_text(r.preview),
                    r.fingerprint,
                    r.fetched_at,
                    r.topic if r.topic in known else topic,
                    min(max(r.confidence, 0.0), ceiling),
                    r.origin,
                    json.dumps([r.origin]),
                ],
            )
            added += 1
        db.conn.execute(
            "INSERT INTO coop_cursors (peer, topic, cursor) VALUES (?, ?, ?) "
            "ON CONFLICT(peer, topic) DO UPDATE SET cursor = excluded.cursor",
            [peer, topic, cursor],
        )
    return added


def pooled_confidence_ceiling(conn: Any) -> float:
    """The most a peer's result may claim: the confidence of the node's own most confident page (1 before
    it has one). A result claiming 10**12 ranked first for every query it matched, the node's own
    confidences squeezed to 0 beside it."""
    top = conn.execute("SELECT max(confidence) FROM documents WHERE origin IS NULL").fetchone()[0]
    return float(top) if top is not None and top > 0 else 1.0


_OWN_IN_TOPIC = (
    "origin IS NULL AND accepted = 1 AND duplicate_of IS NULL AND (topic = ? OR substr(topic, 1, ?) = ?)"
)


def _subtree(topic: str) -> list[Any]:
    return subtree_where("topic", topic)[1]  # the parameters of the condition in the SQL above


def own_results(
    repo: Repository,
    topic: str,
    cursor: int,
    limit: int,
    holder: str | None = None,
    *,
    kept_only: bool = False,
    best: int | None = None,
) -> list[tuple[int, dict[str, Any]]]:
    """(doc id, row) of the node's own accepted documents of a topic's subtree after `cursor`; without
    those `holder` synced here as its own results (it crawled them: sending them back is wasted). (They
    were also left to any peer with a smaller id that had synced them here, the smallest holder sending:
    a hostile peer claiming the node's pages then stopped the node sharing them, and on devweb runs of 4
    nodes the rule saved nothing measurable: 0.31% and 0.60% exchanged at 1200 and 400 pages without it,
    0.28-0.43% and 0.56-0.70% with it.) With
    `kept_only`, only documents the restrictive filter kept, and none after the first one not judged yet
    (the cursor must not pass a document whose verdict is still to come). With `best`, only the topic's
    `best` most confident such documents (`cooperation.share_results`): a page that rises among them
    after the cursor passed it is not offered again."""
    held = ""
    params: list[Any] = [cursor, *_subtree(topic)]
    if holder is not None:
        held += "AND (origins IS NULL OR instr(origins, ?) = 0) "
        params.append(json.dumps(holder))
    if kept_only:
        held += (
            "AND verdict = 'accepted' AND id < coalesce((SELECT min(id) FROM documents WHERE "
            f"verdict IS NULL AND {_OWN_IN_TOPIC}), 1 << 62) "
        )
        params += _subtree(topic)
    if best is not None:
        top = f"SELECT id FROM documents WHERE {_OWN_IN_TOPIC} ORDER BY confidence DESC, id LIMIT ?"
        held += f"AND id IN ({top}) "
        params += [*_subtree(topic), best]
    rows = repo.db.execute(
        "SELECT id, url, title, text, topic, confidence, fingerprint, fetched_at FROM documents "
        f"WHERE id > ? AND {_OWN_IN_TOPIC} {held}ORDER BY id LIMIT ?",
        [*params, limit],
    ).fetchall()
    keys = ("url", "title", "text", "topic", "confidence", "fingerprint", "fetched_at")
    return [(int(row[0]), dict(zip(keys, row[1:], strict=True))) for row in rows]


def held_urls(repo: Repository, topic: str, provider: str, limit: int = -1) -> list[str]:
    """The URLs a result sync of `topic` from `provider` could bring that this node holds already: its
    documents of the topic's subtree and those its crawler rejected (a peer may accept what this node
    turned down), without those `provider` sent (they lie behind the cursor; it will not send them again).
    Documents of other topics are left out: peers rarely file a page under another topic, and every URL
    costs the request about 1.2 bytes of Bloom filter. Newest first, at most `limit` (-1: all)."""
    rows = repo.db.execute(
        "SELECT url FROM documents WHERE (accepted = 0 OR topic IS NULL OR topic = ? "
        "OR substr(topic, 1, ?) = ?) AND instr(coalesce(origins, '[]'), ?) = 0 ORDER BY id DESC LIMIT ?",
        [*_subtree(topic), json.dumps(provider), limit],
    ).fetchall()
    return [row[0] for row in rows]


def unjudged(repo: Repository, topic: str) -> int:
    """The node's own documents of a topic's subtree without a restrictive verdict yet."""
    query = f"SELECT count(*) FROM documents WHERE verdict IS NULL AND {_OWN_IN_TOPIC}"
    return int(repo.db.execute(query, _subtree(topic)).fetchone()[0])


def count_pooled(repo: Repository) -> int:
    return int(repo.db.execute("SELECT count(*) FROM documents WHERE origin IS NOT NULL").fetchone()[0])


# -- blocked peers ------------------------------------------------------------------------------------------
def forget_peer(repo: Repository, peer: str) -> dict[str, Any]:
    """Remove what the node holds from a peer its user blocked, in one transaction: its models, its sync
    cursors (unblocked, it is synced from the start again), the results only it sent (a result other peers
    sent too stays, theirs), and its name in every document's origins. Returns the counts and the topics
    whose meta-classifier gave its model a say (to be built again without it)."""
    with repo.transaction() as db:
        conn = db.conn
        models = conn.execute(
            "DELETE FROM coop_models WHERE origin = ? AND role = ?", [peer, RECEIVED]
        ).rowcount
        conn.execute("DELETE FROM coop_cursors WHERE peer = ?", [peer])
        removed = shared = 0
        rows = conn.execute(
            "SELECT id, origin, origins FROM documents WHERE origin = ? OR instr(origins, ?) > 0",
            [peer, json.dumps(peer)],
        ).fetchall()
        for doc_id, origin, origins in rows:
            others = [o for o in json.loads(origins or "[]") if o != peer]
            if origin == peer and not others:
                conn.execute("DELETE FROM documents WHERE id = ?", [doc_id])
                removed += 1
                continue
            shared += origin == peer
            first = others[0] if origin == peer else origin
            conn.execute(
                "UPDATE documents SET origin = ?, origins = ? WHERE id = ?",
                [first, json.dumps(others), doc_id],
            )
        topics = metas_weighing(repo, lambda origin: origin == peer)
    return {"models_forgotten": models, "results_removed": removed, "results_kept": shared, "topics": topics}


def metas_weighing(repo: Repository, chosen: Callable[[str], bool]) -> list[str]:
    """Topics whose meta-classifier has a member (a model's origin) that `chosen` picks."""
    rows = repo.db.execute("SELECT topic, members FROM coop_meta").fetchall()
    return [
        topic
        for topic, members in rows
        if any(chosen(str(m.get("origin"))) for m in json.loads(members or "[]"))
    ]


# -- renamed topics -----------------------------------------------------------------------------------------
def move_topics(db: Any, moved: dict[str, str]) -> int:
    """A renamed topic's cooperation rows, inside the rename's transaction: its community is another one
    now, so the models of the old one and the sync cursors with its peers are forgotten, and so is the
    node's own model (its signed payload names the old key: the next round trains it under the new one).
    The meta row keeps the user's loss and waits for a build; proposals move with their topic. Returns the
    peers' models forgotten."""
    old = sorted(moved)
    marks = ", ".join("?" * len(old))
    received = db.execute(
        f"SELECT count(*) FROM coop_models WHERE role = ? AND topic IN ({marks})", [RECEIVED, *old]
    ).fetchone()[0]
    db.execute(f"DELETE FROM coop_models WHERE topic IN ({marks})", old)
    db.execute(f"DELETE FROM coop_cursors WHERE topic IN ({marks})", old)
    db.execute(f"DELETE FROM coop_meta WHERE topic IN ({', '.join('?' * len(moved))})", list(moved.values()))
    for before, after in moved.items():
        db.execute(
            "UPDATE coop_meta SET topic = ?, model = NULL, members = '[]', curve = '[]', build = '{}', "
            "built_at = 0 WHERE topic = ?",
            [after, before],
        )
        db.execute("UPDATE coop_proposals SET topic = ? WHERE topic = ?", [after, before])
    return int(received)
