"""Data splits for the collaborative experiments of thesis 3.4.4/3.4.5.

Training documents are spread over n peers in equal-sized subsets with about 15% overlap ("peers that
contain non-disjoint training data"), read here as: about `overlap` of each peer's documents are also held
by some other peer. Splitting is per class, so every peer sees every class.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from scipy import stats

T = TypeVar("T")


def split_with_overlap(
    items: Sequence[T], n_peers: int, overlap: float, rng: np.random.Generator
) -> list[list[T]]:
    """Equal-sized subsets (sizes differ by at most one) in which about `overlap` of each peer's documents
    are also held by another peer.

    The peers form a ring over a disjoint partition: peer i also copies b random documents of peer i+1's
    chunk. Each peer then shares its b copies and the b own documents its predecessor copied, so with a
    chunk of c documents the shared fraction is 2b / (c + b); b = round(c * overlap / (2 - overlap)).
    """
    if n_peers < 1:
        raise ValueError(f"need at least one peer, got {n_peers}")
    if not 0.0 <= overlap < 1.0:
        raise ValueError(f"overlap must lie in [0, 1), got {overlap}")
    order = rng.permutation(len(items))
    chunks = [order[i::n_peers] for i in range(n_peers)]
    subsets = []
    for peer, chunk in enumerate(chunks):
        successor = chunks[(peer + 1) % n_peers]
        borrowed_count = 0 if n_peers == 1 else math.floor(len(chunk) * overlap / (2.0 - overlap) + 0.5)
        borrowed = rng.choice(successor, size=min(borrowed_count, len(successor)), replace=False)
        subsets.append([items[i] for i in np.concatenate([chunk, borrowed])])
    return subsets


def stratified_split_with_overlap(
    items_by_class: Sequence[Sequence[T]], n_peers: int, overlap: float, rng: np.random.Generator
) -> list[list[T]]:
    """`split_with_overlap` per class, merged per peer."""
    merged: list[list[T]] = [[] for _ in range(n_peers)]
    for items in items_by_class:
        for peer, subset in enumerate(split_with_overlap(items, n_peers, overlap, rng)):
            merged[peer].extend(subset)
    return merged


def peer_groups(n_peers: int, group_size: int, rng: np.random.Generator) -> list[list[int]]:
    """Disjoint random groups of `group_size` peers covering all n_peers (so every peer counts once)."""
    if group_size < 1 or n_peers % group_size:
        raise ValueError(f"group size {group_size} must divide the number of peers {n_peers}")
    order = rng.permutation(n_peers)
    return [sorted(order[i : i + group_size].tolist()) for i in range(0, n_peers, group_size)]


def shared_fraction(subsets: Sequence[Sequence[T]]) -> float:
    """Mean share of a peer's documents that at least one other peer also holds."""
    counts: dict[T, int] = {}
    for subset in subsets:
        for item in set(subset):
            counts[item] = counts.get(item, 0) + 1
    shares = [sum(counts[item] > 1 for item in subset) / len(subset) for subset in subsets if subset]
    return float(np.mean(shares)) if shares else 0.0


@dataclass(frozen=True)
class TopicPairSplit:
    """One topic pair of thesis 3.4.4: training documents over peers, and distinct validation documents.

    Labels are +1 for the pair's first topic and -1 for the second; rows index `features`.
    """

    topics: tuple[str, str]
    train_rows: np.ndarray
    train_truth: np.ndarray
    validation_rows: np.ndarray
    validation_truth: np.ndarray
    peer_positions: list[np.ndarray]  # per peer: positions into train_rows (its training subset)


def exclusive_topic_members(labels: Sequence[Sequence[str]]) -> dict[str, list[int]]:
    """Row indices of every topic (a multi-label document counts for each of its topics)."""
    members: dict[str, list[int]] = {}
    for row, doc_labels in enumerate(labels):
        for label in set(doc_labels):
            members.setdefault(label, []).append(row)
    return members


def eligible_pairs(
    labels: Sequence[Sequence[str]], min_docs: int, train_per_class: int, min_validation: int
) -> list[tuple[str, str]]:
    """Topic pairs whose topics have more than min_docs documents and which, counting only documents in
    one topic of the pair and not the other, leave train_per_class + min_validation per class."""
    members = exclusive_topic_members(labels)
    topics = sorted(t for t, rows in members.items() if len(rows) > min_docs)
    pairs = []
    for i, first in enumerate(topics):
        for second in topics[i + 1 :]:
            a, b = set(members[first]), set(members[second])
            if min(len(a - b), len(b - a)) >= train_per_class + min_validation:
                pairs.append((first, second))
    return pairs


def split_topic_pair(
    labels: Sequence[Sequence[str]],
    pair: tuple[str, str],
    *,
    train_per_class: int,
    validation_per_class: int,
    n_peers: int,
    overlap: float,
    rng: np.random.Generator,
) -> TopicPairSplit:
    """Random training and distinct validation documents per class; training spread over the peers."""
    members = exclusive_topic_members(labels)
    a, b = set(members[pair[0]]), set(members[pair[1]])
    classes = [np.array(sorted(a - b)), np.array(sorted(b - a))]
    train_by_class, validation_by_class = [], []
    for rows in classes:
        chosen = rng.permutation(rows)
        train_by_class.append(chosen[:train_per_class])
        validation_by_class.append(chosen[train_per_class : train_per_class + validation_per_class])
    train_rows = np.concatenate(train_by_class)
    train_truth = np.concatenate([np.ones(len(train_by_class[0])), -np.ones(len(train_by_class[1]))])
    positions = [
        np.arange(len(train_by_class[0])),
        len(train_by_class[0]) + np.arange(len(train_by_class[1])),
    ]
    peer_positions = [np.array(p) for p in stratified_split_with_overlap(positions, n_peers, overlap, rng)]
    validation_rows = np.concatenate(validation_by_class)
    validation_truth = np.concatenate(
        [np.ones(len(validation_by_class[0])), -np.ones(len(validation_by_class[1]))]
    )
    return TopicPairSplit(pair, train_rows, train_truth, validation_rows, validation_truth, peer_positions)


def choose_pairs(
    pairs: Sequence[tuple[str, str]], count: int, rng: np.random.Generator
) -> list[tuple[str, str]]:
    """`count` random pairs (all of them when there are no more), in a stable order."""
    if count >= len(pairs):
        return list(pairs)
    chosen = rng.choice(len(pairs), size=count, replace=False)
    return [pairs[i] for i in sorted(chosen)]


def t_interval(values: Sequence[float], confidence: float = 0.95) -> float:
    """Half-width of the Student-t confidence interval of the mean of `values` (0 for fewer than 2)."""
    data = np.asarray([v for v in values if not math.isnan(v)], dtype=float)
    if data.size < 2:
        return 0.0
    quantile = float(stats.t.ppf(0.5 + confidence / 2.0, data.size - 1))
    return quantile * float(data.std(ddof=1)) / math.sqrt(data.size)
