"""Relevance feedback (thesis 4.1.1): explicit (relevant / irrelevant) and implicit (opened) marks on search
results, ranking weights fitted to them by least squares (eq. 4.8), and marks fed to the topic's training set.

Each mark keeps the normalised signals the document had for its query when it was marked, so the fit needs
no re-run of old queries and stays the same when the repository grows. The fit (4.8) is ridge-regularised
toward the default weights: with the handful of marks a user gives, plain least squares is often rank
deficient or swings to extremes, while the prior keeps unmarked signals at their default share. Targets:
y = 1 for relevant and opened (opened counts half as much: implicit feedback is weaker), y = 0 for
irrelevant (the thesis leaves the "optimal scores" open). Weights are kept in [-1, 1] as the thesis assumes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from crawler.errors import CrawlerError
from crawler.query import DEFAULT_USER, SIGNALS
from crawler.ranking import RankingWeights
from crawler.repository import Repository
from crawler.taxonomy import FETCHED, NEGATIVE, POSITIVE, TrainingDocument, set_marked_document

RELEVANT, IRRELEVANT, OPENED = "relevant", "irrelevant", "opened"
KINDS = (RELEVANT, IRRELEVANT, OPENED)
TARGETS = {RELEVANT: 1.0, IRRELEVANT: 0.0, OPENED: 1.0}
SAMPLE_WEIGHTS = {RELEVANT: 1.0, IRRELEVANT: 1.0, OPENED: 0.5}
PRIOR_STRENGTH = 1.0  # ridge weight pulling the fit toward the default weights (one pseudo-mark per signal)
FEEDBACK_SOURCE = "feedback"  # training_documents.source of documents added by feedback


class FeedbackError(CrawlerError, ValueError):
    """A mark that cannot be stored (unknown document or kind); the message says what is accepted."""


@dataclass(frozen=True)
class FeedbackRecord:
    user: str
    doc_id: int
    url: str
    kind: str
    query: str | None
    topic: str | None
    signals: tuple[float, ...] | None  # normalised per query, in crawler.query.SIGNALS order
    at: float


def _feedback_schema_v1(db) -> None:
    db.executescript(
        """
        CREATE TABLE IF NOT EXISTS feedback (
            id INTEGER PRIMARY KEY,
            at REAL NOT NULL,
            user TEXT NOT NULL,
            query TEXT,
            doc_id INTEGER NOT NULL,
            url TEXT NOT NULL,
            topic TEXT,
            kind TEXT NOT NULL,
            signals TEXT
        );
        CREATE INDEX IF NOT EXISTS feedback_user ON feedback(user, at);
        CREATE INDEX IF NOT EXISTS feedback_doc ON feedback(doc_id);
        """
    )


MIGRATIONS = [_feedback_schema_v1]


def ensure_schema(repo: Repository) -> None:
    repo.migrate("feedback", MIGRATIONS)


def signals_for(
    repo: Repository, query: str, doc_id: int, topic: str | None = None
) -> tuple[float, ...] | None:
    """The document's normalised signals among the query's candidates (None when the query misses it)."""
    from crawler.search import CANDIDATES, ranked_search

    results = ranked_search(
        repo, query, topic=topic, verdict="any", limit=CANDIDATES, collapse=False, previews=False
    )
    for hit in results.hits:
        if hit.doc_id == doc_id:
            return tuple(hit.signals[name] for name in SIGNALS)
    return None


def record_feedback(
    repo: Repository,
    doc_id: int,
    kind: str,
    *,
    query: str | None = None,
    user: str = DEFAULT_USER,
    topic: str | None = None,
    signals: Sequence[float] | None = None,
    train: bool = True,
) -> FeedbackRecord:
    """Store one mark. Without `signals` they are recomputed from `query` (a mark without either still
    counts for profiles and training, not for the weight fit). Explicit marks with `train` also become
    training documents of the topic (the search's topic, else the document's): positive or negative."""
    if kind not in KINDS:
        raise FeedbackError(f"feedback kind must be one of {', '.join(KINDS)}, not {kind!r}")
    ensure_schema(repo)
    document = repo.document(doc_id)
    if document is None:
        raise FeedbackError(f"no document {doc_id} in the repository: mark a document from a search result")
    topic = topic if topic is not None else document["topic"]
    if signals is None and query:
        signals = signals_for(repo, query, doc_id, topic)
    if signals is not None and len(signals) != len(SIGNALS):
        raise FeedbackError(f"signals must have {len(SIGNALS)} values ({', '.join(SIGNALS)})")
    record = FeedbackRecord(
        user=user,
        doc_id=doc_id,
        url=document["url"],
        kind=kind,
        query=query,
        topic=topic,
        signals=tuple(float(s) for s in signals) if signals is not None else None,
        at=time.time(),
    )
    with repo.transaction() as db:
        db.execute(
            "INSERT INTO feedback (at, user, query, doc_id, url, topic, kind, signals) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                record.at,
                user,
                query,
                doc_id,
                record.url,
                topic,
                kind,
                json.dumps(record.signals) if record.signals is not None else None,
            ],
        )
    if train and kind != OPENED and topic:
        set_marked_document(repo, training_document(document, topic, kind == RELEVANT))
    return record


def training_document(document: dict, topic: str, relevant: bool) -> TrainingDocument:
    """A marked search result as a new positive or negative training document of `topic`."""
    return TrainingDocument(
        topic=topic,
        polarity=POSITIVE if relevant else NEGATIVE,
        url=document["url"],
        title=document["title"],
        text=document["text"],
        status=FETCHED,
        source=FEEDBACK_SOURCE,
    )


def feedback_of(repo: Repository, user: str | None = DEFAULT_USER) -> list[FeedbackRecord]:
    """A user's marks (every user's with None), oldest first."""
    ensure_schema(repo)
    where, params = ("WHERE user = ?", [user]) if user is not None else ("", [])
    rows = repo.db.execute(
        f"SELECT user, doc_id, url, kind, query, topic, signals, at FROM feedback {where} ORDER BY at, id",
        params,
    ).fetchall()
    return [
        FeedbackRecord(u, int(d), url, k, q, t, tuple(json.loads(s)) if s else None, float(at))
        for u, d, url, k, q, t, s, at in rows
    ]


def latest_marks(records: Sequence[FeedbackRecord]) -> list[FeedbackRecord]:
    """One mark per (query, document): the latest explicit one, else the latest implicit one."""
    chosen: dict[tuple[str | None, int], FeedbackRecord] = {}
    for rec in records:
        key = (rec.query, rec.doc_id)
        previous = chosen.get(key)
        if previous is None or rec.kind != OPENED or previous.kind == OPENED:
            chosen[key] = rec
    return list(chosen.values())


def training_pairs(records: Sequence[FeedbackRecord]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X signals, y targets, sample weights) of the marks that carry signals."""
    usable = [r for r in latest_marks(records) if r.signals is not None]
    X = np.array([r.signals for r in usable], dtype=np.float64).reshape(len(usable), len(SIGNALS))
    y = np.array([TARGETS[r.kind] for r in usable], dtype=np.float64)
    s = np.array([SAMPLE_WEIGHTS[r.kind] for r in usable], dtype=np.float64)
    return X, y, s


def fit_weights(
    X: np.ndarray,
    y: np.ndarray,
    sample_weight: np.ndarray | None = None,
    prior: RankingWeights | None = None,
    strength: float = PRIOR_STRENGTH,
    intercept: bool = True,
) -> RankingWeights:
    """Least squares (eq. 4.8) min sum_i s_i (y_i - w.x_i)^2 + strength |w - w0|^2, clipped to [-1, 1].

    w0 is the prior scaled so that a document at the top of every signal scores 1 (the targets' scale);
    `strength=0, intercept=False` is the thesis's plain least squares (minimum-norm solution when rank
    deficient). The intercept (fitted, then dropped: a constant does not change a ranking) lets the weights
    explain the difference between relevant and irrelevant marks rather than the level of the targets."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    s = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    w0 = (prior or RankingWeights()).as_array()
    total = float(np.abs(w0).sum())
    w0 = w0 / total if total > 0 else w0
    root = np.sqrt(s)[:, None]
    n = len(SIGNALS)
    design = np.hstack([X, np.ones((len(y), 1))]) if intercept else X
    penalty = np.sqrt(strength) * np.eye(n, design.shape[1])  # the intercept is not pulled anywhere
    A = np.vstack([design * root, penalty])
    b = np.concatenate([y * root[:, 0], np.sqrt(strength) * w0])
    w, *_ = np.linalg.lstsq(A, b, rcond=None)
    return RankingWeights.from_array(np.clip(w[:n], -1.0, 1.0))


def personal_weights(
    repo: Repository, user: str = DEFAULT_USER, prior: RankingWeights | None = None
) -> RankingWeights | None:
    """The user's weights fitted to their marks; None while no mark carries signals (use the default)."""
    X, y, s = training_pairs(feedback_of(repo, user))
    if len(y) == 0:
        return None
    return fit_weights(X, y, s, prior)
