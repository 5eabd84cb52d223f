"""Versioned, strictly validated wire messages.

Every message is a frozen dataclass with `to_wire()` (a plain msgpack-able dict: ``{"type", "version",
...fields}``) and `from_wire()` (the only way a peer's dict becomes a message). `from_wire` checks
required fields and their types, rejects unknown fields and unknown schema versions, caps every string
and every list, accepts finite floats only (also inside float32 byte arrays) and checks that model
weights match the declared feature space. Each violation raises `WireError` with a stable reason. Single
values are checked by `p2p.value_checks`; this module reads whole messages from them.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self, TypeVar

import numpy as np

from p2p.codec import MAX_FRAME
from p2p.message_limits import (
    KIB,
    MAX_ABS_FLOAT,
    MAX_ADDRS_PER_PEER,
    MAX_ANNOUNCED_TOPICS,
    MAX_CONFIG_KEYS,
    MAX_CONFIG_LIST,
    MAX_CONFIG_STR,
    MAX_CURSOR,
    MAX_DOC_ID_LEN,
    MAX_EXTRA_KEYS,
    MAX_EXTRA_LIST,
    MAX_FEATURES,
    MAX_FINGERPRINT_LEN,
    MAX_HELD_FILTER_BYTES,
    MAX_HELD_HASHES,
    MAX_META_MEMBERS,
    MAX_NEIGHBOURS,
    MAX_PARTICIPANTS,
    MAX_PREVIEW_LEN,
    MAX_REASON_LEN,
    MAX_REPORT_ENTRIES,
    MAX_RESULTS,
    MAX_ROWS,
    MAX_TITLE_LEN,
    MAX_TRAINING_DOCS,
    MAX_VERSION,
    META_PHASES,
    MIB,
    MODEL_KINDS,
    SIGNATURE_LEN,
)
from p2p.value_checks import (
    FINGERPRINT_RE,
    SLUG_RE,
    check_addr,
    check_bool,
    check_bytes,
    check_float,
    check_float32_array,
    check_int,
    check_pattern,
    check_peer_id,
    check_seq,
    check_session,
    check_str,
    check_topic,
    check_url,
    fail,
    type_name,
)

T = TypeVar("T")


class _Fields:
    """A peer's dict being read field by field; leftovers are unknown fields and rejected."""

    def __init__(self, value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise fail("wrong_type", where, f"expected map, got {type_name(value)}")
        self._data = value
        self._where = where
        self._seen: set[str] = set()

    def has(self, key: str) -> bool:
        return key in self._data

    def get(self, key: str, check: Callable[..., T], *args: Any) -> T:
        self._seen.add(key)
        if key not in self._data:
            raise fail("missing_field", self._where, f"required field {key!r} is missing")
        return check(self._data[key], f"{self._where}.{key}", *args)

    def optional(self, key: str, check: Callable[..., T], *args: Any) -> T | None:
        self._seen.add(key)
        value = self._data.get(key)
        return None if value is None else check(value, f"{self._where}.{key}", *args)

    def nested(self, key: str, parse: Callable[[Any, str], T]) -> T:
        return self.get(key, parse)

    def done(self) -> None:
        unknown = set(self._data) - self._seen
        if unknown:
            raise fail("unknown_field", self._where, f"unknown fields {sorted(map(str, unknown))[:5]}")


def _record(cls: Callable[..., T]) -> Callable[[Any, str], T]:
    """Adapts a record class's `parse(fields)` to the `check(value, where)` signature."""

    def parse(value: Any, where: str) -> T:
        fields = _Fields(value, where)
        result = cls.parse(fields)  # type: ignore[attr-defined]
        fields.done()
        return result

    return parse


# ----------------------------------------------------------------------------------- message base
MESSAGE_TYPES: dict[str, type[Message]] = {}


class Message:
    """Base of the top-level messages: the envelope `{"type", "version"}` plus the body fields."""

    TYPE: ClassVar[str]
    SCHEMA_VERSION: ClassVar[int] = 1
    KNOWN_VERSIONS: ClassVar[frozenset[int]] = frozenset({1})
    MAX_FRAME: ClassVar[int] = MAX_FRAME
    """Largest frame a receiver reads for this message (`read_frame(stream, ModelResponse.MAX_FRAME)`)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "TYPE" in cls.__dict__:
            MESSAGE_TYPES[cls.TYPE] = cls

    def to_wire(self) -> dict[str, Any]:
        return {"type": self.TYPE, "version": self.SCHEMA_VERSION, **self.body()}

    def body(self) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def parse(cls, fields: _Fields) -> Self:
        raise NotImplementedError

    @classmethod
    def from_wire(cls, wire: Any) -> Self:
        fields = _Fields(wire, cls.TYPE)
        kind = fields.get("type", check_str, 64)
        if kind != cls.TYPE:
            raise fail("unexpected_type", cls.TYPE, f"got message type {kind!r}")
        version = fields.get("version", check_int, 0, MAX_VERSION)
        if version not in cls.KNOWN_VERSIONS:
            raise fail(
                "unknown_version", cls.TYPE, f"schema version {version} (known: {sorted(cls.KNOWN_VERSIONS)})"
            )
        message = cls.parse(fields)
        fields.done()
        return message


def message_from_wire(wire: Any, expected: type[Message] | None = None) -> Message:
    """Dispatch on the envelope's type; `expected` rejects any other message type."""
    if not isinstance(wire, dict):
        raise fail("wrong_type", "message", f"expected map, got {type_name(wire)}")
    kind = wire.get("type")
    if not isinstance(kind, str):
        raise fail("missing_field" if kind is None else "wrong_type", "message", "no string 'type' field")
    cls = MESSAGE_TYPES.get(kind)
    if cls is None:
        raise fail("unknown_type", "message", f"unknown message type {kind[:64]!r}")
    if expected is not None and cls is not expected:
        raise fail("unexpected_type", "message", f"got {kind!r}, expected {expected.TYPE!r}")
    return cls.from_wire(wire)


# ------------------------------------------------------------------------------------- membership
@dataclass(frozen=True)
class NeighbourEntry:
    """One line of a thesis 3.3.1 neighbour list: who, where, and when last heard of (unix seconds)."""

    peer_id: str
    addrs: tuple[str, ...]
    last_contact: float

    def to_wire(self) -> dict[str, Any]:
        return {"peer_id": self.peer_id, "addrs": list(self.addrs), "last_contact": float(self.last_contact)}

    @classmethod
    def parse(cls, f: _Fields) -> Self:
        return cls(
            peer_id=f.get("peer_id", check_peer_id),
            addrs=f.get("addrs", check_seq, MAX_ADDRS_PER_PEER, check_addr),
            last_contact=f.get("last_contact", check_float, 0.0, MAX_ABS_FLOAT),
        )


@dataclass(frozen=True)
class NeighbourExchange(Message):
    """Push-pull neighbour exchange: both sides send their bounded list."""

    TYPE: ClassVar[str] = "neighbours"
    MAX_FRAME: ClassVar[int] = 256 * KIB
    entries: tuple[NeighbourEntry, ...]

    def body(self) -> dict[str, Any]:
        return {"entries": [entry.to_wire() for entry in self.entries]}

    @classmethod
    def parse(cls, f: _Fields) -> Self:
        return cls(entries=f.get("entries", check_seq, MAX_NEIGHBOURS, _record(NeighbourEntry)))


@dataclass(frozen=True)
class TopicEntry:
    """A topic key a peer holds and the newest model version it has for it (0: no model yet)."""

    key: str
    model_version: int = 0

    def to_wire(self) -> dict[str, Any]:
        return {"key": self.key, "model_version": self.model_version}

    @classmethod
    def parse(cls, f: _Fields) -> Self:
        return cls(
            key=f.get("key", check_topic), model_version=f.get("model_version", check_int, 0, MAX_VERSION)
        )


@dataclass(frozen=True)
class TopicAnnouncement(Message):
    """A batch of topic keys, small enough for gossipsub (well under its 1 MiB cap)."""

    TYPE: ClassVar[str] = "topics"
    MAX_FRAME: ClassVar[int] = 64 * KIB
    origin: str
    topics: tuple[TopicEntry, ...]

    def body(self) -> dict[str, Any]:
        return {"origin": self.origin, "topics": [topic.to_wire() for topic in self.topics]}

    @classmethod
    def parse(cls, f: _Fields) -> Self:
        return cls(
            origin=f.get("origin", check_peer_id),
            topics=f.get("topics", check_seq, MAX_ANNOUNCED_TOPICS, _record(TopicEntry)),
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
    def parse(cls, f: _Fields) -> Self:
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
    def parse(cls, f: _Fields) -> Self:
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
        meta = f.optional("meta", _record(MetaParams))
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
    def parse(cls, f: _Fields) -> Self:
        return cls(
            payload=f.get("payload", _record(ModelPayload)),
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
    def parse(cls, f: _Fields) -> Self:
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
    def parse(cls, f: _Fields) -> Self:
        topic = f.get("topic", check_topic)
        model = f.optional("model", _record(SignedModel))
        if model is not None and model.payload.topic != topic:
            raise fail("bad_value", "model_response", "the model belongs to another topic")
        return cls(topic=topic, model=model)


# ----------------------------------------------------------------------------------- crawl results
@dataclass(frozen=True)
class CrawlResult:
    """One page a peer's crawler accepted for a topic, as shared with the topic's community."""

    url: str
    title: str
    preview: str
    topic: str
    confidence: float
    fingerprint: str
    origin: str
    fetched_at: float

    def to_wire(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "title": self.title,
            "preview": self.preview,
            "topic": self.topic,
            "confidence": float(self.confidence),
            "fingerprint": self.fingerprint,
            "origin": self.origin,
            "fetched_at": float(self.fetched_at),
        }

    @classmethod
    def parse(cls, f: _Fields) -> Self:
        return cls(
            url=f.get("url", check_url),
            title=f.get("title", check_str, MAX_TITLE_LEN, 0),
            preview=f.get("preview", check_str, MAX_PREVIEW_LEN, 0),
            topic=f.get("topic", check_topic),
            confidence=f.get("confidence", check_float),
            fingerprint=f.get(
                "fingerprint", check_pattern, MAX_FINGERPRINT_LEN, FINGERPRINT_RE, "fingerprint"
            ),
            origin=f.get("origin", check_peer_id),
            fetched_at=f.get("fetched_at", check_float, 0.0, MAX_ABS_FLOAT),
        )


@dataclass(frozen=True)
class SignedResult:
    """A crawl result signed by its origin; each item stays verifiable when relayed or synced alone."""

    result: CrawlResult
    signature: bytes

    def to_wire(self) -> dict[str, Any]:
        return {"result": self.result.to_wire(), "signature": bytes(self.signature)}

    @classmethod
    def parse(cls, f: _Fields) -> Self:
        return cls(
            result=f.get("result", _record(CrawlResult)),
            signature=f.get("signature", check_bytes, SIGNATURE_LEN, SIGNATURE_LEN),
        )


HELD_FILTER_PERSON = b"topicswarm-bloom"


def held_filter_probes(key: str, bits: int, hashes: int) -> list[int]:
    """The bit positions of `key` in a `HeldFilter` of `bits` bits and `hashes` hash functions (the
    specification both peers must share, hence BLAKE2b and not Python's per-process `hash()`)."""
    digest = hashlib.blake2b(key.encode("utf-8"), digest_size=16, person=HELD_FILTER_PERSON).digest()
    h1 = int.from_bytes(digest[:8], "little")
    h2 = int.from_bytes(digest[8:], "little") | 1
    return [(h1 + i * h2) % bits for i in range(hashes)]


def _check_filter_bits(value: Any, where: str) -> bytes:
    bits = check_bytes(value, where, MAX_HELD_FILTER_BYTES)
    if not bits:
        raise fail("too_short", where, "an empty filter (send none instead)")
    return bits


@dataclass(frozen=True)
class HeldFilter:
    """A Bloom filter of the result URLs a result-sync asker already holds, so the provider leaves them
    out. A false positive only leaves one result unsent; checking a result costs the provider one BLAKE2b
    and at most `MAX_HELD_HASHES` bit probes, however hostile the filter.

    Specification: m = 8 * len(bits) bits, k = hashes. A key (the URL exactly as in `CrawlResult.url`,
    UTF-8) sets bits (h1 + i * h2) mod m for i in 0..k-1, where h1 and h2 are the little-endian unsigned
    64-bit halves of BLAKE2b with a 16-byte digest and person b"topicswarm-bloom", h2 forced odd (double
    hashing, Kirsch and Mitzenmacher); bit j is bit j % 8 (least significant first) of byte j // 8."""

    bits: bytes
    hashes: int

    @staticmethod
    def capacity(fp_rate: float, max_bytes: int) -> int:
        """Most keys a filter of `max_bytes` holds at `fp_rate` (a sender with more keeps its newest)."""
        return max(int(8 * max_bytes * math.log(2) ** 2 / -math.log(fp_rate)), 1)

    @classmethod
    def build(cls, keys: Iterable[str], fp_rate: float, max_bytes: int) -> HeldFilter:
        """A filter of `keys` sized for `fp_rate` (m = -n ln p / ln(2)^2 bits, k = m/n ln 2), capped at
        `max_bytes` (more keys than that holds at `fp_rate` raise the false-positive rate instead)."""
        unique = set(keys)
        if not 0.0 < fp_rate < 1.0:
            raise ValueError(f"fp_rate must lie in (0, 1), got {fp_rate}")
        if not 1 <= max_bytes <= MAX_HELD_FILTER_BYTES:
            raise ValueError(f"max_bytes must lie in [1, {MAX_HELD_FILTER_BYTES}], got {max_bytes}")
        n = max(len(unique), 1)
        wanted = math.ceil(-n * math.log(fp_rate) / math.log(2) ** 2)
        size = min(max(math.ceil(wanted / 8), 1), max_bytes)
        hashes = min(max(round(8 * size / n * math.log(2)), 1), MAX_HELD_HASHES)
        array = bytearray(size)
        for key in unique:
            for j in held_filter_probes(key, 8 * size, hashes):
                array[j >> 3] |= 1 << (j & 7)
        return cls(bytes(array), hashes)

    def __contains__(self, key: str) -> bool:
        return all(
            self.bits[j >> 3] >> (j & 7) & 1 for j in held_filter_probes(key, 8 * len(self.bits), self.hashes)
        )

    def to_wire(self) -> dict[str, Any]:
        return {"bits": bytes(self.bits), "hashes": self.hashes}

    @classmethod
    def parse(cls, f: _Fields) -> Self:
        return cls(
            bits=f.get("bits", _check_filter_bits), hashes=f.get("hashes", check_int, 1, MAX_HELD_HASHES)
        )


@dataclass(frozen=True)
class ResultSyncRequest(Message):
    """Ask for a topic's results after `cursor` (0: from the beginning), at most `limit` of them; with
    `held`, a Bloom filter of the URLs the asker holds already, which the provider may leave out."""

    TYPE: ClassVar[str] = "result_sync_request"
    MAX_FRAME: ClassVar[int] = 16 * KIB + MAX_HELD_FILTER_BYTES
    topic: str
    cursor: int = 0
    limit: int = MAX_RESULTS
    held: HeldFilter | None = None

    def body(self) -> dict[str, Any]:
        body = {"topic": self.topic, "cursor": self.cursor, "limit": self.limit}
        if self.held is not None:
            body["held"] = self.held.to_wire()
        return body

    @classmethod
    def parse(cls, f: _Fields) -> Self:
        return cls(
            topic=f.get("topic", check_topic),
            cursor=f.get("cursor", check_int, 0, MAX_CURSOR),
            limit=f.get("limit", check_int, 1, MAX_RESULTS),
            held=f.optional("held", _record(HeldFilter)),
        )


@dataclass(frozen=True)
class ResultSyncResponse(Message):
    """Results after the request's cursor; ask again from `next_cursor` while `more` is true."""

    TYPE: ClassVar[str] = "result_sync_response"
    MAX_FRAME: ClassVar[int] = 4 * MIB
    topic: str
    items: tuple[SignedResult, ...]
    next_cursor: int
    more: bool = False

    def body(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "items": [item.to_wire() for item in self.items],
            "next_cursor": self.next_cursor,
            "more": self.more,
        }

    @classmethod
    def parse(cls, f: _Fields) -> Self:
        topic = f.get("topic", check_topic)
        items = f.get("items", check_seq, MAX_RESULTS, _record(SignedResult))
        # an item carries the topic or the subtopic of it its crawler filed it in
        if any(i.result.topic != topic and not i.result.topic.startswith(topic + "/") for i in items):
            raise fail(
                "bad_value",
                "result_sync_response.items",
                "an item belongs to a topic outside the one asked for",
            )
        return cls(
            topic=topic,
            items=items,
            next_cursor=f.get("next_cursor", check_int, 0, MAX_CURSOR),
            more=f.get("more", check_bool),
        )


# ---------------------------------------------------------------- meta-model protocol (fig. 3.5/3.6)
@dataclass(frozen=True)
class HeldModel:
    """A model the initiator of a meta session already holds, so a peer offers it by reference."""

    origin: str
    model_version: int

    def to_wire(self) -> dict[str, Any]:
        return {"origin": self.origin, "model_version": self.model_version}

    @classmethod
    def parse(cls, f: _Fields) -> Self:
        return cls(
            origin=f.get("origin", check_peer_id),
            model_version=f.get("model_version", check_int, 1, MAX_VERSION),
        )


@dataclass(frozen=True)
class MetaRequest(Message):
    """METAREQUEST. Phase "estimate": exchange classifiers with `participants`, cross-validate and report
    errors and covariances to the initiator (fig. 3.6, participants given). Phase "build": send the own
    classifier to the initiator (fig. 3.6, participants null). `held` lists the (origin, version) pairs the
    initiator already holds: a peer whose classifier is among them offers it by reference, not again."""

    TYPE: ClassVar[str] = "meta_request"
    MAX_FRAME: ClassVar[int] = 64 * KIB
    session: str
    topic: str
    initiator: str
    phase: str
    goal_loss: float
    goal_error: float | None = None
    participants: tuple[str, ...] = ()
    held: tuple[HeldModel, ...] = ()

    def body(self) -> dict[str, Any]:
        body = {
            "session": self.session,
            "topic": self.topic,
            "initiator": self.initiator,
            "phase": self.phase,
            "goal_loss": float(self.goal_loss),
            "goal_error": None if self.goal_error is None else float(self.goal_error),
            "participants": list(self.participants),
        }
        if self.held:
            body["held"] = [h.to_wire() for h in self.held]
        return body

    @classmethod
    def parse(cls, f: _Fields) -> Self:
        phase = f.get("phase", check_str, 16)
        if phase not in META_PHASES:
            raise fail("bad_value", "meta_request.phase", f"{phase!r} not one of {META_PHASES}")
        return cls(
            session=f.get("session", check_session),
            topic=f.get("topic", check_topic),
            initiator=f.get("initiator", check_peer_id),
            phase=phase,
            goal_loss=f.get("goal_loss", check_float, 0.0, 1.0),
            goal_error=f.optional("goal_error", check_float, 0.0, 1.0),
            participants=f.get("participants", check_seq, MAX_PARTICIPANTS, check_peer_id),
            held=f.optional("held", check_seq, MAX_PARTICIPANTS, _record(HeldModel)) or (),
        )


@dataclass(frozen=True)
class MetaClassifierOffer(Message):
    """A peer's classifier for a meta session, with the IDs (not contents) of its training documents
    inside the signed model so receivers can cross-validate on D_b - D_a (thesis 3.15). When the initiator
    holds that classifier already (`MetaRequest.held`), `model` is None and `model_version` names it."""

    TYPE: ClassVar[str] = "meta_offer"
    MAX_FRAME: ClassVar[int] = 16 * MIB
    session: str
    model: SignedModel | None
    model_version: int = 0

    def __post_init__(self) -> None:
        if self.model is not None and not self.model_version:
            object.__setattr__(self, "model_version", self.model.payload.version)

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"session": self.session, "model_version": self.model_version}
        if self.model is not None:
            body["model"] = self.model.to_wire()
        return body

    @classmethod
    def parse(cls, f: _Fields) -> Self:
        model = f.optional("model", _record(SignedModel))
        version = f.optional("model_version", check_int, 1, MAX_VERSION)
        if model is None and version is None:
            raise fail("missing_field", "meta_offer", "an offer needs a model or the version it references")
        if model is not None and version is not None and version != model.payload.version:
            raise fail("bad_value", "meta_offer.model_version", "differs from the model's version")
        return cls(
            session=f.get("session", check_session),
            model=model,
            model_version=version or (model.payload.version if model else 0),
        )


@dataclass(frozen=True)
class CvEntry:
    """How one peer's classifier did on the reporter's held-out documents."""

    origin: str
    model_version: int
    tested: int
    errors: int

    @property
    def error(self) -> float:
        return self.errors / self.tested if self.tested else 0.0

    def to_wire(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "model_version": self.model_version,
            "tested": self.tested,
            "errors": self.errors,
        }

    @classmethod
    def parse(cls, f: _Fields) -> Self:
        entry = cls(
            origin=f.get("origin", check_peer_id),
            model_version=f.get("model_version", check_int, 1, MAX_VERSION),
            tested=f.get("tested", check_int, 0, MAX_CURSOR),
            errors=f.get("errors", check_int, 0, MAX_CURSOR),
        )
        if entry.errors > entry.tested:
            raise fail("bad_value", "cv entry", f"{entry.errors} errors out of {entry.tested} tested")
        return entry


@dataclass(frozen=True)
class _PeerReport(Message):
    """What a contacted peer returns to the initiator in the estimation phase (fig. 3.6)."""

    ENTRY: ClassVar[Any]
    session: str
    topic: str
    reporter: str
    entries: tuple[Any, ...]

    def body(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "topic": self.topic,
            "reporter": self.reporter,
            "entries": [entry.to_wire() for entry in self.entries],
        }

    @classmethod
    def parse(cls, f: _Fields) -> Self:
        return cls(
            session=f.get("session", check_session),
            topic=f.get("topic", check_topic),
            reporter=f.get("reporter", check_peer_id),
            entries=f.get("entries", check_seq, MAX_REPORT_ENTRIES, _record(cls.ENTRY)),
        )


@dataclass(frozen=True)
class CrossValidationReport(_PeerReport):
    """Errors of the other peers' classifiers on the reporter's data, the shared documents removed."""

    TYPE: ClassVar[str] = "meta_cv"
    MAX_FRAME: ClassVar[int] = 256 * KIB
    ENTRY: ClassVar[Any] = CvEntry
    entries: tuple[CvEntry, ...]


@dataclass(frozen=True)
class CovEntry:
    """Estimated covariance of two classifiers' correctness indicators over `joint` shared test documents.
    Two Bernoulli variables have |cov| <= 1/4."""

    origin_a: str
    origin_b: str
    joint: int
    covariance: float

    def to_wire(self) -> dict[str, Any]:
        return {
            "origin_a": self.origin_a,
            "origin_b": self.origin_b,
            "joint": self.joint,
            "covariance": float(self.covariance),
        }

    @classmethod
    def parse(cls, f: _Fields) -> Self:
        return cls(
            origin_a=f.get("origin_a", check_peer_id),
            origin_b=f.get("origin_b", check_peer_id),
            joint=f.get("joint", check_int, 0, MAX_CURSOR),
            covariance=f.get("covariance", check_float, -0.25, 0.25),
        )


@dataclass(frozen=True)
class CovarianceReport(_PeerReport):
    """Pairwise covariances of the classifiers' correctness on the reporter's data."""

    TYPE: ClassVar[str] = "meta_cov"
    MAX_FRAME: ClassVar[int] = 256 * KIB
    ENTRY: ClassVar[Any] = CovEntry
    entries: tuple[CovEntry, ...]


@dataclass(frozen=True)
class MemberRef:
    """A member classifier of a meta model, by origin and version, with its weight w(m_i)."""

    origin: str
    model_version: int
    weight: float

    def to_wire(self) -> dict[str, Any]:
        return {"origin": self.origin, "model_version": self.model_version, "weight": float(self.weight)}

    @classmethod
    def parse(cls, f: _Fields) -> Self:
        return cls(
            origin=f.get("origin", check_peer_id),
            model_version=f.get("model_version", check_int, 1, MAX_VERSION),
            weight=f.get("weight", check_float),
        )


@dataclass(frozen=True)
class MetaModelDescription(Message):
    """The initiator's final meta classifier (thesis 3.14: members, weights, t1, t2) with the loss and
    error it expects from the estimators (3.16-3.19). The full model travels as a kind "meta" model."""

    TYPE: ClassVar[str] = "meta_model"
    MAX_FRAME: ClassVar[int] = 256 * KIB
    session: str
    topic: str
    initiator: str
    members: tuple[MemberRef, ...]
    t1: float
    t2: float
    expected_loss: float
    expected_error: float
    created: float
    model_version: int = field(default=1)

    def body(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "topic": self.topic,
            "initiator": self.initiator,
            "members": [member.to_wire() for member in self.members],
            "t1": float(self.t1),
            "t2": float(self.t2),
            "expected_loss": float(self.expected_loss),
            "expected_error": float(self.expected_error),
            "created": float(self.created),
            "model_version": self.model_version,
        }

    @classmethod
    def parse(cls, f: _Fields) -> Self:
        description = cls(
            session=f.get("session", check_session),
            topic=f.get("topic", check_topic),
            initiator=f.get("initiator", check_peer_id),
            members=f.get("members", check_seq, MAX_META_MEMBERS, _record(MemberRef)),
            t1=f.get("t1", check_float),
            t2=f.get("t2", check_float),
            expected_loss=f.get("expected_loss", check_float, 0.0, 1.0),
            expected_error=f.get("expected_error", check_float, 0.0, 1.0),
            created=f.get("created", check_float, 0.0, MAX_ABS_FLOAT),
            model_version=f.get("model_version", check_int, 1, MAX_VERSION),
        )
        if description.t2 > description.t1:
            raise fail("bad_value", "meta_model", f"t2 {description.t2} > t1 {description.t1}")
        return description


# ------------------------------------------------------------------------------------------ errors
@dataclass(frozen=True)
class Reject(Message):
    """Tells a peer why its request was refused (a reason slug from `WireError.reason`)."""

    TYPE: ClassVar[str] = "reject"
    MAX_FRAME: ClassVar[int] = 4 * KIB
    reason: str
    detail: str = ""

    def body(self) -> dict[str, Any]:
        return {"reason": self.reason, "detail": self.detail}

    @classmethod
    def parse(cls, f: _Fields) -> Self:
        return cls(
            reason=f.get("reason", check_pattern, 64, SLUG_RE, "reason slug"),
            detail=f.get("detail", check_str, MAX_REASON_LEN, 0),
        )


def validate(message: Message) -> Message:
    """Checks a locally built message by the rules a receiver applies (raises `WireError`)."""
    return type(message).from_wire(message.to_wire())
