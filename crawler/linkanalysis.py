"""Link analysis for the focus loop (thesis 1.5, 1.6, 2.10, 4.6): HITS in the Bharat-Henzinger form and
PageRank with confidence-weighted transitions, on scipy sparse matrices, plus archetype and hub selection.

Graphs are given as node ids, their hosts, and (source, target) edges; edges to unknown nodes, self-links
and repeated links are dropped (BINGO! ignores duplicate links).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

HITS_ITERATIONS = 20  # thesis 2.16: 20 power iterations
PAGERANK_DAMPING = 0.15  # delta, the random-jump probability (thesis: 0.1..0.2)
PAGERANK_ITERATIONS = 50


@dataclass(frozen=True)
class LinkGraph:
    """Nodes 0..n-1 (`ids[i]` names node i) and deduplicated edges between distinct nodes."""

    ids: tuple[int, ...]
    hosts: tuple[str, ...]
    sources: np.ndarray
    targets: np.ndarray

    @property
    def size(self) -> int:
        return len(self.ids)

    @classmethod
    def build(cls, hosts: Mapping[int, str], edges: Sequence[tuple[int, int]]) -> LinkGraph:
        ids = tuple(sorted(hosts))
        index = {node: i for i, node in enumerate(ids)}
        pairs = {(index[s], index[t]) for s, t in edges if s in index and t in index and s != t}
        ordered = sorted(pairs)
        sources = np.array([s for s, _ in ordered], dtype=np.int64)
        targets = np.array([t for _, t in ordered], dtype=np.int64)
        return cls(ids, tuple(hosts[i] for i in ids), sources, targets)

    def adjacency(self, weights: np.ndarray | None = None) -> sp.csr_matrix:
        data = np.ones(self.sources.size) if weights is None else weights
        return sp.csr_matrix((data, (self.sources, self.targets)), shape=(self.size, self.size))


@dataclass(frozen=True)
class HitsScores:
    authority: np.ndarray
    hub: np.ndarray


def bharat_henzinger_weights(graph: LinkGraph) -> tuple[np.ndarray, np.ndarray]:
    """(authority weight, hub weight) per edge: 0 within a host; k edges from one host to one page get
    1/k authority weight each; l edges from one page to one host get 1/l hub weight each."""
    host_ids = {h: i for i, h in enumerate(sorted(set(graph.hosts)))}
    node_host = np.array([host_ids[h] for h in graph.hosts], dtype=np.int64)
    src_host, dst_host = node_host[graph.sources], node_host[graph.targets]
    cross = src_host != dst_host
    auth = np.zeros(graph.sources.size)
    hub = np.zeros(graph.sources.size)
    if cross.any():
        auth_key = src_host[cross] * graph.size + graph.targets[cross]  # (source host, target page)
        hub_key = graph.sources[cross] * len(host_ids) + dst_host[cross]  # (source page, target host)
        auth[cross] = 1.0 / _group_counts(auth_key)
        hub[cross] = 1.0 / _group_counts(hub_key)
    return auth, hub


def _group_counts(keys: np.ndarray) -> np.ndarray:
    _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    return counts[inverse].astype(np.float64)


def hits(graph: LinkGraph, iterations: int = HITS_ITERATIONS) -> HitsScores:
    """Bharat-Henzinger HITS ("imp"): a(n) = sum h(m) auth_wt(m,n), h(m) = sum a(n) hub_wt(m,n),
    L2-normalised after every iteration, from uniform scores."""
    n = graph.size
    if n == 0:
        return HitsScores(np.zeros(0), np.zeros(0))
    auth_w, hub_w = bharat_henzinger_weights(graph)
    authority_matrix = graph.adjacency(auth_w).T.tocsr()
    hub_matrix = graph.adjacency(hub_w)
    a = np.full(n, 1.0 / np.sqrt(n))
    h = a.copy()
    for _ in range(iterations):
        a = _unit(authority_matrix @ h)
        h = _unit(hub_matrix @ a)
    return HitsScores(a, h)


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


def pagerank(
    graph: LinkGraph,
    confidence: np.ndarray | None = None,
    damping: float = PAGERANK_DAMPING,
    iterations: int = PAGERANK_ITERATIONS,
) -> np.ndarray:
    """p = (1 - delta) A^T p + delta/N, with A[u,v] = E[u,v] conf(v) / sum_i E[u,i] conf(i) (eq. 4.20; plain
    PageRank when `confidence` is None). Confidences are clipped at 0; a node whose out-links carry no
    weight is a dead end and jumps uniformly (delta = 1 there, thesis 1.6). Sums to 1."""
    n = graph.size
    if n == 0:
        return np.zeros(0)
    weights = np.ones(graph.sources.size)
    if confidence is not None:
        weights = np.clip(np.asarray(confidence, dtype=np.float64), 0.0, None)[graph.targets]
    out = np.bincount(graph.sources, weights=weights, minlength=n)
    live = out > 0
    scaled = np.where(live[graph.sources], weights / np.where(live, out, 1.0)[graph.sources], 0.0)
    transition_t = sp.csr_matrix((scaled, (graph.targets, graph.sources)), shape=(n, n))
    p = np.full(n, 1.0 / n)
    for _ in range(iterations):
        dead_mass = float(p[~live].sum())
        p = (1.0 - damping) * (transition_t @ p) + (damping * float(p[live].sum()) + dead_mass) / n
    return p / p.sum()


@dataclass(frozen=True)
class Archetypes:
    """Node indices chosen for one topic: by authority, by confidence, and the hubs to crawl first."""

    by_authority: tuple[int, ...]
    by_confidence: tuple[int, ...]
    hubs: tuple[int, ...]

    @property
    def chosen(self) -> tuple[int, ...]:
        return tuple(dict.fromkeys(self.by_authority + self.by_confidence))


def select_archetypes(
    authority: np.ndarray,
    hub: np.ndarray,
    confidence: np.ndarray,
    candidates: np.ndarray,
    mean_training_confidence: float,
    mean_training_authority: float,
    n_auth: int,
    n_conf: int,
    n_hub: int,
    hub_candidates: np.ndarray | None = None,
) -> Archetypes:
    """Thesis 1.7's relaxed rule among `candidates` (the topic's accepted pages): of the top n_auth by
    authority keep those whose confidence beats the training documents' mean; of the top n_conf by
    confidence keep those whose authority beats the training documents' mean. Hubs: the top n_hub."""
    candidates = np.asarray(candidates, dtype=np.int64)
    if candidates.size == 0:
        return Archetypes((), (), ())
    top_auth = top_by(candidates, authority, n_auth)
    top_conf = top_by(candidates, confidence, n_conf)
    by_auth = tuple(int(i) for i in top_auth if confidence[i] > mean_training_confidence)
    by_conf = tuple(int(i) for i in top_conf if authority[i] > mean_training_authority)
    pool = candidates if hub_candidates is None else np.asarray(hub_candidates, dtype=np.int64)
    hubs = tuple(int(i) for i in top_by(pool, hub, n_hub) if hub[i] > 0)
    return Archetypes(by_auth, by_conf, hubs)


def top_by(candidates: np.ndarray, score: np.ndarray, k: int) -> np.ndarray:
    """The k candidates with the highest scores, best first (ties: lower index first)."""
    if k <= 0:
        return candidates[:0]
    order = np.lexsort((candidates, -score[candidates]))
    return candidates[order[:k]]
