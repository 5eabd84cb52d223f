"""Estimators for a unanimous meta-classifier's loss and error (thesis 3.15-3.19, 3.10/3.11).

X_i = 1 when base classifier i decides a document correctly. A model's accuracy P(X_i = 1) is measured on
other holders' labelled data with the documents it was trained on removed (3.15); the covariance of two
models' X is measured on documents neither was trained on. Under the thesis's chain assumption (one common
covariance, dependence only between neighbours i and i+1) the probability that all k models are right is

    P(all 1) = P(X_1=1) * prod_{i=1}^{k-1} (P(X_i=1) P(X_{i+1}=1) + cov) / P(X_i=1)      (3.16)

and likewise P(all 0) with the error rates. The unanimous meta-classifier decides exactly when all agree:
loss = 1 - (P(all 1) + P(all 0)) (3.17), error = P(all 0) / (P(all 1) + P(all 0)) (3.18).

Why the chain estimate misses on real peers (measured by `simnet.experiments.estimators`: off by 0.14-0.26
in loss at 16 peers on 20ng, Reuters and WebKB, while the exchangeable estimate stays within 0.024): 3.16 is
not mis-implemented, it is exactly the law of a Markov chain X_1 -> ... -> X_k (it matches a simulated chain
within 0.001, see the tests and the experiment), and a Markov chain's correlation decays with the distance
in the chain, corr(X_i, X_j) = rho^|i-j| with rho = cov / (p (1 - p)) (`chain_implied_correlation`). Real
peers' models are not ordered: every pair is about as correlated as every other (20ng: 0.31 for pairs with
disjoint training data, 0.33 for pairs sharing some; the chain implies 0.08 at distance 2 and ~0 beyond),
because they all find the same documents hard. Assumption 1 (one common covariance) is a fair summary:
the mean exchanged on training documents matches the validation documents' (0.022 vs 0.021), though single
pairs spread (correlation 0.11-0.50, 10-90th percentile). Assumption 2 (non-neighbours independent) is the
broken one. The chain then underestimates how often all k
agree, so it overestimates the loss and the accuracy and asks for too few peers for an error goal.

`exchangeable_agreement` (beyond the thesis) uses the same two exchanged inputs (accuracy and covariance)
but models the k models as exchangeable given a document's difficulty (a Beta-Bernoulli mixture): every pair
has the measured covariance. It meets "predicted within 0.05 of measured" on all three corpora, so it is the
default of `peers_needed` and what the node reports; the chain stays available as the thesis's reference.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from metamodels.errors import MetaInputError


@dataclass(frozen=True)
class MetaEstimate:
    """Predicted behaviour of a unanimous meta-classifier over k base models."""

    peers: int
    loss: float
    error: float

    @property
    def accuracy(self) -> float:
        return 1.0 - self.error


def held_out_mask(doc_ids: Sequence[str], training_ids: Collection[str]) -> np.ndarray:
    """True for the documents a model was not trained on (D_b - D_a by document ID, 3.15)."""
    excluded = set(training_ids)
    return np.fromiter((doc_id not in excluded for doc_id in doc_ids), dtype=bool, count=len(doc_ids))


def held_out_accuracy(
    predictions: np.ndarray | Sequence[int],
    truth: np.ndarray | Sequence[int],
    doc_ids: Sequence[str],
    training_ids: Collection[str],
) -> tuple[int, int]:
    """(correct, evaluated) of a model on one labelled collection, skipping its own training documents."""
    pred = np.asarray(predictions).reshape(-1)
    labels = np.asarray(truth).reshape(-1)
    if not pred.shape[0] == labels.shape[0] == len(doc_ids):
        raise MetaInputError("predictions, truth and doc_ids must have one entry per document")
    mask = held_out_mask(doc_ids, training_ids)
    return int(np.sum(pred[mask] == labels[mask])), int(mask.sum())


def cross_accuracy(results: Sequence[tuple[int, int]]) -> float:
    """Eq. 3.15: the mean of a model's accuracies reported by the holders that tested it.

    results are (correct, evaluated) pairs; holders that had no held-out document are skipped.
    """
    accuracies = [correct / evaluated for correct, evaluated in results if evaluated > 0]
    if not accuracies:
        raise MetaInputError("no holder evaluated the model on a held-out document: cannot estimate accuracy")
    return float(np.mean(accuracies))


def robust_cross_accuracy(
    reports: Mapping[str, tuple[int, int]], min_evaluated: int = 1
) -> tuple[float, int] | None:
    """Eq. 3.15 made robust to lying reporters: (accuracy, documents tested) of one model, or None.

    reports maps each distinct reporter (a peer, or the node itself) to its (correct, evaluated) count of
    the model on its own held-out documents; reporters that tested fewer than min_evaluated are skipped.
    The accuracy is the lower median of the reporters' accuracies: one vote per reporter, so a model is
    lifted only when more than half of its reporters report it higher (with two reporters, one honest and
    one lying, the lower one counts). The count is the sum of the counted reporters' documents.
    """
    counted = [(c / e, e) for c, e in reports.values() if e >= max(1, min_evaluated)]
    if not counted:
        return None
    accuracies = sorted(a for a, _ in counted)
    return float(accuracies[(len(accuracies) - 1) // 2]), int(sum(e for _, e in counted))


def correctness_covariance(
    correct_a: np.ndarray | Sequence[bool], correct_b: np.ndarray | Sequence[bool]
) -> float:
    """cov(X_a, X_b) = E[X_a X_b] - E[X_a] E[X_b] over documents neither model was trained on.

    Population form (divided by n), so that P(X_a=1, X_b=1) = P(X_a=1) P(X_b=1) + cov holds exactly on the
    sample, which is what the chain formula assumes.
    """
    a = np.asarray(correct_a, dtype=float).reshape(-1)
    b = np.asarray(correct_b, dtype=float).reshape(-1)
    if a.shape != b.shape or a.size == 0:
        raise MetaInputError("covariance needs two equally long, non-empty correctness vectors")
    return float(np.mean(a * b) - a.mean() * b.mean())


def _check_probability(value: float, name: str) -> None:
    if not 0.0 <= value <= 1.0:
        raise MetaInputError(f"{name} must lie in [0, 1], got {value}")


def chain_probability(probabilities: Sequence[float], covariance: float) -> float:
    """Eq. 3.16: P(X_1 = ... = X_k = 1) for per-model success probabilities under the chain assumption."""
    if not probabilities:
        raise MetaInputError("need at least one model")
    for p in probabilities:
        _check_probability(p, "a model's probability")
    result = probabilities[0]
    for current, following in itertools.pairwise(probabilities):
        if current == 0.0:
            return 0.0
        result *= (current * following + covariance) / current
    return float(min(1.0, max(0.0, result)))


def chain_estimate(accuracies: Sequence[float], covariance: float) -> MetaEstimate:
    """Eqs. 3.16-3.18: loss and error of the unanimous meta-classifier over models with these accuracies."""
    all_right = chain_probability(list(accuracies), covariance)
    all_wrong = chain_probability([1.0 - a for a in accuracies], covariance)
    return _estimate(len(accuracies), all_right, all_wrong)


def _estimate(peers: int, all_right: float, all_wrong: float) -> MetaEstimate:
    agree = all_right + all_wrong
    if agree <= 0.0:
        return MetaEstimate(peers=peers, loss=1.0, error=math.nan)
    return MetaEstimate(peers=peers, loss=float(max(0.0, 1.0 - agree)), error=float(all_wrong / agree))


def equal_loss(p: float, c: float, n_methods: int) -> float:
    """Eq. 3.10: loss of unanimous decision over n_methods (l) methods, equal error p, covariance c."""
    right = (1 - p) * ((c + (1 - p) ** 2) / (1 - p)) ** (n_methods - 1)
    wrong = p * ((c + p**2) / p) ** (n_methods - 1)
    return 1.0 - (right + wrong)


def equal_error(p: float, c: float, n_methods: int) -> float:
    """Eq. 3.11: error of unanimous decision over n_methods (l) methods, equal error p, covariance c."""
    right = (1 - p) * ((c + (1 - p) ** 2) / (1 - p)) ** (n_methods - 1)
    wrong = p * ((c + p**2) / p) ** (n_methods - 1)
    return wrong / (right + wrong)


def correctness_correlation(accuracy: float, covariance: float) -> float:
    """Pearson correlation of two equally accurate models' correctness (0 when degenerate)."""
    _check_probability(accuracy, "accuracy")
    spread = accuracy * (1.0 - accuracy)
    return covariance / spread if spread > 0.0 else 0.0


def chain_implied_correlation(accuracy: float, covariance: float, distance: int) -> float:
    """corr(X_i, X_{i+distance}) that the chain law 3.16 implies for equally accurate models.

    3.16 is a Markov chain with P(X_{i+1}=1 | X_i=1) = p + cov/p and P(X_{i+1}=1 | X_i=0) = p - cov/(1-p);
    the difference of the two, cov / (p (1 - p)) = rho, is the chain's only non-trivial eigenvalue, so the
    correlation at that distance is rho ** distance. Measured pairs of peers show rho at every distance.
    """
    if distance < 0:
        raise MetaInputError(f"distance must be non-negative, got {distance}")
    return correctness_correlation(accuracy, covariance) ** distance


def meta_estimate(accuracy: float, covariance: float, k: int, model: str = "exchangeable") -> MetaEstimate:
    """Unanimous loss/error over k peers of this mean accuracy: model "exchangeable" (default, meets the
    0.05 goal on every corpus measured) or "chain" (the thesis's 3.16-3.18)."""
    if model == "chain":
        if k < 1:
            raise MetaInputError(f"k must be at least 1, got {k}")
        return chain_estimate([accuracy] * k, covariance)
    if model == "exchangeable":
        return exchangeable_agreement(accuracy, covariance, k)
    raise MetaInputError(f"model must be 'chain' or 'exchangeable', got {model!r}")


def exchangeable_agreement(accuracy: float, covariance: float, k: int) -> MetaEstimate:
    """Unanimous loss/error when k models are exchangeable given a document's difficulty (beyond the thesis).

    Each document has a probability q that a model gets it right, q ~ Beta(a, b) with mean = accuracy and
    variance = covariance (for exchangeable models the pairwise covariance of X equals var(q)). Then
    P(all right) = E[q^k] and P(all wrong) = E[(1-q)^k], both products of Beta moments.
    """
    _check_probability(accuracy, "accuracy")
    if k < 1:
        raise MetaInputError(f"k must be at least 1, got {k}")
    spread = accuracy * (1.0 - accuracy)
    if covariance <= 0.0 or spread == 0.0:
        return _estimate(k, accuracy**k, (1.0 - accuracy) ** k)
    covariance = min(covariance, spread * (1 - 1e-9))
    concentration = spread / covariance - 1.0
    a, b = accuracy * concentration, (1.0 - accuracy) * concentration
    all_right = math.exp(sum(math.log((a + j) / (a + b + j)) for j in range(k)))
    all_wrong = math.exp(sum(math.log((b + j) / (a + b + j)) for j in range(k)))
    return _estimate(k, all_right, all_wrong)


def peers_needed(
    accuracy: float,
    covariance: float,
    *,
    max_error: float | None = None,
    max_loss: float | None = None,
    max_peers: int = 64,
    model: str = "exchangeable",
) -> MetaEstimate | None:
    """How many peers a unanimous meta-classifier needs for a user's goal (estimateNumNodes, fig. 3.5).

    With an error goal: the fewest peers whose predicted error is at most max_error (and loss at most
    max_loss when given). With only a loss bound: the most peers whose predicted loss stays within it, as
    more peers lower the error (the thesis's goal: least error with bounded loss). None if no count up to
    max_peers meets the goal. Every peer is taken at the given mean accuracy; model "exchangeable" (default)
    is the Beta-Bernoulli estimate that matches measurement, "chain" the thesis's 3.16-3.18 (see the module
    docstring for why it asks for too few peers).
    """
    if max_error is None and max_loss is None:
        raise MetaInputError("give a goal: max_error, max_loss, or both")
    estimates = [meta_estimate(accuracy, covariance, k, model) for k in range(1, max_peers + 1)]
    within_loss = [e for e in estimates if max_loss is None or e.loss <= max_loss]
    if max_error is not None:
        meeting = [e for e in within_loss if not math.isnan(e.error) and e.error <= max_error]
        return meeting[0] if meeting else None
    return within_loss[-1] if within_loss else None
