"""Meta functions: combine several base methods' results on the same documents into one restrictive result.

Thesis eq. 3.8/3.9 (clustering) and 3.12/3.13 (classification): for two classes every base method answers
+1 or -1 (or a signed real confidence), the weighted sum is compared with thresholds t1 > t2, and the meta
result abstains (0) between them. Voting, unanimous decision and weighted averaging are special cases. The
k-class form works on class labels 0..k-1 (ABSTAIN_LABEL = -1 for "no decision").

Both the meta-classifier and meta-clustering use these functions, so they take plain arrays: one row per
document, one column per base method.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from metamodels.errors import MetaInputError

ACCEPT = 1
REJECT = -1
ABSTAIN = 0
ABSTAIN_LABEL = -1


def _as_results(results: np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
    array = np.asarray(results, dtype=float)
    if array.ndim == 1:
        array = array.reshape(-1, 1)
    if array.ndim != 2:
        raise MetaInputError(f"results must be a (documents x methods) matrix, got shape {array.shape}")
    if array.shape[1] == 0:
        raise MetaInputError("results have no base methods: pass at least one column")
    if not np.all(np.isfinite(array)):
        raise MetaInputError("results contain NaN or infinity: drop or repair those base results first")
    return array


def _as_weights(weights: Sequence[float] | np.ndarray | None, n_methods: int) -> np.ndarray:
    if weights is None:
        return np.ones(n_methods)
    w = np.asarray(weights, dtype=float).reshape(-1)
    if w.shape[0] != n_methods:
        raise MetaInputError(f"got {w.shape[0]} weights for {n_methods} base methods: pass one per method")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise MetaInputError("weights must be finite and non-negative")
    return w


def weighted_sum(
    results: np.ndarray | Sequence[Sequence[float]], weights: Sequence[float] | np.ndarray | None = None
) -> np.ndarray:
    """The linear combination sum_i res_i(d) * w_i of eq. 3.9/3.13, one value per document."""
    array = _as_results(results)
    return array @ _as_weights(weights, array.shape[1])


def threshold_decisions(combined: np.ndarray | Sequence[float], t1: float, t2: float) -> np.ndarray:
    """+1 where combined > t1, -1 where combined < t2, 0 (abstain) otherwise; needs t1 >= t2."""
    if t1 < t2:
        raise MetaInputError(f"thresholds need t1 >= t2, got t1={t1} < t2={t2}")
    values = np.asarray(combined, dtype=float)
    out = np.zeros(values.shape, dtype=np.int8)
    out[values > t1] = ACCEPT
    out[values < t2] = REJECT
    return out


def linear_meta(
    results: np.ndarray | Sequence[Sequence[float]],
    weights: Sequence[float] | np.ndarray | None = None,
    t1: float = 0.0,
    t2: float = 0.0,
) -> np.ndarray:
    """Eq. 3.9/3.13: the thresholded weighted sum of base results (decisions in {+1, -1} or confidences)."""
    return threshold_decisions(weighted_sum(results, weights), t1, t2)


def voting(
    results: np.ndarray | Sequence[Sequence[float]], weights: Sequence[float] | np.ndarray | None = None
) -> np.ndarray:
    """Majority of the (weighted) signs; a tie abstains."""
    return linear_meta(np.sign(_as_results(results)), weights, 0.0, 0.0)


def unanimous(results: np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
    """The common decision when every base method says the same non-zero thing; 0 otherwise.

    Written directly rather than as thresholds on the sum, so a base method that itself abstains (0) makes
    the meta result abstain too.
    """
    signs = np.sign(_as_results(results)).astype(np.int8)
    first = signs[:, 0]
    agree = np.all(signs == first[:, None], axis=1) & (first != 0)
    return np.where(agree, first, ABSTAIN).astype(np.int8)


def unanimous_confidence(results: np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
    """The restrictive unanimous rule on signed confidences: where every base method has the same non-zero
    sign, that sign with the weakest method's magnitude (the least any of them is sure); 0 otherwise, so
    a loss-targeted filter dismisses disagreements first."""
    array = _as_results(results)
    agree = unanimous(array) != ABSTAIN
    return np.where(agree, np.sign(array[:, 0]) * np.min(np.abs(array), axis=1), 0.0)


def weighted_average(
    results: np.ndarray | Sequence[Sequence[float]],
    weights: Sequence[float] | np.ndarray,
    t1: float = 0.0,
    t2: float = 0.0,
) -> np.ndarray:
    """Weights normalised to sum 1, so t1 and t2 live on the scale of one base result (e.g. in [-1, 1])."""
    array = _as_results(results)
    w = _as_weights(weights, array.shape[1])
    total = w.sum()
    if total <= 0:
        raise MetaInputError("all weights are zero: at least one base method needs a positive weight")
    return linear_meta(array, w / total, t1, t2)


def _as_labels(labels: np.ndarray | Sequence[Sequence[int]], k: int) -> np.ndarray:
    array = np.asarray(labels)
    if array.ndim != 2 or array.shape[1] == 0:
        raise MetaInputError(f"labels must be a (documents x methods) matrix, got shape {array.shape}")
    if k < 2:
        raise MetaInputError(f"k must be at least 2, got {k}")
    if not np.issubdtype(array.dtype, np.integer):
        raise MetaInputError(f"labels must be integers, got dtype {array.dtype}")
    if np.any((array < ABSTAIN_LABEL) | (array >= k)):
        raise MetaInputError(f"labels must lie in 0..{k - 1} or be {ABSTAIN_LABEL} (abstain)")
    return array


def class_shares(
    labels: np.ndarray | Sequence[Sequence[int]], k: int, weights: Sequence[float] | np.ndarray | None = None
) -> np.ndarray:
    """Share of the total weight voting for each class, (documents x k); abstaining methods count nowhere."""
    array = _as_labels(labels, k)
    w = _as_weights(weights, array.shape[1])
    total = w.sum()
    if total <= 0:
        raise MetaInputError("all weights are zero: at least one base method needs a positive weight")
    shares = np.zeros((array.shape[0], k))
    for column in range(array.shape[1]):
        voted = array[:, column] >= 0
        shares[np.flatnonzero(voted), array[voted, column]] += w[column]
    return shares / total


def k_class_meta(
    labels: np.ndarray | Sequence[Sequence[int]],
    k: int,
    weights: Sequence[float] | np.ndarray | None = None,
    min_share: float = 0.0,
) -> np.ndarray:
    """k-class generalisation of eq. 3.9: the class with the largest weight share, if that share is unique
    and above min_share (the threshold); ABSTAIN_LABEL otherwise.

    min_share = 0 is plurality voting, 0.5 strict majority; unanimity is `k_class_unanimous`.
    """
    shares = class_shares(labels, k, weights)
    best = np.argmax(shares, axis=1)
    top = shares[np.arange(shares.shape[0]), best]
    unique_top = np.sum(np.isclose(shares, top[:, None]), axis=1) == 1
    decided = unique_top & (top > min_share)
    return np.where(decided, best, ABSTAIN_LABEL)


def k_class_unanimous(labels: np.ndarray | Sequence[Sequence[int]], k: int) -> np.ndarray:
    """The label every base method gives (none abstaining); ABSTAIN_LABEL otherwise."""
    array = _as_labels(labels, k)
    first = array[:, 0]
    agree = np.all(array == first[:, None], axis=1) & (first >= 0)
    return np.where(agree, first, ABSTAIN_LABEL)
