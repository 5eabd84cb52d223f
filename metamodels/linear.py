"""Binary linear SVMs over the hashed feature space, with the thesis's normalised confidence (1.4).

A model keeps only its non-zero weights (sorted feature indices and float32 values), its bias, the
FeatureConfig of the space it lives in, and calibration statistics of its own training documents. Models
travel between peers, so `to_dict()` gives plain data (bytes of little-endian arrays and numbers) and
`from_dict()` validates everything before trusting it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

from metamodels.errors import ModelFormatError, TrainingDataError
from metamodels.features import FeatureConfig, check_feature_space

LINEAR_SCHEMA_VERSION = 1
LINEAR_KIND = "linear_svm"
_INDEX_DTYPE = np.dtype("<i4")
_WEIGHT_DTYPE = np.dtype("<f4")


@dataclass(frozen=True)
class Calibration:
    """Decision values of the model on its own training documents.

    `scale` normalises the SVM output into the confidence of thesis eq. 2.22. The thesis's svmScore (2.21)
    is ill-formed; like the research summary recommends, it is the mean decision over the positive training
    documents, or the mean absolute decision over all of them when that mean is not positive.
    """

    scale: float = 1.0
    mean_positive: float = 0.0
    mean_negative: float = 0.0
    std_positive: float = 0.0
    std_negative: float = 0.0
    n_positive: int = 0
    n_negative: int = 0

    @classmethod
    def of(cls, decisions: np.ndarray, y: np.ndarray) -> Calibration:
        pos, neg = decisions[y == 1], decisions[y == 0]
        mean_pos = float(pos.mean()) if pos.size else 0.0
        mean_abs = float(np.abs(decisions).mean()) if decisions.size else 0.0
        scale = mean_pos if mean_pos > 0 else mean_abs
        return cls(
            scale=scale if scale > 0 else 1.0,
            mean_positive=mean_pos,
            mean_negative=float(neg.mean()) if neg.size else 0.0,
            std_positive=float(pos.std()) if pos.size else 0.0,
            std_negative=float(neg.std()) if neg.size else 0.0,
            n_positive=int(pos.size),
            n_negative=int(neg.size),
        )


@dataclass(frozen=True, eq=False)
class LinearModel:
    """w·x + b over the hashed space named by `config`; weights only where non-zero."""

    config: FeatureConfig
    indices: np.ndarray  # int32, strictly increasing feature indices
    weights: np.ndarray  # float32, one per index
    bias: float
    calibration: Calibration = field(default_factory=Calibration)
    training_ids: tuple[str, ...] = ()
    version: int = LINEAR_SCHEMA_VERSION

    def __post_init__(self) -> None:
        indices = np.ascontiguousarray(self.indices, dtype=np.int32)
        weights = np.ascontiguousarray(self.weights, dtype=np.float32)
        problems = _weight_problems(indices, weights, self.config.n_features)
        if not math.isfinite(self.bias):
            problems.append("bias is not finite")
        if problems:
            raise ModelFormatError(f"invalid linear model: {'; '.join(problems)}")
        object.__setattr__(self, "indices", indices)
        object.__setattr__(self, "weights", weights)
        column = sp.csc_matrix(
            (weights.astype(np.float64), indices, np.array([0, len(indices)])),
            shape=(self.config.n_features, 1),
        )
        object.__setattr__(self, "_column", column)

    @property
    def n_weights(self) -> int:
        return len(self.indices)

    def weight_column(self) -> sp.csc_matrix:
        """The weights as an (n_features x 1) sparse column, for stacking several models into one product."""
        return self._column

    def decision_function(self, X: sp.spmatrix) -> np.ndarray:
        """Signed distance-like SVM output w·x + b per row. The weights are spread into a dense vector
        first: a sparse matrix times a dense vector costs its non-zeros, while the product with the sparse
        weight column went through scipy's sparse-sparse product (its two passes took most of a cooperation
        round's model training at 150 topics)."""
        check_feature_space(self.config, X)
        dense = np.zeros(self.config.n_features)
        dense[self.indices] = self.weights
        return np.asarray(X @ dense).ravel() + self.bias

    def confidence(self, X: sp.spmatrix) -> np.ndarray:
        """Normalised confidence SVM(d) / svmScore (thesis eq. 2.22): 1.0 is a typical positive."""
        return self.decision_function(X) / self.calibration.scale

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LinearModel):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": LINEAR_KIND,
            "version": self.version,
            "feature_config": self.config.to_dict(),
            "indices": self.indices.astype(_INDEX_DTYPE).tobytes(),
            "weights": self.weights.astype(_WEIGHT_DTYPE).tobytes(),
            "bias": float(self.bias),
            "calibration": asdict(self.calibration),
            "training_ids": list(self.training_ids),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LinearModel:
        """Validates untrusted plain data (dimensions, finiteness, version) into a model."""
        if not isinstance(data, Mapping):
            raise ModelFormatError(f"a linear model must be a mapping, got {type(data).__name__}")
        if data.get("kind") != LINEAR_KIND:
            raise ModelFormatError(f"not a linear model: kind {data.get('kind')!r}")
        if data.get("version") != LINEAR_SCHEMA_VERSION:
            raise ModelFormatError(
                f"linear model version {data.get('version')!r} is not the supported {LINEAR_SCHEMA_VERSION}"
            )
        try:
            config = FeatureConfig.from_dict(data["feature_config"])
            indices = _array_from_bytes(data["indices"], _INDEX_DTYPE, "indices")
            weights = _array_from_bytes(data["weights"], _WEIGHT_DTYPE, "weights")
            bias = _finite_number(data["bias"], "bias")
            calibration = _calibration_from_dict(data["calibration"])
            training_ids = data.get("training_ids", [])
            if not isinstance(training_ids, list | tuple) or not all(
                isinstance(i, str) for i in training_ids
            ):
                raise ModelFormatError("training_ids must be a list of strings")
        except KeyError as exc:
            raise ModelFormatError(f"linear model lacks field {exc}") from exc
        return cls(config, indices, weights, bias, calibration, tuple(training_ids))


def _weight_problems(indices: np.ndarray, weights: np.ndarray, n_features: int) -> list[str]:
    problems = []
    if indices.ndim != 1 or weights.ndim != 1 or indices.shape != weights.shape:
        return [f"indices {indices.shape} and weights {weights.shape} must be 1-d of equal length"]
    if indices.size and (indices[0] < 0 or indices[-1] >= n_features):
        problems.append(f"feature indices must lie in [0, {n_features})")
    if indices.size > 1 and not (np.diff(indices) > 0).all():
        problems.append("feature indices must be strictly increasing")
    if not np.isfinite(weights).all():
        problems.append("weights must be finite")
    return problems


def _array_from_bytes(raw: Any, dtype: np.dtype, name: str) -> np.ndarray:
    if not isinstance(raw, bytes | bytearray):
        raise ModelFormatError(f"{name} must be bytes of little-endian {dtype.str}, got {type(raw).__name__}")
    if len(raw) % dtype.itemsize:
        raise ModelFormatError(f"{name} holds {len(raw)} bytes, not a multiple of {dtype.itemsize}")
    return np.frombuffer(raw, dtype=dtype)


def _finite_number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ModelFormatError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def _calibration_from_dict(data: Any) -> Calibration:
    if not isinstance(data, Mapping) or set(data) != set(Calibration.__dataclass_fields__):
        raise ModelFormatError(f"calibration must hold exactly {sorted(Calibration.__dataclass_fields__)}")
    values = {name: _finite_number(data[name], f"calibration.{name}") for name in data}
    if values["scale"] <= 0:
        raise ModelFormatError("calibration.scale must be positive")
    for count in ("n_positive", "n_negative"):
        if values[count] < 0 or values[count] != int(values[count]):
            raise ModelFormatError(f"calibration.{count} must be a non-negative integer")
        values[count] = int(values[count])
    return Calibration(**values)


def train_linear_svm(
    X: sp.spmatrix,
    y: np.ndarray,
    C: float = 1.0,
    *,
    config: FeatureConfig | None = None,
    features: np.ndarray | None = None,
    training_ids: Sequence[str] = (),
    class_weight: str | None = None,
) -> LinearModel:
    """A linear SVM separating rows with y == 1 from rows with y == 0 (liblinear, squared hinge).

    `config` names the feature space of X (default: the standard FeatureConfig of X's width); `features`
    restricts the model to those columns, as the MI-selected feature spaces of the topic model do.
    """
    config = config or FeatureConfig(n_features=X.shape[1])
    check_feature_space(config, X)
    y = np.asarray(y).astype(np.int8).ravel()
    if y.shape[0] != X.shape[0]:
        raise TrainingDataError(f"{X.shape[0]} rows but {y.shape[0]} labels")
    if not ((y == 1).any() and (y == 0).any()):
        raise TrainingDataError("a linear SVM needs positive and negative training documents")
    X = sp.csr_matrix(X)
    columns = np.unique(np.asarray(features, dtype=np.int64)) if features is not None else None
    X_fit = X[:, columns] if columns is not None else X
    # a fixed seed for liblinear's shuffling: the same documents give the same model on every run
    svm = LinearSVC(C=C, class_weight=class_weight, dual=True, max_iter=5000, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # the last iterate is still a usable separator
        svm.fit(X_fit, y)
    coef = svm.coef_.ravel().astype(np.float32)
    if columns is None:
        columns = np.arange(X.shape[1])
    keep = coef != 0
    model = LinearModel(config, columns[keep].astype(np.int32), coef[keep], float(svm.intercept_[0]))
    calibration = Calibration.of(model.decision_function(X), y)
    return LinearModel(
        config, model.indices, model.weights, model.bias, calibration, tuple(str(i) for i in training_ids)
    )
