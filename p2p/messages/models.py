"""Model exchange: a topic model as it travels (`ModelPayload`, its feature config, extras and weights
checked against the declared feature space), signed by its origin, and the request and response that fetch it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

import numpy as np

from p2p.message_limits import (
    KIB,
    MAX_ABS_FLOAT,
    MAX_CONFIG_KEYS,
    MAX_CONFIG_LIST,
    MAX_CONFIG_STR,
    MAX_DOC_ID_LEN,
    MAX_EXTRA_KEYS,
    MAX_EXTRA_LIST,
    MAX_FEATURES,
    MAX_META_MEMBERS,
    MAX_ROWS,
    MAX_TRAINING_DOCS,
    MAX_VERSION,
    MIB,
    MODEL_KINDS,
    SIGNATURE_LEN,
)
from p2p.messages.envelope import FieldReader, Message, record_check
from p2p.value_checks import (
    check_bytes,
    check_float,
    check_float32_array,
    check_int,
    check_peer_id,
    check_seq,
    check_str,
    check_topic,
    fail,
    type_name,
)


# ------------------------------------------------------------------------------------------ models
def check_feature_config(value: Any, where: str) -> dict[str, Any]:
    """A FeatureConfig as plain scalars (or short lists of scalars); `n_features` is required."""
    if not isinstance(value, dict):
        raise fail("wrong_type", where, f"expected map, got {type_name(value)}")
    if len(value) > MAX_CONFIG_KEYS:
        raise fail("too_many_items", where, f"{len(value)} keys > {MAX_CONFIG_KEYS}")
    config: dict[str, Any] = {}
    for key, item in value.items():
        name = check_str(key, f"{where} key", 64)
        config[name] = _check_config_value(item, f"{where}.{name}", allow_list=True)
    if "n_features" not in config:
        raise fail("missing_field", where, "required field 'n_features' is missing")
    check_int(config["n_features"], f"{where}.n_features", 1, MAX_FEATURES)
    return config


def _check_config_value(value: Any, where: str, allow_list: bool) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return check_int(value, where, -MAX_VERSION, MAX_VERSION)
    if isinstance(value, float):
        return check_float(value, where)
    if isinstance(value, str):
        return check_str(value, where, MAX_CONFIG_STR, min_len=0)
    if allow_list and isinstance(value, tuple | list):
        return check_seq(value, where, MAX_CONFIG_LIST, lambda v, w: _check_config_value(v, w, False))
    raise fail("wrong_type", where, f"{type_name(value)} is not allowed in a feature config")


def check_extra(value: Any, where: str) -> dict[str, Any]:
    """Model-specific plain data (e.g. a linear model's calibration, a clustering model's feature indices
    and projection) that the model's own `from_dict` validates further: scalars, finite floats, capped
    strings, bytes, short lists of scalars, and maps of those one level deep."""
    if not isinstance(value, dict):
        raise fail("wrong_type", where, f"expected map, got {type_name(value)}")
    return _check_extra(value, where, depth=0)


def _check_extra(value: Any, where: str, depth: int) -> Any:
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    if isinstance(value, dict):
        if depth >= 2:
            raise fail("wrong_type", where, "maps nest at most one level in model extras")
        if len(value) > MAX_EXTRA_KEYS:
            raise fail("too_many_items", where, f"{len(value)} keys > {MAX_EXTRA_KEYS}")
        return {
            check_str(k, f"{where} key", 64): _check_extra(v, f"{where}.{k}", depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, tuple | list):
        return check_seq(
            value, where, MAX_EXTRA_LIST, lambda v, w: _check_config_value(v, w, allow_list=True)
        )
    return _check_config_value(value, where, allow_list=False)


@dataclass(frozen=True)
class MetaParams:
    """What turns stacked member models into a meta classifier (thesis 3.14: weights and t1, t2)."""

    member_origins: tuple[str, ...]
    member_weights: tuple[float, ...]
    t1: float
    t2: float

    def to_wire(self) -> dict[str, Any]:
        return {
            "member_origins": list(self.member_origins),
            "member_weights": [float(w) for w in self.member_weights],
            "t1": float(self.t1),
            "t2": float(self.t2),
        }

    @classmethod
    def parse(cls, f: FieldReader) -> Self:
        params = cls(
            member_origins=f.get("member_origins", check_seq, MAX_META_MEMBERS, check_peer_id),
            member_weights=f.get("member_weights", check_seq, MAX_META_MEMBERS, check_float),
            t1=f.get("t1", check_float),
            t2=f.get("t2", check_float),
        )
        if len(params.member_origins) != len(params.member_weights):
            raise fail("dimension_mismatch", "meta", "member_origins and member_weights differ in length")
        if params.t2 > params.t1:
            raise fail("bad_value", "meta", f"t2 {params.t2} > t1 {params.t1}")
        return params


@dataclass(frozen=True)
class ModelPayload:
    """A topic model as it travels: `rows` weight vectors over a hashed feature space of `n_features`.

    linear: one row (w) and one bias (thesis (w, l, b)); centroids: k rows, biases empty; meta: the k
    member rows with their biases plus `meta`. Weights are dense little-endian float32 (`weights`) or,
    when sparse, strictly increasing uint32 positions into the flattened rows x n_features matrix
    (`indices`) with float32 `values`.
    """

    topic: str
    version: int
    kind: str
    feature_config: Mapping[str, Any]
    rows: int
    weights: bytes
    indices: bytes
    values: bytes
    biases: tuple[float, ...]
    training_doc_ids: tuple[str, ...]
    origin: str
    created: float
    meta: MetaParams | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def n_features(self) -> int:
        return int(self.feature_config["n_features"])

    def weight_matrix(self) -> np.ndarray:
        """The weights as a (rows, n_features) float32 array."""
        if self.weights:
            return np.frombuffer(self.weights, dtype="<f4").reshape(self.rows, self.n_features).copy()
        matrix = np.zeros(self.rows * self.n_features, dtype=np.float32)
        matrix[np.frombuffer(self.indices, dtype="<u4")] = np.frombuffer(self.values, dtype="<f4")
        return matrix.reshape(self.rows, self.n_features)

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "topic": self.topic,
            "version": self.version,
            "kind": self.kind,
            "feature_config": dict(self.feature_config),
            "rows": self.rows,
            "weights": bytes(self.weights),
            "indices": bytes(self.indices),
            "values": bytes(self.values),
            "biases": [float(b) for b in self.biases],
            "training_doc_ids": list(self.training_doc_ids),
            "origin": self.origin,
            "created": float(self.created),
        }
        if self.meta is not None:
            wire["meta"] = self.meta.to_wire()
        if self.extra:
            wire["extra"] = dict(self.extra)
        return wire

    @classmethod
    def parse(cls, f: FieldReader) -> Self:
        config = f.get("feature_config", check_feature_config)
        n_features = config["n_features"]
        kind = f.get("kind", check_str, 16)
        if kind not in MODEL_KINDS:
            raise fail("bad_value", "model.kind", f"{kind!r} not one of {MODEL_KINDS}")
        rows = f.get("rows", check_int, 1, MAX_ROWS)
        if kind == "linear" and rows != 1:
            raise fail("dimension_mismatch", "model.rows", f"a linear model has 1 row, got {rows}")
        cells = rows * n_features
        weights = f.get("weights", check_bytes, 4 * cells)
        indices = f.get("indices", check_bytes, 4 * cells)
        values = f.get("values", check_bytes, 4 * cells)
        _check_weights(weights, indices, values, rows, n_features)
        biases = f.get("biases", check_seq, MAX_ROWS, check_float)
        if len(biases) != rows and not (kind == "centroids" and not biases):
            raise fail("dimension_mismatch", "model.biases", f"{len(biases)} biases for {rows} rows")
        meta = f.optional("meta", record_check(MetaParams))
        if (meta is None) != (kind != "meta"):
            raise fail(
                "bad_value", "model.meta", "meta parameters are required for, and only for, kind 'meta'"
            )
        if meta is not None and len(meta.member_origins) != rows:
            raise fail(
                "dimension_mismatch", "model.meta", f"{len(meta.member_origins)} members for {rows} rows"
            )
        return cls(
            topic=f.get("topic", check_topic),
            version=f.get("version", check_int, 1, MAX_VERSION),
            kind=kind,
            feature_config=config,
            rows=rows,
            weights=weights,
            indices=indices,
            values=values,
            biases=biases,
            training_doc_ids=f.get(
                "training_doc_ids", check_seq, MAX_TRAINING_DOCS, lambda v, w: check_str(v, w, MAX_DOC_ID_LEN)
            ),
            origin=f.get("origin", check_peer_id),
            created=f.get("created", check_float, 0.0, MAX_ABS_FLOAT),
            meta=meta,
            extra=f.optional("extra", check_extra) or {},
        )


def _check_weights(weights: bytes, indices: bytes, values: bytes, rows: int, n_features: int) -> None:
    cells = rows * n_features
    if weights:
        if indices or values:
            raise fail("bad_value", "model.weights", "dense weights and sparse indices/values are exclusive")
        if len(weights) != 4 * cells:
            raise fail(
                "dimension_mismatch",
                "model.weights",
                f"{len(weights) // 4} float32 values for {rows} x {n_features} features",
            )
        check_float32_array(weights, "model.weights", 4 * cells)
        return
    if len(indices) != len(values) or len(indices) % 4:
        raise fail(
            "dimension_mismatch", "model.indices", f"{len(indices)} index bytes vs {len(values)} value bytes"
        )
    check_float32_array(values, "model.values", 4 * cells)
    positions = np.frombuffer(indices, dtype="<u4")
    if positions.size and (
        int(positions[-1]) >= cells
        or (positions.size > 1 and np.any(np.diff(positions.astype(np.int64)) <= 0))
    ):
        raise fail(
            "dimension_mismatch", "model.indices", f"indices must increase strictly and stay below {cells}"
        )


def pack_weights(matrix: np.ndarray) -> dict[str, bytes]:
    """`weights`/`indices`/`values` for a (rows, n_features) matrix, sparse when that is smaller."""
    flat = np.ascontiguousarray(matrix, dtype="<f4").ravel()
    positions = np.flatnonzero(flat)
    if positions.size * 8 < flat.size * 4:
        return {
            "weights": b"",
            "indices": positions.astype("<u4").tobytes(),
            "values": flat[positions].tobytes(),
        }
    return {"weights": flat.tobytes(), "indices": b"", "values": b""}


@dataclass(frozen=True)
class SignedModel:
    """A model with its origin's Ed25519 signature (see `p2p.signing`)."""

    payload: ModelPayload
    signature: bytes

    def to_wire(self) -> dict[str, Any]:
        return {"payload": self.payload.to_wire(), "signature": bytes(self.signature)}

    @classmethod
    def parse(cls, f: FieldReader) -> Self:
        return cls(
            payload=f.get("payload", record_check(ModelPayload)),
            signature=f.get("signature", check_bytes, SIGNATURE_LEN, SIGNATURE_LEN),
        )


@dataclass(frozen=True)
class ModelRequest(Message):
    """Ask for a topic's model: the latest (`version=None`) or one version; of the asked peer itself
    (`origin=None`, schema version 1) or, schema version 2, of `origin`, which the asked peer may relay.

    A relayed model is still signed by its origin, and the fetcher checks that signature and that the
    origin is the one it asked for, so a relay can withhold a model but not forge or swap one. A request
    without an origin is sent as version 1, which peers from before relaying parse; version 1 with an
    `origin` field is rejected (unknown field), as is any other version."""

    TYPE: ClassVar[str] = "model_request"
    KNOWN_VERSIONS: ClassVar[frozenset[int]] = frozenset({1, 2})
    MAX_FRAME: ClassVar[int] = 16 * KIB
    topic: str
    version: int | None = None
    origin: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return {**super().to_wire(), "version": 1 if self.origin is None else 2}

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"topic": self.topic, "model_version": self.version}
        if self.origin is not None:
            body["origin"] = self.origin
        return body

    @classmethod
    def from_wire(cls, wire: Any) -> Self:
        message = super().from_wire(wire)
        if message.origin is not None and wire["version"] < 2:
            raise fail("unknown_field", cls.TYPE, "field 'origin' needs schema version 2")
        return message

    @classmethod
    def parse(cls, f: FieldReader) -> Self:
        return cls(
            topic=f.get("topic", check_topic),
            version=f.optional("model_version", check_int, 1, MAX_VERSION),
            origin=f.optional("origin", check_peer_id),
        )


@dataclass(frozen=True)
class ModelResponse(Message):
    """The requested model, or `model=None` when the peer does not have it."""

    TYPE: ClassVar[str] = "model_response"
    MAX_FRAME: ClassVar[int] = 16 * MIB
    topic: str
    model: SignedModel | None

    def body(self) -> dict[str, Any]:
        return {"topic": self.topic, "model": None if self.model is None else self.model.to_wire()}

    @classmethod
    def parse(cls, f: FieldReader) -> Self:
        topic = f.get("topic", check_topic)
        model = f.optional("model", record_check(SignedModel))
        if model is not None and model.payload.topic != topic:
            raise fail("bad_value", "model_response", "the model belongs to another topic")
        return cls(topic=topic, model=model)
