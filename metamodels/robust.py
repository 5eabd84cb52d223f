"""Robust combination of base models' confidences against bad or hostile contributors (beyond the thesis).

The thesis weighs every peer's model equally. A peer that sends a label-flipped model, a random one, or one
with inflated scores then pulls the meta decision its way. Here each model's weight comes from its accuracy
measured on labelled data the combiner holds itself (models at or below chance get weight 0), and the
per-document aggregate is a weighted trimmed mean or weighted median, so a minority of extreme confidences
cannot dominate. Calibrate scores first (metamodels.calibration) so they share one scale.

Labels are scarce where a combiner runs (a node holds 15-100 labelled documents, often under 10 held out
per received model), unlabelled documents plenty. `anchored_balanced_accuracies` estimates every model's
balanced accuracy on the combiner's own documents from how its decisions agree with those of one model
whose accuracy the labels do tell (after Parisi et al.'s spectral meta-learner, PNAS 2014);
`log_odds_mean` combines calibrated confidences as the weighted mean of their log-odds (the naive-Bayes
form of independent votes). Peers' models are not independent votes (trained on overlapping bookmarks,
blind to the same region of a node's documents), so `community_as_one_voter` lets them speak together as
one voter beside the node's own model rather than as many, and `silence_weaker_community` gives that voice
no say when it is weaker than the node's own model (two voters sharing their errors are worth the better).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from metamodels.errors import MetaInputError

Aggregation = Literal["mean", "trimmed_mean", "median", "log_odds_mean"]
AGGREGATIONS: tuple[str, ...] = ("mean", "trimmed_mean", "median", "log_odds_mean")


@dataclass(frozen=True)
class RobustSettings:
    """How received models are weighed and combined."""

    aggregation: Aggregation = "trimmed_mean"  # per-document aggregate of the models' confidences
    trim: float = 0.25  # trimmed mean: weight share cut from each end (0 = mean, near 0.5 = median)
    chance: float = 0.5  # accuracy of guessing; a model at or below it gets weight 0
    max_accuracy: float = 0.99  # caps the log-odds weight so one lucky model cannot take over
    min_evaluated: int = 5  # fewer held-out labelled documents than this: weight 0 (unknown quality)


def accuracy_weight(accuracy: float, evaluated: int, settings: RobustSettings = RobustSettings()) -> float:
    """log(acc / (1 - acc)) - log(chance / (1 - chance)), floored at 0 (optimal for independent voters).

    A model measured on fewer than settings.min_evaluated documents gets 0: its quality is unknown.
    """
    if evaluated < settings.min_evaluated or math.isnan(accuracy) or accuracy <= settings.chance:
        return 0.0
    capped = min(accuracy, settings.max_accuracy)
    chance_odds = math.log(settings.chance / (1.0 - settings.chance))
    return max(0.0, math.log(capped / (1.0 - capped)) - chance_odds)


def accuracy_weights(
    results: Sequence[tuple[int, int]], settings: RobustSettings = RobustSettings()
) -> np.ndarray:
    """Weights from (correct, evaluated) counts of each model on the combiner's own labelled documents."""
    return np.array(
        [
            accuracy_weight(correct / evaluated if evaluated else math.nan, evaluated, settings)
            for correct, evaluated in results
        ]
    )


def _checked(confidences: np.ndarray | Sequence[Sequence[float]], weights: Sequence[float] | np.ndarray):
    values = np.asarray(confidences, dtype=float)
    if values.ndim != 2:
        raise MetaInputError(f"confidences must be a (documents x models) matrix, got shape {values.shape}")
    w = np.asarray(weights, dtype=float).reshape(-1)
    if w.shape[0] != values.shape[1]:
        raise MetaInputError(f"got {w.shape[0]} weights for {values.shape[1]} models")
    if np.any(w < 0) or not np.all(np.isfinite(w)) or not np.all(np.isfinite(values)):
        raise MetaInputError("weights must be finite and non-negative, confidences finite")
    return values, w


def weighted_trimmed_mean(
    confidences: np.ndarray | Sequence[Sequence[float]], weights: Sequence[float] | np.ndarray, trim: float
) -> np.ndarray:
    """Per document: sort the models' values, cut `trim` of the total weight from each end, average the rest.

    Cutting is by weight, so a model can be cut in part. All weights zero gives 0 (no evidence: abstain).
    trim = 0 is the weighted mean; trim close to 0.5 approaches the weighted median.
    """
    if not 0.0 <= trim < 0.5:
        raise MetaInputError(f"trim must lie in [0, 0.5), got {trim}")
    ranked = _ranked(confidences, weights)
    if ranked is None:
        return np.zeros(np.asarray(confidences).shape[0])
    sorted_values, sorted_weights = ranked
    upper = np.cumsum(sorted_weights, axis=1)
    lower = upper - sorted_weights
    kept = np.clip(np.minimum(upper, 1.0 - trim) - np.maximum(lower, trim), 0.0, None)
    return np.sum(kept * sorted_values, axis=1) / (1.0 - 2.0 * trim)


def weighted_median(
    confidences: np.ndarray | Sequence[Sequence[float]], weights: Sequence[float] | np.ndarray
) -> np.ndarray:
    """Per document: the value where the cumulative weight first reaches half (lower weighted median)."""
    ranked = _ranked(confidences, weights)
    if ranked is None:
        return np.zeros(np.asarray(confidences).shape[0])
    sorted_values, sorted_weights = ranked
    cumulative = np.cumsum(sorted_weights, axis=1)
    index = np.argmax(cumulative >= 0.5 - 1e-12, axis=1)
    return sorted_values[np.arange(sorted_values.shape[0]), index]


def _ranked(
    confidences: np.ndarray | Sequence[Sequence[float]], weights: Sequence[float] | np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """Per document, the models' values in ascending order and their weights as shares of the total, in
    the same order; None when every weight is zero (no evidence)."""
    values, w = _checked(confidences, weights)
    total = w.sum()
    if total <= 0:
        return None
    order = np.argsort(values, axis=1, kind="stable")
    return np.take_along_axis(values, order, axis=1), w[order] / total


def robust_combine(
    confidences: np.ndarray | Sequence[Sequence[float]],
    weights: Sequence[float] | np.ndarray,
    settings: RobustSettings = RobustSettings(),
) -> np.ndarray:
    """Combined signed confidence per document under settings.aggregation."""
    if settings.aggregation == "log_odds_mean":
        return log_odds_mean(confidences, weights, settings.max_accuracy)
    if settings.aggregation == "median":
        return weighted_median(confidences, weights)
    trim = settings.trim if settings.aggregation == "trimmed_mean" else 0.0
    return weighted_trimmed_mean(confidences, weights, trim)


def log_odds_mean(
    confidences: np.ndarray | Sequence[Sequence[float]],
    weights: Sequence[float] | np.ndarray,
    max_accuracy: float = 0.99,
) -> np.ndarray:
    """Per document: the weighted mean of the models' log-odds, back on the confidence scale (2P - 1).

    Confidences are calibrated 2P - 1; each model's log-odds is capped at that of `max_accuracy` (a
    probability beyond it is not backed by a few dozen labels, and one steep scaler must not outvote the
    rest). One model alone gives its own confidence (up to the cap). All weights zero gives 0.
    """
    values, w = _checked(confidences, weights)
    total = w.sum()
    if total <= 0:
        return np.zeros(values.shape[0])
    cap = math.log(max_accuracy / (1.0 - max_accuracy))
    log_odds = np.clip(2.0 * np.arctanh(np.clip(values, -1.0 + 1e-15, 1.0 - 1e-15)), -cap, cap)
    return np.tanh(0.5 * (log_odds @ w) / total)


def anchored_balanced_accuracies(
    decisions: np.ndarray, reference: int, reference_accuracy: float, max_accuracy: float = 0.99
) -> np.ndarray | None:
    """Each model's balanced accuracy on unlabelled documents from its decisions (+1/-1, documents x
    models) and one reference model of known balanced accuracy: for two models whose errors are
    independent given the class, cov(f_r, f_j) = (1 - b^2)(2 pi_r - 1)(2 pi_j - 1), pi the balanced
    accuracy and b the class imbalance (the pairwise identity behind Parisi et al.'s spectral
    meta-learner, PNAS 2014), so pi_j follows from pi_r. b is taken from the reference's share of
    positive decisions (correcting that share for the reference's errors did worse on devweb: 49 wins
    and 30 losses against the local model over 80 nodes, not 54 and 23). Only each model's independence
    from the reference is assumed, not from the others: models that share errors (trained on overlapping
    documents, blind to the same region) are not lifted by agreeing with each other, as they are under
    the full spectral estimate. A model that agrees with the reference less than chance would is
    estimated at chance. None when the reference is at or below chance."""
    F = np.asarray(decisions, dtype=float)
    if F.ndim != 2 or not 0 <= reference < F.shape[1]:
        raise MetaInputError(f"need a (documents x models) matrix and a reference column, got {F.shape}")
    v_reference = 2.0 * reference_accuracy - 1.0
    if F.shape[0] < 2 or not math.isfinite(v_reference) or v_reference <= 0:
        return None
    b = 2.0 * float(np.mean(F[:, reference] > 0)) - 1.0  # exact when it errs alike on both classes
    scale = max(1.0 - b * b, 1e-3)
    centred = F - F.mean(axis=0)
    covariance = centred.T @ centred[:, reference] / (F.shape[0] - 1)
    v = covariance / (scale * v_reference)
    v[reference] = v_reference
    return 0.5 * (1.0 + np.clip(v, 0.0, 2.0 * max_accuracy - 1.0))


def _weights_beside(weights: Sequence[float] | np.ndarray, reference: int) -> tuple[np.ndarray, np.ndarray]:
    """A checked copy of the weights and the mask of the models other than `reference`."""
    w = np.asarray(weights, dtype=float).reshape(-1).copy()
    if not 0 <= reference < w.shape[0]:
        raise MetaInputError(f"reference {reference} is not one of {w.shape[0]} weights")
    if np.any(w < 0) or not np.all(np.isfinite(w)):
        raise MetaInputError("weights must be finite and non-negative")
    others = np.arange(w.shape[0]) != reference
    return w, others


def community_as_one_voter(weights: Sequence[float] | np.ndarray, reference: int) -> np.ndarray:
    """Weights under which, in a weighted log-odds mean, the models other than `reference` speak as one
    voter beside it: their own weighted mean, weighed as a typical one of them (the weight-weighted mean
    of their weights, sum(w^2) / sum(w)), not as the sum of their weights. Each other weight is scaled by
    sum(w^2) / sum(w)^2, which keeps their ratios and the reference's weight.

    The sum treats k peers as k independent witnesses; peers that share errors (trained on overlapping
    documents, crawling the same web) are closer to one. On devweb (22 community runs, 88 nodes, filtering
    at loss 0.2) the covariances of peers' decisions with the local model's were about twice what
    independence implies, and the local model lost to the meta-classifier on the nodes whose documents the
    peers saw least even when each model was weighed by its true balanced accuracy; speaking as one lifted
    anchored weights from 58 wins and 26 losses against the local model (mean +0.014, worst -0.068) to 64
    and 20 (mean +0.015, worst -0.052), and true-accuracy weights from 69/19 to 71/17."""
    w, others = _weights_beside(weights, reference)
    total = w[others].sum()
    if total > 0:
        w[others] *= np.sum(w[others] ** 2) / total**2
    return w


def silence_weaker_community(weights: Sequence[float] | np.ndarray, reference: int) -> np.ndarray:
    """Weights with every model other than `reference` at 0 when, together, they weigh less than the
    reference: their voice under `community_as_one_voter` (the sum of the weights it returns) is below the
    reference's weight, i.e. the community is estimated less accurate on the combiner's documents than
    the reference. Otherwise the weights as given.

    Two voters whose errors are shared are worth the better one alone: the discriminant weight of the
    weaker is d_weak - rho * d_strong, which reaches 0 as the correlation rho of their errors reaches 1.
    Peers' errors on a node's crawl are largely the node's own model's errors (their decisions covary with
    the local model's about twice as much as independence implies), and where the community was the
    weaker voter on devweb averaging it in cost accuracy through the ranking alone: of the 270 extra wrong
    decisions at loss 0.2 on the 20 nodes (of 88) where the meta-classifier lost to the local model, 268
    came from which documents were dismissed (documents the local model doubted and the community was
    sure of, wrongly), 2 from decisions changed. Silencing such a community: 63 wins and 18 losses against
    the local model instead of 64 and 20, mean +0.016 instead of +0.015, worst -0.034 instead of -0.052
    (22 runs, 88 nodes; better on both halves of the runs)."""
    w, others = _weights_beside(weights, reference)
    if w[others].sum() < w[reference]:
        w[others] = 0.0
    return w
