"""Restrictive classification (thesis 3.2): accept, reject, or abstain when the evidence is weak.

A restrictive method decides on a subset S of the documents U and abstains on U - S;
loss = |U - S| / |U|, error = the fraction of wrong decisions within S, accuracy = 1 - error.
Two forms: loss-targeted (dismiss the L fraction of documents with the lowest confidence, 3.2.1) and
threshold (keep d in topic T if conf(d) > thresholdFactor * avg conf of T's training documents, 3.2.2).
A node filters a topic's documents by the topic's confidence less its rival topics' strongest claim
(`rival_margins`; the node's rivals of a topic are its siblings and those of the topics above it): a
document is one topic's.
Filtering a topic tree runs bottom-up; documents a topic does not accept move to its parent, and at the
root to "Miscellaneous".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from metamodels.errors import MetaInputError
from metamodels.meta_functions import ABSTAIN, ACCEPT, REJECT

MISCELLANEOUS = "Miscellaneous"


def dismissed_count(n_documents: int, loss: float) -> int:
    """How many of n documents a loss-targeted filter dismisses: round(loss * n), half up."""
    if not 0.0 <= loss <= 1.0:
        raise MetaInputError(f"loss must lie in [0, 1], got {loss}")
    return min(n_documents, math.floor(loss * n_documents + 0.5))


def loss_targeted_decisions(scores: np.ndarray | Sequence[float], loss: float) -> np.ndarray:
    """Decide by sign, abstaining on the round(loss * n) documents with the smallest |score|.

    scores are signed confidences (positive = accept). Ties in |score| keep document order, so the result
    is deterministic. A score of exactly 0 that is still decided counts as a rejection.
    """
    values = np.asarray(scores, dtype=float).reshape(-1)
    if not np.all(np.isfinite(values)):
        raise MetaInputError("scores contain NaN or infinity")
    decisions = np.where(values > 0, ACCEPT, REJECT).astype(np.int8)
    n_dismissed = dismissed_count(values.shape[0], loss)
    if n_dismissed:
        order = np.argsort(np.abs(values), kind="stable")
        decisions[order[:n_dismissed]] = ABSTAIN
    return decisions


def rival_margins(scores: np.ndarray | Sequence[float], rivals: Sequence[np.ndarray]) -> np.ndarray:
    """A topic's signed confidences less, per document, the strongest claim a rival topic makes on it
    (a claim is a positive confidence; none counts as 0).

    A document belongs to one topic (the thesis files it in one), so a rival's claim is
    evidence against this topic: a stronger one turns acceptance into rejection, a weaker one lowers the
    confidence and so makes the document one loss-targeted filtering dismisses first. Without it each
    topic is filtered one-vs-rest alone, and a topic's two-class model of a crawl that holds another of
    the node's topics can take that topic for its own. All scores must be on one scale (`meta_scores`).
    """
    values = np.asarray(scores, dtype=float).reshape(-1)
    if not rivals:
        return values
    claims = np.column_stack([np.asarray(s, dtype=float).reshape(-1) for s in rivals])
    if claims.shape[0] != values.shape[0]:
        raise MetaInputError(f"{claims.shape[0]} rival scores for {values.shape[0]} documents")
    if not (np.all(np.isfinite(values)) and np.all(np.isfinite(claims))):
        raise MetaInputError("scores contain NaN or infinity")
    return values - np.maximum(claims.max(axis=1), 0.0)


def confidence_threshold(
    training_confidences: np.ndarray | Sequence[float], threshold_factor: float
) -> float:
    """thresholdFactor * avg(conf of the topic's training documents) (thesis 3.2.2)."""
    values = np.asarray(training_confidences, dtype=float).reshape(-1)
    if values.size == 0:
        raise MetaInputError("no training confidences: a topic needs training documents for a threshold")
    return float(threshold_factor * values.mean())


def threshold_accepts(
    confidences: np.ndarray | Sequence[float],
    training_confidences: np.ndarray | Sequence[float],
    threshold_factor: float,
) -> np.ndarray:
    """True where conf(d) > thresholdFactor * avg training confidence: the document stays in its topic."""
    threshold = confidence_threshold(training_confidences, threshold_factor)
    return np.asarray(confidences, dtype=float).reshape(-1) > threshold


def _depth(topic: str, parents: Mapping[str, str | None]) -> int:
    depth, seen, node = 0, {topic}, parents[topic]
    while node is not None:
        if node in seen:
            raise MetaInputError(f"the topic tree has a cycle through {node!r}: fix the parent links")
        if node not in parents:
            raise MetaInputError(f"topic {topic!r} has unknown ancestor {node!r}: add it to the tree")
        seen.add(node)
        depth += 1
        node = parents[node]
    return depth


def filter_topic_tree(
    placement: Mapping[str, str],
    parents: Mapping[str, str | None],
    accepts: Callable[[str, list[str]], Sequence[bool] | np.ndarray],
    miscellaneous: str = MISCELLANEOUS,
) -> dict[str, str]:
    """Bottom-up restrictive filtering of a topic tree; returns each document's final topic.

    placement maps a document id to the topic it was classified into; parents maps every topic to its
    parent (None for a topic at the root level). accepts(topic, doc_ids) says, for the documents
    currently in topic, which ones that topic's restrictive classifier keeps (either form above). Deeper
    topics are filtered first, so a document moved up is judged again by its parent's classifier.
    """
    for doc_id, topic in placement.items():
        if topic not in parents:
            raise MetaInputError(f"document {doc_id!r} is placed in unknown topic {topic!r}")
    if miscellaneous in parents:
        raise MetaInputError(f"{miscellaneous!r} is reserved for documents no root topic accepts")
    current = dict(placement)
    members: dict[str, list[str]] = {topic: [] for topic in parents}
    for doc_id, topic in current.items():
        members[topic].append(doc_id)
    for topic in sorted(parents, key=lambda t: (-_depth(t, parents), t)):
        docs = members[topic]
        if not docs:
            continue
        kept = np.asarray(accepts(topic, list(docs)), dtype=bool).reshape(-1)
        if kept.shape[0] != len(docs):
            raise MetaInputError(
                f"accepts({topic!r}) returned {kept.shape[0]} flags for {len(docs)} documents"
            )
        destination = parents[topic]
        target = miscellaneous if destination is None else destination
        for doc_id, keep in zip(docs, kept, strict=True):
            if not keep:
                current[doc_id] = target
                if destination is not None:
                    members[destination].append(doc_id)
        members[topic] = [d for d, keep in zip(docs, kept, strict=True) if keep]
    return current


def loss(decisions: np.ndarray | Sequence[int]) -> float:
    """Fraction of abstentions (|U - S| / |U|); 0 for no documents."""
    values = np.asarray(decisions).reshape(-1)
    return float(np.mean(values == ABSTAIN)) if values.size else 0.0


def error(decisions: np.ndarray | Sequence[int], truth: np.ndarray | Sequence[int]) -> float:
    """Fraction of wrong decisions among the decided documents; NaN when nothing was decided."""
    values = np.asarray(decisions).reshape(-1)
    labels = np.asarray(truth).reshape(-1)
    if values.shape != labels.shape:
        raise MetaInputError(f"{values.shape[0]} decisions for {labels.shape[0]} true labels")
    decided = values != ABSTAIN
    if not decided.any():
        return math.nan
    return float(np.mean(values[decided] != labels[decided]))


def accuracy(decisions: np.ndarray | Sequence[int], truth: np.ndarray | Sequence[int]) -> float:
    """1 - error on the decided documents; NaN when nothing was decided."""
    return 1.0 - error(decisions, truth)


def correct_and_decided(
    decisions: np.ndarray | Sequence[int], truth: np.ndarray | Sequence[int]
) -> tuple[int, int]:
    """Counts for micro-averaging accuracy over many runs: (correct decisions, decisions)."""
    values = np.asarray(decisions).reshape(-1)
    labels = np.asarray(truth).reshape(-1)
    if values.shape != labels.shape:
        raise MetaInputError(f"{values.shape[0]} decisions for {labels.shape[0]} true labels")
    decided = values != ABSTAIN
    return int(np.sum(values[decided] == labels[decided])), int(decided.sum())
