"""The restrictive meta-classifier of thesis eq. 3.13 and its transferable form 3.14.

Meta(d) = +1 if sum_i R(m_i, d) * w(m_i) > t1, -1 if < t2, 0 (abstain) otherwise. R is either the base
model's signed confidence (the thesis's experiments) or its decision in {+1, -1}. The loss-targeted filter
decides the (1 - L) share of documents with the largest |sum| by sign and dismisses the rest. The whole
meta-classifier is plain data: the base models' dicts, the weights, the thresholds (and, beyond the
thesis, optional per-model Platt scalers and the name of the per-document aggregation its weights were
chosen for, see `metamodels.robust`, or the latent class models whose unanimous decision it is, see
`metamodels.latent_class`), so a peer can ship it to another.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np
import scipy.sparse as sp

from metamodels.calibration import PlattScaler
from metamodels.errors import MetaInputError, ModelFormatError
from metamodels.latent_class import LatentClass
from metamodels.meta_functions import threshold_decisions, weighted_sum
from metamodels.restrictive import loss_targeted_decisions
from metamodels.robust import AGGREGATIONS

META_SCHEMA_VERSION = 1
Response = Literal["confidence", "decision"]
RESPONSES: tuple[str, ...] = ("confidence", "decision")


class BaseModel(Protocol):
    """What the meta-classifier needs from a base model (metamodels.linear.LinearModel has it)."""

    def confidence(self, X: sp.spmatrix) -> np.ndarray: ...

    def to_dict(self) -> dict[str, Any]: ...


def base_responses(
    models: Sequence[BaseModel],
    X: sp.spmatrix,
    response: Response = "confidence",
    scalers: Sequence[PlattScaler | None] | None = None,
) -> np.ndarray:
    """R(m_i, d) for every document (rows) and model (columns): signed confidence, calibrated when a scaler
    is given, or its sign when response == "decision" (a score of 0 counts as a rejection)."""
    if response not in RESPONSES:
        raise MetaInputError(f"response must be one of {RESPONSES}, got {response!r}")
    columns = []
    for index, model in enumerate(models):
        scores = np.asarray(model.confidence(X), dtype=float).reshape(-1)
        scaler = scalers[index] if scalers is not None else None
        if scaler is not None:
            scores = scaler.confidence(scores)
        columns.append(np.where(scores > 0, 1.0, -1.0) if response == "decision" else scores)
    if not columns:
        raise MetaInputError("a meta-classifier needs at least one base model")
    return np.column_stack(columns)


@dataclass(frozen=True)
class MetaClassifier:
    """Eq. 3.13 over base models; `to_dict()` is the transferable tuple (m_1..m_k, w_1..w_k, t1, t2), 3.14."""

    models: tuple[BaseModel, ...]
    weights: tuple[float, ...]
    t1: float = 0.0
    t2: float = 0.0
    response: Response = "confidence"
    scalers: tuple[PlattScaler | None, ...] | None = None
    aggregation: str | None = None  # a `metamodels.robust` aggregation; None: the combiner's default
    latent: tuple[LatentClass, ...] = ()  # when given, the combination: their unanimous decision

    def __post_init__(self) -> None:
        if not self.models:
            raise MetaInputError("a meta-classifier needs at least one base model")
        if len(self.weights) != len(self.models):
            raise MetaInputError(
                f"got {len(self.weights)} weights for {len(self.models)} models: one per model"
            )
        if any(not math.isfinite(w) or w < 0 for w in self.weights):
            raise MetaInputError("weights must be finite and non-negative")
        if not (math.isfinite(self.t1) and math.isfinite(self.t2)) or self.t1 < self.t2:
            raise MetaInputError(f"thresholds need finite t1 >= t2, got t1={self.t1}, t2={self.t2}")
        if self.response not in RESPONSES:
            raise MetaInputError(f"response must be one of {RESPONSES}, got {self.response!r}")
        if self.scalers is not None and len(self.scalers) != len(self.models):
            raise MetaInputError(f"got {len(self.scalers)} scalers for {len(self.models)} models")
        if self.aggregation is not None and self.aggregation not in AGGREGATIONS:
            raise MetaInputError(
                f"aggregation must be one of {AGGREGATIONS} or None, got {self.aggregation!r}"
            )
        for voter in self.latent:
            if max(voter.views) >= len(self.models):
                raise MetaInputError(
                    f"a latent class model reads views {voter.views} of {len(self.models)} models"
                )
            if any(self.scaler(v) is None for v in voter.views):
                raise MetaInputError("every model a latent class model reads needs a Platt scaler")

    @classmethod
    def equal_weights(cls, models: Sequence[BaseModel], **options: Any) -> MetaClassifier:
        """All weights 1, as in the thesis's experiments."""
        return cls(models=tuple(models), weights=(1.0,) * len(models), **options)

    def scaler(self, index: int) -> PlattScaler | None:
        return self.scalers[index] if self.scalers is not None else None

    def responses(self, X: sp.spmatrix) -> np.ndarray:
        return base_responses(self.models, X, self.response, self.scalers)

    def view_log_odds(self, X: sp.spmatrix, voter: LatentClass) -> np.ndarray:
        """The calibrated log-odds of the models a latent class model reads (documents x views)."""
        columns = []
        for view in voter.views:
            scaler = self.scaler(view)
            assert scaler is not None  # checked when the meta-classifier was made
            columns.append(scaler.log_odds(self.models[view].confidence(X)))
        return np.column_stack(columns)

    def combined(self, X: sp.spmatrix) -> np.ndarray:
        """sum_i R(m_i, d) * w(m_i): the meta confidence of each document."""
        return weighted_sum(self.responses(X), self.weights)

    def decide(self, X: sp.spmatrix) -> np.ndarray:
        """Eq. 3.13: +1 / -1 / 0 by the thresholds."""
        return threshold_decisions(self.combined(X), self.t1, self.t2)

    def decide_with_loss(self, X: sp.spmatrix, loss: float) -> np.ndarray:
        """Loss-targeted filter: decide the (1 - loss) share with the largest |meta confidence| by sign."""
        return loss_targeted_decisions(self.combined(X), loss)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "meta_classifier",
            "version": META_SCHEMA_VERSION,
            "models": [model.to_dict() for model in self.models],
            "weights": [float(w) for w in self.weights],
            "t1": float(self.t1),
            "t2": float(self.t2),
            "response": self.response,
            "scalers": None if self.scalers is None else [s.to_dict() if s else None for s in self.scalers],
            "aggregation": self.aggregation,
            "latent": [voter.to_dict() for voter in self.latent],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], model_from_dict: Any = None) -> MetaClassifier:
        """Rebuild from plain data; base models are decoded with `model_from_dict` (default LinearModel)."""
        if model_from_dict is None:
            from metamodels.linear import LinearModel

            model_from_dict = LinearModel.from_dict
        if not isinstance(data, Mapping) or data.get("kind") != "meta_classifier":
            raise ModelFormatError("not a meta-classifier: expected a mapping with kind 'meta_classifier'")
        if data.get("version") != META_SCHEMA_VERSION:
            raise ModelFormatError(
                f"meta-classifier version {data.get('version')!r} is not supported; "
                f"this node reads version {META_SCHEMA_VERSION}"
            )
        try:
            models = tuple(model_from_dict(m) for m in data["models"])
            weights = tuple(float(w) for w in data["weights"])
            t1, t2 = float(data["t1"]), float(data["t2"])
            response = data["response"]
            raw_scalers = data.get("scalers")
            aggregation = data.get("aggregation")  # absent in dicts written before it existed
            raw_latent = data.get("latent")  # likewise
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFormatError(f"malformed meta-classifier: {exc}") from exc
        scalers = None
        if raw_scalers is not None:
            if not isinstance(raw_scalers, list | tuple):  # msgpack decodes arrays as tuples
                raise ModelFormatError("meta-classifier 'scalers' must be a list or null")
            scalers = tuple(None if s is None else PlattScaler.from_dict(s) for s in raw_scalers)
        raw_latent = [] if raw_latent is None else raw_latent
        if not isinstance(raw_latent, list | tuple) or not all(isinstance(v, Mapping) for v in raw_latent):
            raise ModelFormatError("meta-classifier 'latent' must be a list of latent class models")
        latent = tuple(LatentClass.from_dict(voter) for voter in raw_latent)
        try:
            return cls(
                models=models,
                weights=weights,
                t1=t1,
                t2=t2,
                response=response,
                scalers=scalers,
                aggregation=aggregation,
                latent=latent,
            )
        except MetaInputError as exc:
            raise ModelFormatError(f"inconsistent meta-classifier: {exc}") from exc
