"""Platt scaling: map a model's raw scores to probabilities so different peers' scores are comparable.

Raw SVM distances from models trained on different data live on different scales (and a hostile model can
ship any scale). P(y = 1 | s) = 1 / (1 + exp(A s + B)) fitted on labelled data the receiver holds puts every
model on one scale. Fitting follows Platt (1999) with his smoothed targets and the numerically safe Newton
method of Lin, Lin and Weng (2007). The scaler is plain data and can travel with a model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from metamodels.errors import MetaInputError, ModelFormatError

SCALER_VERSION = 1


@dataclass(frozen=True)
class PlattScaler:
    """P(y = 1 | s) = 1 / (1 + exp(a * s + b)); a < 0 when higher scores mean "positive"."""

    a: float
    b: float

    def probability(self, scores: np.ndarray | Sequence[float]) -> np.ndarray:
        z = self.a * np.asarray(scores, dtype=float) + self.b
        return np.exp(-np.logaddexp(0.0, z))

    def log_odds(self, scores: np.ndarray | Sequence[float]) -> np.ndarray:
        """log P / (1 - P): linear in the score, so it does not saturate as the probability does."""
        return -(self.a * np.asarray(scores, dtype=float) + self.b)

    def confidence(self, scores: np.ndarray | Sequence[float]) -> np.ndarray:
        """Signed calibrated confidence 2P - 1 in [-1, 1]: positive means accept, like a raw SVM score."""
        return 2.0 * self.probability(scores) - 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "platt", "version": SCALER_VERSION, "a": self.a, "b": self.b}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PlattScaler:
        if data.get("kind") != "platt" or data.get("version") != SCALER_VERSION:
            raise ModelFormatError(
                f"not a version-{SCALER_VERSION} Platt scaler: kind={data.get('kind')!r}, "
                f"version={data.get('version')!r}"
            )
        try:
            a, b = float(data["a"]), float(data["b"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFormatError(f"Platt scaler needs numeric 'a' and 'b': {exc}") from exc
        if not (math.isfinite(a) and math.isfinite(b)):
            raise ModelFormatError("Platt scaler parameters must be finite")
        return cls(a=a, b=b)


def fit_platt(
    scores: np.ndarray | Sequence[float],
    labels: np.ndarray | Sequence[int],
    max_iterations: int = 100,
    min_step: float = 1e-10,
    sigma: float = 1e-12,
    epsilon: float = 1e-5,
) -> PlattScaler:
    """Fit A, B on labelled scores; labels are 1 (positive) and 0 or -1 (negative)."""
    f = np.asarray(scores, dtype=float).reshape(-1)
    y = np.asarray(labels).reshape(-1)
    if f.shape != y.shape or f.size == 0:
        raise MetaInputError("Platt scaling needs one label per score and at least one score")
    if not np.all(np.isfinite(f)):
        raise MetaInputError("scores contain NaN or infinity")
    positive = y > 0
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    hi, lo = (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0)
    t = np.where(positive, hi, lo)

    def objective(a: float, b: float) -> float:
        z = f * a + b
        return float(np.sum(np.logaddexp(0.0, z) - (1.0 - t) * z))

    a, b = 0.0, math.log((n_neg + 1.0) / (n_pos + 1.0))
    value = objective(a, b)
    for _ in range(max_iterations):
        z = f * a + b
        p = np.exp(-np.logaddexp(0.0, z))  # P(y=1) = 1 / (1 + exp(z))
        q = 1.0 - p
        d2 = p * q
        h11 = sigma + float(np.sum(f * f * d2))
        h22 = sigma + float(np.sum(d2))
        h21 = float(np.sum(f * d2))
        d1 = t - p
        g1, g2 = float(np.sum(f * d1)), float(np.sum(d1))
        if abs(g1) < epsilon and abs(g2) < epsilon:
            break
        det = h11 * h22 - h21 * h21
        da = -(h22 * g1 - h21 * g2) / det
        db = -(-h21 * g1 + h11 * g2) / det
        gd = g1 * da + g2 * db
        step = 1.0
        while step >= min_step:
            new_a, new_b = a + step * da, b + step * db
            new_value = objective(new_a, new_b)
            if new_value < value + 1e-4 * step * gd:
                a, b, value = new_a, new_b, new_value
                break
            step /= 2.0
        else:
            break
    return PlattScaler(a=float(a), b=float(b))
