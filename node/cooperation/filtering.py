"""Restrictive filtering of a topic's documents against its rival topics (thesis 3.2.1), and the verdicts
it stores.

Filtering ranks a topic's documents by `filtering_scores`: the meta confidence less the strongest claim of
a rival topic's meta-classifier (`rival_topics`: a sibling of the topic or of a topic above it), as a
document is one topic's.
Functions here read the repository and are meant to run in a worker thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from crawler.repository import Repository
from crawler.topic_rename import subtree_where
from metamodels.meta_classifier import MetaClassifier
from metamodels.meta_functions import ABSTAIN, ACCEPT, REJECT
from metamodels.restrictive import loss_targeted_decisions, rival_margins
from metamodels.topic_model import parent_of, topic_prefixes
from node.cooperation.latent_meta import meta_scores

CURVE_LOSSES = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
VERDICTS = {ACCEPT: "accepted", ABSTAIN: "abstained", -1: "rejected"}


def rival_topics(topic: str, topics: Iterable[str]) -> list[str]:
    """The topics a page of `topic` could be filed in instead, sorted: its siblings in the topic tree and
    those of every topic above it. A page of "Science/Mathematics" may be one of "Databases" beside
    "Science": with its siblings alone an only child had no rival, and one-vs-rest its latent class model
    could take the pages of the node's other topics."""
    above = topic_prefixes(topic)
    levels = {parent_of(t) for t in above}
    return sorted(t for t in set(topics) if t not in above and parent_of(t) in levels)


def rivalled_by(topic: str, topics: Iterable[str]) -> list[str]:
    """The topics among `topics` that have `topic` for a rival (`rival_topics`), sorted."""
    return sorted(t for t in set(topics) if topic in rival_topics(t, topics))


def rival_claims(metas: Mapping[str, MetaClassifier], topic: str, X: sp.spmatrix) -> np.ndarray | None:
    """Which documents of X a rival topic's meta-classifier accepts (`rival_topics` among `metas`);
    None without rivals."""
    rivals = rival_topics(topic, metas)
    if not rivals or X.shape[0] == 0:
        return None
    return np.any(np.column_stack([meta_scores(metas[s], X) > 0 for s in rivals]), axis=1)


def filtering_scores(metas: Mapping[str, MetaClassifier], topic: str, X: sp.spmatrix) -> np.ndarray:
    """What restrictive filtering ranks the documents X by for a topic (`filtering_margins` of the
    meta-classifiers' scores)."""
    scores = {t: meta_scores(metas[t], X) for t in [topic, *rival_topics(topic, metas)]}
    return filtering_margins(scores, topic)


def filtering_margins(scores: Mapping[str, np.ndarray], topic: str) -> np.ndarray:
    """A topic's meta confidences (scores: topic -> `meta_scores` of the same documents) less the
    strongest claim of a rival topic (`rival_topics`, `rival_margins`). One-vs-rest, a topic's latent class
    model of a crawl holding another of the node's topics can take that topic for its own: on three stored
    fixture demos the worst topic filter rose from 0.19 to 0.83 (the node alone's from 0.14 to 0.83); on 26
    stored devweb runs (104 nodes) the node alone's mean rose by 0.4-0.8 points and the meta-classifier's
    by 0.2-0.6."""
    return rival_margins(scores[topic], [scores[s] for s in rival_topics(topic, scores)])


def decision_accuracy(scores: np.ndarray, labels: np.ndarray, loss: float) -> float | None:
    """Accuracy of loss-targeted decisions against 1/0 labels; None when nothing is decided."""
    if scores.size == 0:
        return None
    decisions = loss_targeted_decisions(scores, loss)
    decided = decisions != ABSTAIN
    if not decided.any():
        return None
    truth = np.where(labels > 0, ACCEPT, -1)
    return float(np.mean(decisions[decided] == truth[decided]))


def loss_curve(scores: np.ndarray, labels: np.ndarray) -> list[dict[str, float | None]]:
    return [{"loss": loss, "accuracy": decision_accuracy(scores, labels, loss)} for loss in CURVE_LOSSES]


# -- the repository's documents of a topic ---------------------------------------------------------------
@dataclass(frozen=True)
class TopicDocuments:
    doc_ids: np.ndarray
    titles: tuple[str, ...]
    texts: tuple[str, ...]


def topic_documents(
    repo: Repository,
    topic: str,
    *,
    include_pooled: bool = True,
    unjudged: bool = False,
    subtopics: bool = True,
) -> TopicDocuments:
    """Documents the crawler (or a peer) filed in the topic's subtree, duplicates left out (with
    `unjudged`, only those without a restrictive verdict yet; without `subtopics`, only those filed in the
    topic itself)."""
    where, params = (_IN_TOPIC, _in_topic(topic)) if subtopics else (_IN_TOPIC_ITSELF, [topic])
    pooled = ("" if include_pooled else " AND origin IS NULL") + (" AND verdict IS NULL" if unjudged else "")
    rows = repo.db.execute(
        f"SELECT id, title, text FROM documents WHERE {where}{pooled} ORDER BY id", params
    ).fetchall()
    return TopicDocuments(
        np.array([r[0] for r in rows], dtype=np.int64),
        tuple(r[1] or "" for r in rows),
        tuple(f"{r[1]}\n{r[2]}" for r in rows),
    )


# A document the crawler (or a peer) filed in the topic's subtree, not a duplicate: `_in_topic` binds it.
_IN_TOPIC = "duplicate_of IS NULL AND accepted = 1 AND (topic = ? OR substr(topic, 1, ?) = ?)"
_IN_TOPIC_ITSELF = "duplicate_of IS NULL AND accepted = 1 AND topic = ?"


def _in_topic(topic: str) -> list[object]:
    return subtree_where("topic", topic)[1]  # the parameters of the condition in the SQL above


def abstain_cutoff(scores: np.ndarray, decisions: np.ndarray) -> float:
    """The largest |score| loss-targeted filtering dismissed (-1 when it dismissed none): documents that
    come later are judged against it instead of shifting every earlier verdict."""
    dismissed = np.abs(scores[decisions == ABSTAIN])
    return float(dismissed.max()) if dismissed.size else -1.0


def cutoff_decisions(scores: np.ndarray, cutoff: float) -> np.ndarray:
    """Decisions by sign, abstaining where |score| <= cutoff (see `abstain_cutoff`)."""
    decisions = np.where(scores > 0, ACCEPT, -1).astype(np.int8)
    decisions[np.abs(scores) <= cutoff] = ABSTAIN
    return decisions


VERDICT_KEYS = ("kept", "rejected", "abstained")
"""The counts of a filtering (`write_verdicts`), as a meta build and a new loss answer them."""


def write_verdicts(repo: Repository, doc_ids: np.ndarray, decisions: np.ndarray) -> dict[str, int]:
    """Store each document's restrictive verdict; how many it kept, rejected and abstained on."""
    with repo.transaction() as db:
        db.conn.executemany(
            "UPDATE documents SET verdict = ? WHERE id = ?",
            [(VERDICTS[int(d)], int(i)) for i, d in zip(doc_ids, decisions, strict=True)],
        )
    return {
        "kept": int(np.sum(decisions == ACCEPT)),
        "rejected": int(np.sum(decisions == REJECT)),
        "abstained": int(np.sum(decisions == ABSTAIN)),
    }


def verdict_counts(repo: Repository, topic: str) -> dict[str, int]:
    """The topic's documents by their restrictive verdict now (kept, rejected, abstained, and `unjudged`:
    filed since the last round judged them). Documents filed after a filtering are judged against its
    cut-off, so the counts that filtering stored grow stale; these do not."""
    rows = repo.db.execute(
        f"SELECT verdict, count(*) FROM documents WHERE {_IN_TOPIC} GROUP BY verdict", _in_topic(topic)
    ).fetchall()
    by_verdict = {verdict: int(n) for verdict, n in rows}
    names = {"kept": VERDICTS[ACCEPT], "rejected": VERDICTS[REJECT], "abstained": VERDICTS[ABSTAIN]}
    counts = {key: by_verdict.get(verdict, 0) for key, verdict in names.items()}
    return {**counts, "unjudged": by_verdict.get(None, 0)}
