"""Checks of single values from a peer's message: each returns the value as it may be used, or raises
`WireError` with a stable reason and where in the message the value sat. `p2p.messages` builds every message's
reading from these; the node uses `check_peer_id` and `shown_text` on what users and peers name.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from typing import Any, TypeVar

import base58
import numpy as np

from p2p.errors import WireError
from p2p.message_limits import MAX_ABS_FLOAT, MAX_ADDR_LEN, MAX_SESSION_LEN, MAX_TOPIC_LEN, MAX_URL_LEN

T = TypeVar("T")

_PEER_ID_MAX_LEN = 128
_BASE58_RE = re.compile(r"[1-9A-HJ-NP-Za-km-z]+")
_SESSION_RE = re.compile(r"[A-Za-z0-9_-]+")
SLUG_RE = re.compile(r"[a-z0-9_]+")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
_ADDR_RE = re.compile(r"(/[\x21-\x2e\x30-\x7e]+)+")
_URL_RE = re.compile(r"https?://[^\s/?#@]+(?:[/?#][^\s]*)?", re.ASCII)
FINGERPRINT_RE = re.compile(r"[A-Za-z0-9:_+/=-]+")


def fail(reason: str, where: str, detail: str) -> WireError:
    """The error for a bad value at `where` (a dotted path into the message)."""
    return WireError(reason, f"{where}: {detail}")


def type_name(value: object) -> str:
    return type(value).__name__


def check_str(value: Any, where: str, max_len: int, min_len: int = 1) -> str:
    if not isinstance(value, str):
        raise fail("wrong_type", where, f"expected str, got {type_name(value)}")
    if len(value) > max_len:
        raise fail("too_long", where, f"{len(value)} characters > {max_len}")
    if len(value) < min_len:
        raise fail("too_short", where, f"{len(value)} characters < {min_len}")
    return value


def check_int(value: Any, where: str, lo: int, hi: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise fail("wrong_type", where, f"expected int, got {type_name(value)}")
    if not lo <= value <= hi:
        raise fail("out_of_range", where, f"{value} not in [{lo}, {hi}]")
    return value


def check_float(value: Any, where: str, lo: float = -MAX_ABS_FLOAT, hi: float = MAX_ABS_FLOAT) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise fail("wrong_type", where, f"expected float, got {type_name(value)}")
    try:
        result = float(value)
    except OverflowError:
        result = math.inf
    if not math.isfinite(result):
        raise fail("non_finite_float", where, f"{value!r} is not a finite number")
    if not lo <= result <= hi:
        raise fail("out_of_range", where, f"{result} not in [{lo}, {hi}]")
    return result


def check_bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise fail("wrong_type", where, f"expected bool, got {type_name(value)}")
    return value


def check_bytes(value: Any, where: str, max_len: int, exact: int | None = None) -> bytes:
    if not isinstance(value, bytes | bytearray):
        raise fail("wrong_type", where, f"expected bytes, got {type_name(value)}")
    if len(value) > max_len:
        raise fail("too_long", where, f"{len(value)} bytes > {max_len}")
    if exact is not None and len(value) != exact:
        raise fail("bad_value", where, f"{len(value)} bytes, expected {exact}")
    return bytes(value)


def check_seq(value: Any, where: str, max_items: int, item: Callable[[Any, str], T]) -> tuple[T, ...]:
    if not isinstance(value, tuple | list):
        raise fail("wrong_type", where, f"expected array, got {type_name(value)}")
    if len(value) > max_items:
        raise fail("too_many_items", where, f"{len(value)} items > {max_items}")
    return tuple(item(element, f"{where}[{i}]") for i, element in enumerate(value))


def check_pattern(value: Any, where: str, max_len: int, pattern: re.Pattern[str], what: str) -> str:
    text = check_str(value, where, max_len)
    if not pattern.fullmatch(text):
        raise fail("bad_value", where, f"not a valid {what}")
    return text


_UNSHOWN_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def shown_text(text: str) -> str:
    """A peer's text as it may be shown: control characters (terminal escapes such as clear-screen or a
    window title) and bidirectional overrides become spaces; line breaks and tabs stay. Applied where a
    result is stored, not where it is parsed: its signature covers the text as the peer sent it."""
    return _UNSHOWN_RE.sub(" ", text)


def check_topic(value: Any, where: str) -> str:
    topic = check_str(value, where, MAX_TOPIC_LEN)
    if _CONTROL_RE.search(topic) or topic != topic.strip():
        raise fail("bad_topic", where, "control characters or surrounding whitespace in a topic key")
    return topic


def check_session(value: Any, where: str) -> str:
    return check_pattern(value, where, MAX_SESSION_LEN, _SESSION_RE, "session id ([A-Za-z0-9_-])")


def check_url(value: Any, where: str) -> str:
    url = check_str(value, where, MAX_URL_LEN)
    if not _URL_RE.fullmatch(url):
        raise fail("bad_url", where, "expected an absolute http(s) URL without whitespace")
    return url


def check_addr(value: Any, where: str) -> str:
    return check_pattern(value, where, MAX_ADDR_LEN, _ADDR_RE, "multiaddr (/proto/value/...)")


@functools.lru_cache(maxsize=4096)
def _peer_id_error(text: str) -> str | None:
    if not 1 <= len(text) <= _PEER_ID_MAX_LEN or not _BASE58_RE.fullmatch(text):
        return "not base58 of a sensible length"
    raw = base58.b58decode(text)
    if len(raw) >= 2 and raw[0] == 0x00 and raw[1] == len(raw) - 2 and 0 < raw[1] <= 42:
        return None  # identity multihash of a serialized public key (Ed25519 ids are like this)
    if len(raw) == 34 and raw[0] == 0x12 and raw[1] == 0x20:
        return None  # sha2-256 multihash of a larger public key
    return "not a multihash peer id"


def check_peer_id(value: Any, where: str) -> str:
    text = check_str(value, where, _PEER_ID_MAX_LEN)
    problem = _peer_id_error(text)
    if problem is not None:
        raise fail("bad_peer_id", where, problem)
    return text


def check_float32_array(value: Any, where: str, max_len: int) -> np.ndarray:
    """Little-endian float32 bytes -> read-only array, every element finite."""
    data = check_bytes(value, where, max_len)
    if len(data) % 4:
        raise fail("bad_value", where, f"{len(data)} bytes is not a whole number of float32 values")
    array = np.frombuffer(data, dtype="<f4")
    if not np.isfinite(array).all():
        bad = int(np.flatnonzero(~np.isfinite(array))[0])
        raise fail("non_finite_float", where, f"element {bad} is {array[bad]}")
    return array
