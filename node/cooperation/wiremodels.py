"""Topic models as they travel: `LinearModel` and `ClusteringModel` to and from the wire's `ModelPayload`.

A linear model is thesis 3.3.4's (w, l, b): one sparse row over the hashed feature space, the bias, and the
feature configuration; its calibration (the normalised-confidence scale) and its training-document IDs
travel along (as short keys), the IDs so that receivers can cross-validate it on their own data without the
shared documents (3.15). A k-means model is 3.3.3's centroids with the hashed ids of their dimensions.
"""

from __future__ import annotations

import time
from dataclasses import asdict, replace
from typing import Any

import numpy as np

from metamodels.clustering import ClusteringModel
from metamodels.errors import ModelFormatError
from metamodels.features import FeatureConfig
from metamodels.linear import Calibration, LinearModel
from node.cooperation.training import training_key
from p2p.errors import WireError
from p2p.message_limits import MAX_TRAINING_DOCS
from p2p.messages.models import ModelPayload, pack_weights


def _doc_ids(ids: tuple[str, ...]) -> tuple[str, ...]:
    """The training documents as keys (`training.training_key`): 7 characters each instead of a URL."""
    return tuple(training_key(i) for i in ids)[:MAX_TRAINING_DOCS]


def coarse(weights: np.ndarray) -> np.ndarray:
    """float32 weights rounded to 8 significant bits (bfloat16's precision, relative error <= 2**-9): the
    low two bytes of each value become zero, which the frame compression removes, so a shipped model costs
    about a quarter less with its decisions unchanged; a nonzero weight stays nonzero."""
    exact = np.ascontiguousarray(weights, dtype=np.float32)
    bits = exact.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)
    truncated = (bits & 0xFFFF0000).astype(np.uint32).view(np.float32)  # never rounds up to infinity
    return np.where(np.isfinite(rounded) | ~np.isfinite(exact), rounded, truncated)


def linear_payload(model: LinearModel, topic: str, version: int, origin: str) -> ModelPayload:
    row = np.zeros((1, model.config.n_features), dtype=np.float32)
    row[0, model.indices] = coarse(model.weights)
    return ModelPayload(
        topic=topic,
        version=version,
        kind="linear",
        feature_config=model.config.to_dict(),
        rows=1,
        **pack_weights(row),
        biases=(float(model.bias),),
        training_doc_ids=_doc_ids(model.training_ids),
        origin=origin,
        created=time.time(),
        extra={"calibration": asdict(model.calibration)},
    )


def feature_config_of(payload: ModelPayload) -> FeatureConfig:
    """The feature space a model payload names; `WireError("bad_model")` when it names none."""
    try:
        return FeatureConfig.from_dict(dict(payload.feature_config))
    except (ModelFormatError, TypeError, ValueError) as exc:
        raise WireError("bad_model", f"its feature config cannot be read: {str(exc)[:200]}") from None


def linear_from_payload(payload: ModelPayload) -> LinearModel:
    """The model a validated payload describes; `WireError("bad_model")` when it is not a usable one."""
    if payload.kind != "linear":
        raise WireError("bad_model", f"expected a linear model, got kind {payload.kind!r}")
    try:
        config = FeatureConfig.from_dict(dict(payload.feature_config))
        row = payload.weight_matrix()[0]
        indices = np.flatnonzero(row).astype(np.int32)
        raw = dict(payload.extra.get("calibration") or {})
        calibration = (
            Calibration(**{k: raw[k] for k in Calibration.__dataclass_fields__}) if raw else Calibration()
        )
        if not calibration.scale > 0:
            raise ModelFormatError("calibration scale must be positive")
        return LinearModel(
            config,
            indices,
            row[indices],
            float(payload.biases[0]),
            calibration,
            tuple(payload.training_doc_ids),
        )
    except (ModelFormatError, KeyError, TypeError, ValueError) as exc:
        raise WireError("bad_model", str(exc)[:200]) from None


def flipped(model: LinearModel) -> LinearModel:
    """A label-flipped copy: what a hostile peer offers (testing the robust weights)."""
    return replace(model, weights=-model.weights, bias=-model.bias)


def centroids_payload(model: ClusteringModel, topic: str, version: int, origin: str) -> ModelPayload:
    if model.projection is not None:
        raise ValueError("only k-means centroid models travel (no SVD projection)")
    matrix = np.zeros((model.k, model.feature_config.n_features), dtype=np.float32)
    matrix[:, model.feature_indices] = model.centroids
    return ModelPayload(
        topic=topic,
        version=version,
        kind="centroids",
        feature_config=model.feature_config.to_dict(),
        rows=model.k,
        **pack_weights(matrix),
        biases=(),
        training_doc_ids=(),
        origin=origin,
        created=time.time(),
        extra={"method": model.method, "names": [n[:200] for n in model.names]},
    )


def centroids_from_payload(payload: ModelPayload) -> ClusteringModel:
    if payload.kind != "centroids":
        raise WireError("bad_model", f"expected a centroids model, got kind {payload.kind!r}")
    try:
        config = FeatureConfig.from_dict(dict(payload.feature_config))
        matrix = payload.weight_matrix()
        columns = np.flatnonzero(np.any(matrix != 0, axis=0)).astype(np.int64)
        if columns.size == 0:
            raise ModelFormatError("all centroids are zero")
        names: Any = payload.extra.get("names") or [f"cluster {j + 1}" for j in range(payload.rows)]
        return ClusteringModel(
            method="kmeans",
            feature_config=config,
            feature_indices=columns,
            projection=None,
            scale=None,
            centroids=matrix[:, columns],
            names=tuple(str(n) for n in names),
            top_terms=tuple(() for _ in range(payload.rows)),
        )
    except (ModelFormatError, KeyError, TypeError, ValueError) as exc:
        raise WireError("bad_model", str(exc)[:200]) from None
