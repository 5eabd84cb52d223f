"""Data splits for the collaborative experiments of thesis 3.4.4/3.4.5.

Training documents are spread over n peers in equal-sized subsets with about 15% overlap ("peers that
contain non-disjoint training data"), read here as: about `overlap` of each peer's documents are also held
by some other peer. Splitting is per class, so every peer sees every class.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeVar

import numpy as np

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
