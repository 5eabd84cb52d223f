"""Length-prefixed msgpack frames: the only way bytes from a peer become Python values.

A frame is a 4-byte big-endian payload length followed by a msgpack payload. A payload of more than
`COMPRESS_MIN` bytes travels zlib-compressed when that is smaller, marked by a first byte msgpack never uses
(0xc1); it is inflated no further than the receiver's size limit, so a small frame cannot become a large one.
Every limit is checked before the corresponding memory is spent: the length before the body is read,
msgpack's own length limits before containers are built. Anything wrong raises `WireError`, nothing
else escapes.
"""

from __future__ import annotations

import struct
import sys
import zlib
from typing import Any, Protocol

import msgpack

from p2p.errors import WireError

__all__ = [
    "HEADER_SIZE",
    "MAX_ARRAY_LEN",
    "MAX_FRAME",
    "MAX_MAP_LEN",
    "WireError",
    "decode_frame",
    "encode_frame",
    "pack",
    "read_frame",
    "unpack",
    "write_frame",
]

MAX_FRAME = 4 * 1024 * 1024
"""Default largest payload in bytes; protocols pass their own `max_size` (a model needs more than a
neighbour list)."""
HEADER_SIZE = 4
MAX_ARRAY_LEN = 1 << 18
"""Largest msgpack array; bulk numbers travel as packed bytes, never as arrays."""
MAX_MAP_LEN = 256
"""Largest msgpack map; every schema has a few named fields."""
_HEADER = struct.Struct(">I")
COMPRESSED = b"\xc1"
"""First byte of a compressed payload (msgpack's one never-used type byte)."""
COMPRESS_MIN = 256
"""Smallest msgpack payload worth compressing: models, result pages and reports, and also the
few-hundred-byte neighbour lists and meta-protocol reports, whose repeated keys and peer ids zlib shrinks
by 25-50% (estimated on the messages of a 4-node devweb run: ~26 KB less than at 1024); short requests stay as
they are."""


def compress(body: bytes) -> bytes:
    """The payload for a msgpack body: compressed when it is large and that saves bytes."""
    if len(body) < COMPRESS_MIN:
        return body
    packed = COMPRESSED + zlib.compress(body, 6)
    return packed if len(packed) < len(body) else body


def _inflate(payload: bytes, max_size: int) -> bytes:
    inflater = zlib.decompressobj()
    try:
        body = inflater.decompress(payload[1:], max_size + 1)
    except zlib.error as exc:
        raise WireError("malformed_msgpack", f"bad compressed payload: {exc}") from None
    if len(body) > max_size or inflater.unconsumed_tail:
        raise WireError("oversize_frame", f"compressed payload inflates beyond the limit {max_size}")
    if not inflater.eof or inflater.unused_data:
        raise WireError("malformed_msgpack", "compressed payload is truncated or has trailing bytes")
    return body


class Message(Protocol):
    """What `p2p.messages` provide (kept structural so the codec does not import the messages)."""

    def to_wire(self) -> dict[str, Any]: ...


def pack(value: Any) -> bytes:
    """Msgpack with bin/str kept apart and float64 floats, so values round-trip exactly."""
    return msgpack.packb(value, use_bin_type=True, use_single_float=False)


def _unique_map(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise WireError("malformed_msgpack", "a map repeats a key")
    return result


def unpack(payload: bytes, max_size: int = MAX_FRAME) -> Any:
    """Decode untrusted msgpack into plain values (dict, tuple, str, bytes, int, float, bool, None)."""
    if len(payload) > max_size:
        raise WireError("oversize_frame", f"{len(payload)} bytes > limit {max_size}")
    if payload[:1] == COMPRESSED:
        payload = _inflate(payload, max_size)
    try:
        return msgpack.unpackb(
            payload,
            raw=False,
            use_list=False,
            strict_map_key=True,
            object_pairs_hook=_unique_map,
            max_str_len=max_size,
            max_bin_len=max_size,
            max_array_len=MAX_ARRAY_LEN,
            max_map_len=MAX_MAP_LEN,
            max_ext_len=0,
        )
    except WireError:
        raise
    except (ValueError, OverflowError, msgpack.UnpackException) as exc:
        raise WireError("malformed_msgpack", f"{type(exc).__name__}: {exc}") from None


def encode_frame(message: Message | dict[str, Any], max_size: int | None = None) -> bytes:
    """Header + msgpack of the message's wire dict; refuses to build a frame a peer would reject
    (`max_size` defaults to the message's own `MAX_FRAME`)."""
    if max_size is None:
        max_size = getattr(message, "MAX_FRAME", MAX_FRAME)
    if isinstance(message, dict):
        wire = message
    else:
        wire = message.to_wire()
        type(message).from_wire(wire)  # type: ignore[attr-defined]
    body = pack(wire)
    if len(body) > max_size:
        raise WireError("oversize_frame", f"encoded message is {len(body)} bytes > limit {max_size}")
    body = compress(body)
    return _HEADER.pack(len(body)) + body


def decode_frame(payload: bytes, expected: type | None = None, max_size: int | None = None) -> Any:
    """Validate a frame body into its schema dataclass (`expected` restricts which one is acceptable).

    `max_size` defaults to the expected message's own `MAX_FRAME` (or the codec's `MAX_FRAME`)."""
    from p2p.messages.envelope import message_from_wire

    if max_size is None:
        max_size = getattr(expected, "MAX_FRAME", MAX_FRAME)
    return message_from_wire(unpack(payload, max_size), expected)


def _stream_eof_types() -> tuple[type[BaseException], ...]:
    # libp2p raises StreamEOF instead of returning b""; it is only importable (cheaply) once libp2p is
    # loaded, which is always the case when the stream is a libp2p stream.
    module = sys.modules.get("libp2p.network.stream.exceptions")
    return (module.StreamEOF,) if module is not None else ()


async def _read_some(stream: Any, n: int) -> bytes:
    try:
        if hasattr(stream, "read"):
            return bytes(await stream.read(n))
        return bytes(await stream.receive_some(n))
    except _stream_eof_types():
        return b""


async def _read_exactly(stream: Any, n: int, what: str, received_before: int) -> bytes:
    chunks: list[bytes] = []
    remaining = n
    while remaining:
        chunk = await _read_some(stream, remaining)
        if not chunk:
            got = n - remaining
            if what == "header" and got == 0 and received_before == 0:
                raise WireError("closed", "stream ended before a frame began")
            raise WireError("truncated_frame", f"stream ended after {got} of {n} {what} bytes")
        if len(chunk) > remaining:
            raise WireError("truncated_frame", f"stream returned {len(chunk)} bytes, asked for {remaining}")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


async def read_frame(stream: Any, max_size: int = MAX_FRAME) -> bytes:
    """Read one frame's payload; the declared length is checked before any of the body is read.

    There is no timeout here: callers bound each exchange with `trio.fail_after` so a slow peer cannot
    hold a handler.
    """
    header = await _read_exactly(stream, HEADER_SIZE, "header", 0)
    (length,) = _HEADER.unpack(header)
    if length > max_size:
        raise WireError("oversize_frame", f"declared {length} bytes > limit {max_size}")
    if length == 0:
        raise WireError("empty_frame", "declared length is 0")
    return await _read_exactly(stream, length, "body", HEADER_SIZE)


async def write_frame(stream: Any, message: Message | dict[str, Any], max_size: int | None = None) -> None:
    """Encode and send one frame on a libp2p stream (`write`) or a trio stream (`send_all`)."""
    frame = encode_frame(message, max_size)
    if hasattr(stream, "write"):
        await stream.write(frame)
    else:
        await stream.send_all(frame)
