"""Restrictive meta clustering (thesis 3.1.3-3.1.6, 3.3.3): map the cluster labels of several clusterings
onto common meta labels by purity, combine them with a meta function, optionally classify what the
restrictive meta result left out.

Labelings are (documents x methods) integer matrices with ABSTAIN_LABEL (-1) for a dismissed document, the
layout of `metamodels.meta_functions`, whose k-class voting, unanimous and weighted functions do the
combining.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.cluster.hierarchy import cut_tree, linkage
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import squareform
from sklearn.metrics import normalized_mutual_info_score

from metamodels.clustering import Clustering, ClusteringModel
from metamodels.errors import ClusteringError
from metamodels.linear import train_linear_svm
from metamodels.meta_functions import ABSTAIN_LABEL, k_class_meta, k_class_unanimous

META_FUNCTIONS = ("voting", "unanimous", "weighted")
MAPPING_STRATEGIES = ("similarity", "purity", "exact", "incremental", "pairwise")
EXACT_MAX_CELLS = 1_000_000  # k ** l overlap counts held at once by the exact mapping


def purity(overlaps: Sequence[float] | np.ndarray, cluster_size: int) -> float:
    """Purity of a cluster (eq. 3.7): the population variance of its overlaps with the combinations of the
    other methods' clusters, divided by the cluster's size.

    Eq. 3.7 divides by the largest overlap, but the thesis's only worked example (Figure 3.2: overlaps 4
    and 9 of a 12-document cluster, purity 0.52) divides by the size: 6.25 / 12 = 0.52, while
    6.25 / 9 = 0.69. We follow the example, and not only because it is the number printed: when the
    combinations partition the cluster, their mean overlap is size / (number of combinations), so
    var / size is the variance-to-mean ratio (index of dispersion) scaled by a constant. It is about the
    same for randomly mixed clusters of any size, as the normalisation is meant to make it, and it rests
    on a fixed count rather than on the noisiest order statistic (the maximum). Empty clusters have purity 0.
    """
    values = np.asarray(overlaps, dtype=np.float64).ravel()
    if cluster_size <= 0 or values.size == 0:
        return 0.0
    return float(values.var() / cluster_size)


def _as_labelings(labelings: np.ndarray | Sequence[Sequence[int]], k: int) -> np.ndarray:
    array = np.asarray(labelings)
    if array.ndim != 2 or array.shape[1] == 0:
        raise ClusteringError(f"labelings must be a (documents x methods) matrix, got shape {array.shape}")
    if k < 1:
        raise ClusteringError(f"k must be at least 1, got {k}")
    if not np.issubdtype(array.dtype, np.integer):
        raise ClusteringError(f"cluster labels must be integers, got dtype {array.dtype}")
    if np.any((array < ABSTAIN_LABEL) | (array >= k)):
        raise ClusteringError(f"cluster labels must lie in 0..{k - 1} or be {ABSTAIN_LABEL} (dismissed)")
    return array.astype(np.int64)


def overlap_counts(labelings: np.ndarray, k: int) -> np.ndarray:
    """overlap (eq. 3.6) of every combination of one cluster per method: a k x k x ... x k count tensor
    over the documents no method dismissed."""
    array = _as_labelings(labelings, k)
    decided = np.all(array >= 0, axis=1)
    shape = (k,) * array.shape[1]
    flat = np.ravel_multi_index(tuple(array[decided].T), shape) if decided.any() else np.zeros(0, np.int64)
    return np.bincount(flat, minlength=k ** array.shape[1]).reshape(shape)


def cluster_sizes(labelings: np.ndarray, k: int) -> np.ndarray:
    """(methods x k) number of documents each method put in each of its clusters."""
    array = _as_labelings(labelings, k)
    return np.stack([np.bincount(column[column >= 0], minlength=k) for column in array.T])


@dataclass(frozen=True, eq=False)
class MetaMapping:
    """map_i of eq. 3.4 for every method: `maps[i, a]` is the meta label of method i's cluster a.
    `cluster_purity[i, a]` is that cluster's purity in the step that mapped it; a method's mean purity
    ranks the methods (3.1.3) and weights them in the weighted meta function."""

    maps: np.ndarray
    cluster_purity: np.ndarray

    @property
    def method_purity(self) -> np.ndarray:
        return self.cluster_purity.mean(axis=1)

    @property
    def ranking(self) -> tuple[int, ...]:
        """Method indices, purest first (ties by index)."""
        return tuple(int(i) for i in np.lexsort((np.arange(self.maps.shape[0]), -self.method_purity)))

    def apply(self, labelings: np.ndarray) -> np.ndarray:
        """result_i(d) = map_i(C_i(d)) (eq. 3.4); dismissed documents stay dismissed."""
        array = _as_labelings(labelings, self.maps.shape[1])
        if array.shape[1] != self.maps.shape[0]:
            raise ClusteringError(f"mapping is for {self.maps.shape[0]} methods, got {array.shape[1]}")
        mapped = np.take_along_axis(self.maps.T, np.maximum(array, 0), axis=0)
        return np.where(array >= 0, mapped, ABSTAIN_LABEL)


def _map_by_purity(counts: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The purity mapping of 3.1.3 on an overlap tensor: for meta label m = 1..k, take the remaining cluster
    of highest purity (its overlaps with the combinations of the other methods' remaining clusters), give
    its combination of largest overlap label m and drop those clusters. Ties go to the first method, cluster
    and combination in index order. Over all steps this looks at k!^(l-1) combinations."""
    n_methods, k = counts.ndim, counts.shape[0]
    remaining = [list(range(k)) for _ in range(n_methods)]
    maps = np.full((n_methods, k), -1, dtype=np.int64)
    purities = np.zeros((n_methods, k))
    for meta_label in range(k):
        sub = counts[np.ix_(*remaining)]
        step_purity = np.zeros((n_methods, len(remaining[0])))
        for method in range(n_methods):
            for position, cluster in enumerate(remaining[method]):
                step_purity[method, position] = purity(
                    np.take(sub, position, axis=method), sizes[method, cluster]
                )
        method, position = np.unravel_index(int(np.argmax(step_purity)), step_purity.shape)
        overlaps = np.take(sub, position, axis=method)
        combination = list(np.unravel_index(int(np.argmax(overlaps)), overlaps.shape))
        combination.insert(int(method), int(position))
        for m, pos in enumerate(combination):
            cluster = remaining[m].pop(int(pos))
            maps[m, cluster] = meta_label
            purities[m, cluster] = step_purity[m, pos]
    return maps, purities


def map_exact(labelings: np.ndarray, k: int) -> MetaMapping:
    """Purity mapping over all methods at once (k ** l overlap counts; refuses more than EXACT_MAX_CELLS)."""
    array = _as_labelings(labelings, k)
    if k ** array.shape[1] > EXACT_MAX_CELLS:
        raise ClusteringError(
            f"exact mapping of {array.shape[1]} methods with k={k} needs {k ** array.shape[1]} overlap"
            " counts: use the 'incremental' or 'pairwise' strategy"
        )
    maps, purities = _map_by_purity(overlap_counts(array, k), cluster_sizes(array, k))
    return MetaMapping(maps=maps, cluster_purity=purities)


def _map_onto(reference: np.ndarray, other: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Map `other`'s clusters onto `reference`'s labels by the two-method purity mapping; also return the
    purities (2 x k) of that mapping."""
    pair = np.stack([reference, other], axis=1)
    maps, purities = _map_by_purity(overlap_counts(pair, k), cluster_sizes(pair, k))
    meta_to_reference = np.argsort(maps[0])
    return meta_to_reference[maps[1]], purities


def map_incremental(labelings: np.ndarray, k: int) -> MetaMapping:
    """Greedy variant 1 of 3.1.3: fix C_1 and add the methods one by one, mapping each onto the candidate
    clusters built so far. A candidate cluster is the documents a strict majority of the methods mapped so
    far put there (for two methods: their intersection). Cost: l - 1 two-method mappings."""
    array = _as_labelings(labelings, k)
    n_methods = array.shape[1]
    maps = np.tile(np.arange(k), (n_methods, 1))
    purities = np.zeros((n_methods, k))
    mapped = array.copy()
    candidate = array[:, 0]
    for method in range(1, n_methods):
        maps[method], pair_purity = _map_onto(candidate, array[:, method], k)
        if method == 1:
            purities[0] = pair_purity[0]
        purities[method] = pair_purity[1]
        mapped[:, method] = np.where(array[:, method] >= 0, maps[method][np.maximum(array[:, method], 0)], -1)
        candidate = k_class_meta(mapped[:, : method + 1], k, min_share=0.5) if k > 1 else mapped[:, 0]
    return MetaMapping(maps=maps, cluster_purity=purities)


def map_pairwise(labelings: np.ndarray, k: int) -> MetaMapping:
    """Greedy variant 2 of 3.1.3: map every C_i onto C_(i-1) by the two-method purity mapping and compose
    the maps transitively back to C_1's labels."""
    array = _as_labelings(labelings, k)
    n_methods = array.shape[1]
    maps = np.tile(np.arange(k), (n_methods, 1))
    purities = np.zeros((n_methods, k))
    for method in range(1, n_methods):
        onto_previous, pair_purity = _map_onto(array[:, method - 1], array[:, method], k)
        maps[method] = maps[method - 1][onto_previous]
        if method == 1:
            purities[0] = pair_purity[0]
        purities[method] = pair_purity[1]
    return MetaMapping(maps=maps, cluster_purity=purities)


def _contingency(first: np.ndarray, second: np.ndarray, k: int) -> np.ndarray:
    """(k x k) counts of the documents both labelings decided, by first's and second's label."""
    both = (first >= 0) & (second >= 0)
    counts = np.zeros((k, k))
    np.add.at(counts, (first[both], second[both]), 1)
    return counts


def hungarian_onto(reference: np.ndarray, other: np.ndarray, k: int) -> np.ndarray:
    """One-to-one map of `other`'s clusters onto `reference`'s labels that keeps the most shared documents
    (Hungarian method on the overlap counts): `result[a]` is the reference label of other's cluster a."""
    rows, cols = linear_sum_assignment(_contingency(reference, other, k), maximize=True)
    onto = np.empty(k, dtype=np.int64)
    onto[cols] = rows
    return onto


def cluster_jaccard(labelings: np.ndarray, k: int) -> np.ndarray:
    """Jaccard similarity |A & B| / |A | B| of every pair of clusters of all methods: row i * k + a is
    method i's cluster a; an empty cluster is similar to nothing."""
    array = _as_labelings(labelings, k)
    n_docs, n_methods = array.shape
    decided = array >= 0
    rows = (np.arange(n_methods) * k + array)[decided]
    docs = np.broadcast_to(np.arange(n_docs)[:, None], array.shape)[decided]
    members = sp.csr_matrix((np.ones(rows.size), (rows, docs)), shape=(n_methods * k, n_docs))
    shared = (members @ members.T).toarray()
    sizes = np.diag(shared)
    union = sizes[:, None] + sizes[None, :] - shared
    return np.divide(shared, union, out=np.zeros_like(shared), where=union > 0)


def _pairwise_purity(array: np.ndarray, k: int) -> np.ndarray:
    """(methods x k) each cluster's purity (eq. 3.7) against every other method's clusters, averaged over
    those methods: the per-method form of 3.1.3's purity that needs no k ** l overlap tensor."""
    n_methods = array.shape[1]
    sizes = cluster_sizes(array, k)
    purities = np.zeros((n_methods, k))
    for i, j in itertools.permutations(range(n_methods), 2):
        counts = _contingency(array[:, i], array[:, j], k)
        purities[i] += [purity(counts[a], sizes[i, a]) for a in range(k)]
    return purities / max(n_methods - 1, 1)


def map_by_similarity(labelings: np.ndarray, k: int) -> MetaMapping:
    """Meta mapping by grouping similar clusters (the meta-clustering algorithm MCLA of Strehl and Ghosh,
    2002): the l * k clusters of all methods are grouped into k meta clusters by average-linkage
    agglomeration on their Jaccard distance, and every cluster takes its group's meta label.

    Unlike the purity mapping this map need not be one-to-one. k-means with a fixed k splits a large topic
    in two when the collection is unbalanced and lumps small topics together, and different methods split
    in different places: on Reuters with k = 5 (earn 3,900 documents, coffee 110) every base method put
    earn into two or three clusters. A one-to-one map must then give one of those pieces another topic's
    label, where it contradicts the methods that kept the topic whole (restrictive meta error 0.405 against
    0.386 for restrictive k-means at the same loss); grouping lets both pieces carry earn's label (0.391
    against 0.420). One guard: a method left with a single meta label says nothing about any document (with
    unanimity it vetoes every other label). That happens at k = 2, when a method's larger cluster bridges
    both topics and average linkage then joins them; the methods then share no k-way structure to group, so
    every method is mapped one-to-one (`hungarian_onto`) onto the method agreeing most with the others.
    `cluster_purity` is `_pairwise_purity`, for the purity ranking.
    """
    array = _as_labelings(labelings, k)
    n_methods = array.shape[1]
    purities = _pairwise_purity(array, k)
    if k == 1 or n_methods == 1:
        return MetaMapping(maps=np.tile(np.arange(k), (n_methods, 1)), cluster_purity=purities)
    distance = 1.0 - cluster_jaccard(array, k)
    np.fill_diagonal(distance, 0.0)
    groups = cut_tree(linkage(squareform(distance, checks=False), method="average"), n_clusters=k)
    maps = groups.ravel().astype(np.int64).reshape(n_methods, k)
    if any(np.unique(row).size < 2 for row in maps):
        reference = array[:, int(np.argmax(method_agreement(array, k)))]
        maps = np.stack([hungarian_onto(reference, array[:, m], k) for m in range(n_methods)])
    return MetaMapping(maps=maps, cluster_purity=purities)


def meta_mapping(labelings: np.ndarray, k: int, strategy: str = "auto") -> MetaMapping:
    """The meta mapping by `strategy`: "similarity" (`map_by_similarity`, many-to-one) or one of the purity
    mappings of 3.1.3: "exact", its greedy variants "incremental" and "pairwise", and "purity" (also
    "auto"), which is exact while k ** l <= EXACT_MAX_CELLS and incremental above. `consensus` chooses
    between similarity and purity per document set."""
    array = _as_labelings(labelings, k)
    if strategy == "similarity":
        return map_by_similarity(array, k)
    if strategy in ("auto", "purity"):
        strategy = "exact" if k ** array.shape[1] <= EXACT_MAX_CELLS else "incremental"
    if strategy == "exact":
        return map_exact(array, k)
    if strategy == "incremental":
        return map_incremental(array, k)
    if strategy == "pairwise":
        return map_pairwise(array, k)
    raise ClusteringError(
        f"unknown mapping strategy {strategy!r}: choose auto or one of {MAPPING_STRATEGIES}"
    )


def average_nmi(consensus: np.ndarray, labelings: np.ndarray) -> float:
    """Mean normalised mutual information between a consensus labeling and every method's labels, over the
    documents the consensus decided (Strehl and Ghosh's ANMI, 2002); -1 if it decided none."""
    array = np.asarray(labelings)
    decided = np.asarray(consensus) >= 0
    if not decided.any():
        return -1.0
    return float(np.mean([normalized_mutual_info_score(col[decided], consensus[decided]) for col in array.T]))


@dataclass(frozen=True, eq=False)
class Consensus:
    """A confidence-voted meta clustering and the mapping it was built on (`strategy` names it)."""

    clustering: Clustering
    mapping: MetaMapping
    strategy: str


CONSENSUS_STRATEGIES = ("similarity", "purity")


def consensus(
    labelings: np.ndarray,
    confidences: np.ndarray,
    k: int,
    strategies: Sequence[str] = CONSENSUS_STRATEGIES,
    weights: np.ndarray | None = None,
) -> Consensus:
    """The confidence vote (`confidence_vote`) over each mapping strategy's labels, keeping the one whose
    result shares the most information with the methods (highest `average_nmi`; ties to the first listed):
    Strehl and Ghosh's supra-consensus choice between consensus functions.

    Neither mapping is best everywhere. Many peers' k-means models on a balanced tuple mostly differ by a
    permutation, and a small stray cluster of one model can take a group of its own in the similarity
    mapping and merge two topics (20 Newsgroups, 16 peers: purity 0.638, similarity 0.596 at loss 0); on
    unbalanced Reuters tuples the models split a large topic differently, and only the similarity mapping
    lets their pieces agree (similarity 0.714, purity 0.676). Choosing per peer by ANMI gave 0.632 and
    0.705: a consensus that merged two topics shares less information with the methods that kept them
    apart, and one that mislabels pieces of a topic shares less with the methods that kept it whole.
    """
    array = _as_labelings(labelings, k)
    best: tuple[float, Consensus] | None = None
    for strategy in strategies:
        mapping = meta_mapping(array, k, strategy)
        voted = confidence_vote(mapping.apply(array), confidences, k, weights)
        score = average_nmi(voted.labels, array)
        if best is None or score > best[0]:
            best = (score, Consensus(clustering=voted, mapping=mapping, strategy=strategy))
    if best is None:
        raise ClusteringError(f"no mapping strategy given: choose from {MAPPING_STRATEGIES}")
    return best[1]


def ranking_weights(mapping: MetaMapping) -> np.ndarray:
    """Weights for the weighted meta function from the purity ranking (3.1.4): the method ranked r-th of l
    (r = 0 purest) gets l - r, normalised to sum 1.

    Rank weights rather than the purities themselves: a purity grows with the cluster sizes and is no
    calibrated quality, and one method whose purity exceeds the others' sum would decide alone. With rank
    weights the purest method breaks ties, and a tie of weights (e.g. 3 against 2 + 1) abstains.
    """
    n_methods = mapping.maps.shape[0]
    weights = np.zeros(n_methods)
    weights[list(mapping.ranking)] = np.arange(n_methods, 0, -1, dtype=np.float64)
    return weights / weights.sum()


def pair_agreement(first: np.ndarray, second: np.ndarray, k: int) -> float:
    """Share of the documents both clusterings decided that lie in the best one-to-one match of their
    clusters (eq. 3.20 with one clustering as the truth of the other; symmetric). NaN if none is shared."""
    counts = _contingency(first, second, k)
    if not counts.any():
        return float("nan")
    rows, cols = linear_sum_assignment(counts, maximize=True)
    return float(counts[rows, cols].sum() / counts.sum())


def method_agreement(labelings: np.ndarray, k: int) -> np.ndarray:
    """Each method's quality as its mean agreement (`pair_agreement`) with every other method.

    The ranking of 3.1.3 ("a failing method can be excluded") needs a measure that drops when a method
    fails. Purity does not: a method that lumps several topics into one big cluster gets a high purity
    there (the variance of the overlaps grows with the size of the cluster), and on 20 Newsgroups with
    k = 5 the purity ranking put the failing rank-2 SVD first in 22 of 50 tuples. A failing method, however,
    disagrees with the others, which (as long as they work) agree with one another. Needs two methods.
    """
    array = _as_labelings(labelings, k)
    n_methods = array.shape[1]
    if n_methods < 2:
        raise ClusteringError("agreement needs at least two methods to compare")
    pairs = np.eye(n_methods)
    for i, j in itertools.combinations(range(n_methods), 2):
        pairs[i, j] = pairs[j, i] = pair_agreement(array[:, i], array[:, j], k)
    return (pairs.sum(axis=1) - 1.0) / (n_methods - 1)


def without_weakest(agreement: np.ndarray) -> np.ndarray:
    """Indices of the methods to combine: all but the one of lowest agreement (first in index order on a
    tie), as long as at least two remain; with two methods or fewer, all of them.

    A unanimous meta result is only as selective as its least reliable member lets it be: documents a
    failing method happens to agree on are no more likely correct, while those it disagrees on are lost.
    """
    quality = np.asarray(agreement, dtype=np.float64)
    if quality.size <= 2:
        return np.arange(quality.size)
    weakest = int(np.argmin(np.nan_to_num(quality, nan=-np.inf)))
    return np.delete(np.arange(quality.size), weakest)


def agreement_weights(agreement: np.ndarray, k: int) -> np.ndarray:
    """Weights for the weighted meta function: each method's agreement above chance (1/k, what two
    unrelated clusterings already share in the best match), normalised to sum 1; all equal if no method
    agrees above chance."""
    above = np.clip(np.nan_to_num(np.asarray(agreement, dtype=np.float64)) - 1.0 / k, 0.0, None)
    if above.sum() <= 0:
        return np.full(above.size, 1.0 / above.size)
    return above / above.sum()


def combine(mapped: np.ndarray, k: int, function: str, weights: np.ndarray | None = None) -> np.ndarray:
    """The meta result (3.8/3.9 generalised to k clusters) of mapped labelings: "voting" (plurality, a tie
    abstains), "unanimous" (every method gives the same label) or "weighted" (weighted plurality)."""
    if function == "voting":
        return k_class_meta(mapped, k)
    if function == "unanimous":
        return k_class_unanimous(mapped, k)
    if function == "weighted":
        if weights is None:
            raise ClusteringError("the weighted meta function needs weights, e.g. ranking_weights(mapping)")
        return k_class_meta(mapped, k, weights=weights)
    raise ClusteringError(f"unknown meta function {function!r}: choose one of {META_FUNCTIONS}")


def confidence_vote(
    mapped: np.ndarray, confidences: np.ndarray, k: int, weights: np.ndarray | None = None
) -> Clustering:
    """Meta clustering with a confidence for loss-targeted filtering (the clustering form of eq. 3.13):
    each method votes for its mapped label with weight w_i * conf_i(d); the label with the largest total
    wins, and the meta confidence is the lead over the runner-up divided by the total weight."""
    array = _as_labelings(mapped, k)
    conf = np.asarray(confidences, dtype=np.float64)
    if conf.shape != array.shape:
        raise ClusteringError(f"confidences have shape {conf.shape}, labelings {array.shape}")
    w = np.ones(array.shape[1]) if weights is None else np.asarray(weights, dtype=np.float64)
    scores = np.zeros((array.shape[0], k))
    for method in range(array.shape[1]):
        voted = array[:, method] >= 0
        scores[np.flatnonzero(voted), array[voted, method]] += w[method] * np.clip(
            conf[voted, method], 0, None
        )
    ordered = np.sort(scores, axis=1)
    lead = ordered[:, -1] - (ordered[:, -2] if k > 1 else 0.0)
    return Clustering(labels=np.argmax(scores, axis=1), confidence=lead / max(w.sum(), 1e-12), k=k)


def apply_models(models: Sequence[ClusteringModel], X: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    """Every received model applied to a peer's own documents (3.3.3): (documents x models) labels and
    confidences, ready for `meta_mapping`."""
    if not models:
        raise ClusteringError("no clustering models to apply")
    ks = {model.k for model in models}
    if len(ks) != 1:
        raise ClusteringError(f"models with different numbers of clusters {sorted(ks)} cannot be combined")
    results = [model.assign(X) for model in models]
    return (
        np.stack([r.labels for r in results], axis=1),
        np.stack([r.confidence for r in results], axis=1),
    )


def classify_dismissed(X: sp.csr_matrix, meta_labels: np.ndarray, k: int, *, C: float = 1.0) -> np.ndarray:
    """Zero-loss meta clustering (3.1.6): train linear SVMs (one per cluster against the rest; one for k = 2)
    on the documents the restrictive meta result kept, and label the dismissed ones by the largest decision
    value. Clusters that kept no documents cannot be predicted."""
    labels = np.asarray(meta_labels, dtype=np.int64)
    kept = labels >= 0
    if kept.all():
        return labels.copy()
    present = np.unique(labels[kept])
    if present.size < 2:
        raise ClusteringError(
            "the meta result kept fewer than two clusters: nothing to train a classifier on"
        )
    X_kept, X_dismissed = X[kept], X[~kept]
    if present.size == 2:
        model = train_linear_svm(X_kept, (labels[kept] == present[1]).astype(np.int64), C=C)
        predicted = np.where(model.decision_function(X_dismissed) > 0, present[1], present[0])
    else:
        scores = np.stack(
            [
                train_linear_svm(X_kept, (labels[kept] == cluster).astype(np.int64), C=C).decision_function(
                    X_dismissed
                )
                for cluster in present
            ],
            axis=1,
        )
        predicted = present[np.argmax(scores, axis=1)]
    result = labels.copy()
    result[~kept] = predicted
    return result
