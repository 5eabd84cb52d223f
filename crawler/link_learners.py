"""The apprentice's learners (`crawler.apprentice`): which links lead to relevant pages, learnt from the
critic's verdicts on the pages they led to, and how far to trust that against the base priority (the blend).

Their state is plain data, so the repository keeps it across restarts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import sparse
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from crawler.errors import ApprenticeError

STATE_VERSION = 1
LOG_ODDS_CAP = 30.0


# -- the learner --------------------------------------------------------------------------------------------
class LinkNaiveBayes:
    """Two-class (0: irrelevant, 1: relevant) multinomial naive Bayes with Laplace smoothing over the
    features seen; counts are additive, so instances can be added at any time and merged across peers.
    `fit()` recomputes the log-odds tables that `log_odds()` uses (the model in use between two fits)."""

    def __init__(self, n_features: int) -> None:
        self.n_features = n_features
        self.counts = np.zeros((2, n_features))
        self.instances = np.zeros(2)
        self._feature_odds = np.zeros(n_features)
        self._prior = 0.0
        self.fitted_instances = np.zeros(2)

    def add(self, indices: np.ndarray, label: int) -> None:
        np.add.at(self.counts[label], indices, 1.0)
        self.instances[label] += 1

    def fit(self) -> None:
        seen = (self.counts[0] + self.counts[1]) > 0
        vocabulary = max(int(seen.sum()), 1)
        totals = self.counts.sum(axis=1)
        log_theta = np.log((self.counts + 1.0) / (vocabulary + totals)[:, None])
        self._feature_odds = np.where(seen, log_theta[1] - log_theta[0], 0.0)
        self._prior = math.log((self.instances[1] + 1.0) / (self.instances[0] + 1.0))
        self.fitted_instances = self.instances.copy()

    def trained(self, min_per_class: int) -> bool:
        return bool(self.fitted_instances.min() >= min_per_class)

    def log_odds(self, indices: np.ndarray) -> float:
        """log P(relevant | x) - log P(irrelevant | x) under the last fit."""
        return self._prior + float(self._feature_odds[indices].sum())

    def probability(self, indices: np.ndarray) -> float:
        odds = max(-LOG_ODDS_CAP, min(LOG_ODDS_CAP, self.log_odds(indices)))
        return 1.0 / (1.0 + math.exp(-odds))

    def to_dict(self) -> dict[str, Any]:
        nonzero = np.flatnonzero(self.counts.sum(axis=0))
        return {
            "version": STATE_VERSION,
            "n_features": self.n_features,
            "instances": self.instances.tolist(),
            "indices": nonzero.tolist(),
            "irrelevant": self.counts[0, nonzero].tolist(),
            "relevant": self.counts[1, nonzero].tolist(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LinkNaiveBayes:
        try:
            if data["version"] != STATE_VERSION:
                raise ApprenticeError(f"apprentice state version {data['version']} is not {STATE_VERSION}")
            model = cls(int(data["n_features"]))
            indices = np.asarray(data["indices"], dtype=np.int64)
            model.counts[0, indices] = np.asarray(data["irrelevant"], dtype=np.float64)
            model.counts[1, indices] = np.asarray(data["relevant"], dtype=np.float64)
            model.instances = np.asarray(data["instances"], dtype=np.float64).reshape(2)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise ApprenticeError(f"malformed apprentice state: {exc!r}") from exc
        model.fit()
        return model


class LinkLogistic:
    """Two-class logistic regression over the same hashed features (binary presence), refit from scratch
    on the most recent `max_instances` instances at each `fit()`: with the few hundred to few thousand
    instances of a small crawl it ranks links better than naive Bayes, which counts correlated features
    (a term at neighbouring offsets, the URL's words) as independent evidence. Classes are weighted to
    balance the few relevant links. Its state is the instances themselves (plain lists of feature indices)."""

    KIND = "logistic"

    def __init__(self, n_features: int, max_instances: int = 50_000, c: float = 0.3) -> None:
        self.n_features = n_features
        self.max_instances = max_instances
        self.c = c
        self.data: list[tuple[np.ndarray, int]] = []
        self.instances = np.zeros(2)
        self.fitted_instances = np.zeros(2)
        self._weights = np.zeros(n_features)
        self._intercept = 0.0

    def add(self, indices: np.ndarray, label: int) -> None:
        self.data.append((np.unique(indices), label))
        self.instances[label] += 1
        if len(self.data) > self.max_instances:
            _, dropped = self.data.pop(0)
            self.instances[dropped] -= 1

    def fit(self) -> None:
        labels = np.array([label for _, label in self.data], dtype=np.int64)
        if len(set(labels.tolist())) == 2:
            rows = np.repeat(np.arange(len(self.data)), [idx.size for idx, _ in self.data])
            columns = np.concatenate([idx for idx, _ in self.data])
            x = sparse.csr_matrix(
                (np.ones(columns.size), (rows, columns)), shape=(len(self.data), self.n_features)
            )
            model = LogisticRegression(C=self.c, class_weight="balanced", solver="liblinear").fit(x, labels)
            self._weights = model.coef_[0].copy()
            self._intercept = float(model.intercept_[0])
        self.fitted_instances = self.instances.copy()

    def trained(self, min_per_class: int) -> bool:
        return bool(self.fitted_instances.min() >= min_per_class)

    def log_odds(self, indices: np.ndarray) -> float:
        return self._intercept + float(self._weights[np.unique(indices)].sum())

    def probability(self, indices: np.ndarray) -> float:
        odds = max(-LOG_ODDS_CAP, min(LOG_ODDS_CAP, self.log_odds(indices)))
        return 1.0 / (1.0 + math.exp(-odds))

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "kind": self.KIND,
            "n_features": self.n_features,
            "max_instances": self.max_instances,
            "data": [[label, idx.tolist()] for idx, label in self.data],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LinkLogistic:
        try:
            if data["version"] != STATE_VERSION:
                raise ApprenticeError(f"apprentice state version {data['version']} is not {STATE_VERSION}")
            model = cls(int(data["n_features"]), int(data["max_instances"]))
            for label, indices in data["data"]:
                model.add(np.asarray(indices, dtype=np.int64), int(label))
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise ApprenticeError(f"malformed apprentice state: {exc!r}") from exc
        model.fit()
        return model


LEARNERS = {"naive_bayes": LinkNaiveBayes, LinkLogistic.KIND: LinkLogistic}


def model_from_dict(data: Mapping[str, Any]) -> LinkNaiveBayes | LinkLogistic:
    """The learner a stored state describes (naive Bayes when it names none: the first format)."""
    return LEARNERS.get(str(data.get("kind", "naive_bayes")), LinkNaiveBayes).from_dict(data)


# -- the blend ----------------------------------------------------------------------------------------------
def fit_blend(
    rows: Sequence[tuple[float, float, int]], min_per_class: int
) -> tuple[float, float, float] | None:
    """(a, b, c) of P(relevant) = sigmoid(a * apprentice log-odds + b * log base + c), a logistic
    regression on resolved links (None until each label has `min_per_class` rows). Negative weights are
    set to 0: a signal that ranks backwards on this crawl is dropped, not inverted."""
    labels = np.array([r[2] for r in rows])
    if min(int(labels.sum()), int(len(labels) - labels.sum())) < min_per_class:
        return None
    x = np.array([(r[0], r[1]) for r in rows])
    scale = np.maximum(x.std(axis=0), 1e-9)
    model = LogisticRegression(C=1.0).fit(x / scale, labels)
    a, b = np.maximum(model.coef_[0] / scale, 0.0)
    if a == 0.0 and b == 0.0:
        return None
    return float(a), float(b), float(model.intercept_[0])


def blend_score(blend: tuple[float, float, float], odds: float, log_base: float) -> float:
    a, b, c = blend
    z = a * odds + b * log_base + c
    return 1.0 / (1.0 + math.exp(-max(-LOG_ODDS_CAP, min(LOG_ODDS_CAP, z))))


def held_out_gain(rows: Sequence[tuple[float, float, int]], min_per_class: int) -> float | None:
    """How much better the blend ranks resolved links than the base priority alone: ROC AUC of the blend
    fitted on one half of `rows` (a fixed random split, stratified by label) scored on the other, minus the
    base's AUC there, averaged over both halves (None while a half lacks `min_per_class` rows of a label).
    A blend that drops the apprentice ranks as the base does: gain 0."""
    rng = np.random.default_rng(0)
    halves: list[list[tuple[float, float, int]]] = [[], []]
    for label in (0, 1):
        of_label = [r for r in rows if r[2] == label]
        for k, i in enumerate(rng.permutation(len(of_label))):
            halves[k % 2].append(of_label[i])
    gains = []
    for fold in (0, 1):
        train, test = halves[1 - fold], halves[fold]
        labels = [r[2] for r in test]
        if min(sum(labels), len(labels) - sum(labels)) < min_per_class:
            return None
        blend = fit_blend(train, min_per_class)
        if blend is None:
            gains.append(0.0)
            continue
        blended = [blend_score(blend, odds, log_base) for odds, log_base, _ in test]
        base = [log_base for _, log_base, _ in test]
        gains.append(float(roc_auc_score(labels, blended) - roc_auc_score(labels, base)))
    return sum(gains) / len(gains)
