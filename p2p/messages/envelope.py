"""What every wire message shares: the `{"type", "version"}` envelope, the registry of message types that
`message_from_wire` dispatches on, the field reader each message's `parse` reads a peer's dict with, and
`Reject`, the answer of every protocol to a refused request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Self, TypeVar

from p2p.codec import MAX_FRAME
from p2p.message_limits import KIB, MAX_REASON_LEN, MAX_VERSION
from p2p.value_checks import SLUG_RE, check_int, check_pattern, check_str, fail, type_name

T = TypeVar("T")


class FieldReader:
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


def record_check(cls: Callable[..., T]) -> Callable[[Any, str], T]:
    """Adapts a record class's `parse(fields)` to the `check(value, where)` signature."""

    def parse(value: Any, where: str) -> T:
        fields = FieldReader(value, where)
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
    def parse(cls, fields: FieldReader) -> Self:
        raise NotImplementedError

    @classmethod
    def from_wire(cls, wire: Any) -> Self:
        fields = FieldReader(wire, cls.TYPE)
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
    def parse(cls, f: FieldReader) -> Self:
        return cls(
            reason=f.get("reason", check_pattern, 64, SLUG_RE, "reason slug"),
            detail=f.get("detail", check_str, MAX_REASON_LEN, 0),
        )


def validate(message: Message) -> Message:
    """Checks a locally built message by the rules a receiver applies (raises `WireError`)."""
    return type(message).from_wire(message.to_wire())
