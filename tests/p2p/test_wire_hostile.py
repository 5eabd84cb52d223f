"""Hostile peers against a wire-level server: every attack is rejected with a logged, counted reason, and
the honest peer keeps being served. Then hypothesis feeds over 10,000 generated frames to every decoder:
nothing but `WireError` may escape."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import logging
import math
import struct
from typing import Any

import numpy as np
import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from p2p.codec import MAX_FRAME, decode_frame, encode_frame, pack, read_frame, unpack, write_frame
from p2p.errors import WireError
from p2p.limits import PeerGuard, PeerLedger, RateLimiter
from p2p.messages.envelope import MESSAGE_TYPES, Message
from p2p.messages.models import ModelRequest, ModelResponse
from p2p.messages.results import ResultSyncResponse
from p2p.signing import sign_model, verify_model, verify_result
from p2p.wire_testing import ShortReadStream, sample_messages, sample_model, wire_key

SAMPLES = list(sample_messages())
SAMPLE_WIRES = [(type(m), m.to_wire()) for m in SAMPLES]


# ------------------------------------------------------------------------ a reference wire server
class WireServer:
    """What a protocol handler does with each incoming frame: guard, decode, verify, answer."""

    def __init__(self, clock) -> None:
        self.guard = PeerGuard(
            RateLimiter(rate=5, burst=10, clock=clock), PeerLedger(max_violations=5, clock=clock)
        )
        self.served: list[str] = []

    async def serve(self, peer: str, stream: trio.abc.Stream) -> None:
        while True:
            try:
                message = await self.guard.receive(peer, stream, max_size=64 * 1024)
            except WireError as error:
                if error.reason in STREAM_FATAL:
                    return  # the stream is out of step, finished, or the peer is banned: drop it
                continue
            try:
                verify_signatures(message)
            except WireError as error:
                self.guard.reject(peer, error)
                continue
            self.served.append(peer)
            await write_frame(stream, ModelRequest(topic="ack"))


STREAM_FATAL = {"closed", "truncated_frame", "oversize_frame", "empty_frame", "banned"}


def verify_signatures(message: Message) -> None:
    if isinstance(message, ModelResponse) and message.model is not None:
        verify_model(message.model)
    if isinstance(message, ResultSyncResponse):
        for item in message.items:
            verify_result(item)


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def honest_frames(n: int) -> bytes:
    return b"".join(encode_frame(SAMPLES[i % len(SAMPLES)]) for i in range(n))


def frame_of(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


def signed_model_wire(**payload_changes: Any) -> dict:
    key = wire_key(1)
    wire = ModelResponse(topic="databases", model=sign_model(key, sample_model(key))).to_wire()
    wire["model"]["payload"].update(payload_changes)
    return wire


def nan_weights() -> bytes:
    weights = np.ones(64, dtype="<f4")
    weights[5] = np.nan
    return weights.tobytes()


def replayed_model_wire() -> dict:
    honest, thief = wire_key(1), wire_key(2)
    signed = sign_model(honest, sample_model(honest))
    replay = dataclasses.replace(signed, payload=dataclasses.replace(signed.payload, origin=thief.peer_id))
    return ModelResponse(topic="databases", model=replay).to_wire()


def bad_signature_wire() -> dict:
    wire = signed_model_wire()
    wire["model"]["signature"] = bytes(64)
    return wire


ATTACKS = {
    "malformed_msgpack": frame_of(b"\xc1\xc1\xc1"),
    "wrong_type": frame_of(pack({"type": "model_request", "version": 1, "topic": 42, "model_version": None})),
    "non_finite_float": frame_of(pack(signed_model_wire(weights=nan_weights()))),
    "dimension_mismatch": frame_of(pack(signed_model_wire(weights=np.ones(32, "<f4").tobytes()))),
    "unknown_version": frame_of(pack({**ModelRequest(topic="t").to_wire(), "version": 99})),
    "bad_signature": frame_of(pack(bad_signature_wire())),
    "replayed_origin": frame_of(pack(replayed_model_wire())),
}
EXPECTED_REASON = {**{name: name for name in ATTACKS}, "replayed_origin": "bad_signature"}


async def exchange(server: WireServer, peer: str, data: bytes, replies: int) -> list[Message]:
    client, server_side = trio.testing.memory_stream_pair()
    answers: list[Message] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.serve, peer, server_side)
        await client.send_all(data)
        with trio.fail_after(5):
            for _ in range(replies):
                answers.append(decode_frame(await read_frame(client)))
        await client.send_eof()
    await client.aclose()
    await server_side.aclose()
    return answers


@pytest.mark.trio
@pytest.mark.parametrize("attack", sorted(ATTACKS))
async def test_attack_rejected_logged_and_honest_peer_still_served(attack, caplog):
    server = WireServer(Clock())
    with caplog.at_level(logging.WARNING, logger="p2p.wire"):
        await exchange(server, "mallory", ATTACKS[attack] + honest_frames(1), replies=1)
    record = server.guard.ledger.record_of("mallory")
    assert record is not None and record.reasons.get(EXPECTED_REASON[attack]) == 1, record
    assert any(
        "mallory" in r.getMessage() and EXPECTED_REASON[attack] in r.getMessage() for r in caplog.records
    )
    answers = await exchange(server, "alice", honest_frames(3), replies=3)
    assert len(answers) == 3 and server.served.count("alice") == 3


@pytest.mark.trio
async def test_truncated_frame_drops_the_stream_only():
    server = WireServer(Clock())
    frame = encode_frame(SAMPLES[0])
    client, server_side = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.serve, "mallory", server_side)
        await client.send_all(frame[:-3])
        await client.send_eof()
    await client.aclose()
    await server_side.aclose()
    assert server.guard.ledger.record_of("mallory").reasons["truncated_frame"] == 1
    assert len(await exchange(server, "alice", honest_frames(2), replies=2)) == 2


@pytest.mark.trio
async def test_oversized_frame_rejected_without_reading_it():
    server = WireServer(Clock())
    await exchange(server, "mallory", struct.pack(">I", MAX_FRAME) + b"x" * 100, replies=0)
    assert server.guard.ledger.record_of("mallory").reasons["oversize_frame"] == 1


@pytest.mark.trio
async def test_flood_above_rate_limit_gets_peer_banned_while_honest_peer_is_served():
    clock = Clock()
    server = WireServer(clock)
    flood = honest_frames(200)
    await exchange(server, "flooder", flood, replies=10)  # the burst is served, then nothing
    record = server.guard.ledger.record_of("flooder")
    assert record.reasons["rate_limited"] == 5 and record.banned_until is not None
    assert server.served.count("flooder") == 10
    assert len(await exchange(server, "alice", honest_frames(5), replies=5)) == 5


# ---------------------------------------------------------------------------- property-based tests
PROPERTY_SETTINGS = dict(
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


def decoded_or_rejected(payload: bytes, expected: type[Message] | None = None) -> Message | None:
    """Decodes or returns None on WireError; any other exception fails the test. A decoded message must
    re-encode to a frame that decodes to the same message."""
    try:
        message = decode_frame(payload, expected)
    except WireError as error:
        assert error.reason and isinstance(error.reason, str)
        return None
    assert decode_frame(encode_frame(message)[4:]) == message
    return message


nasty_floats = st.sampled_from([math.nan, math.inf, -math.inf, 1e300, -0.0, 5e-324]) | st.floats()
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | nasty_floats
    | st.text(max_size=40)
    | st.binary(max_size=40)
)
values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=10,
)
float32_blobs = st.lists(st.floats(width=32), min_size=0, max_size=80).map(
    lambda xs: np.array(xs, dtype="<f4").tobytes()
)


def paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key/index path inside a wire value (the root excluded)."""
    found = []
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    else:
        return found
    for key, child in items:
        found.append((*prefix, key))
        found.extend(paths(child, (*prefix, key)))
    return found


SAMPLE_PATHS = [paths(wire) for _, wire in SAMPLE_WIRES]


def mutate(wire: dict, path: tuple, action: str, replacement: Any) -> dict:
    """A copy of `wire` with the value at `path` replaced, deleted, or given an extra sibling field; an
    unchanged copy when an earlier mutation removed the path."""
    wire = copy.deepcopy(wire)
    parent: Any = wire
    for key in path[:-1]:
        if not isinstance(parent, dict | list) or not _has(parent, key):
            return wire
        parent = parent[key]
    last = path[-1]
    if not isinstance(parent, dict | list) or not _has(parent, last):
        return wire
    if action == "delete":
        del parent[last]
    elif action == "add" and isinstance(parent, dict):
        parent[f"{last}_extra"] = replacement
    else:
        parent[last] = replacement
    return wire


def _has(container: dict | list, key: Any) -> bool:
    if isinstance(container, dict):
        return key in container
    return isinstance(key, int) and 0 <= key < len(container)


@settings(max_examples=1000, **PROPERTY_SETTINGS)
@given(payload=st.binary(max_size=300))
def test_random_bytes_never_escape_as_other_errors(payload):
    decoded_or_rejected(payload)


@settings(max_examples=500, **PROPERTY_SETTINGS)
@given(value=values, expected=st.sampled_from([None, *MESSAGE_TYPES.values()]))
def test_random_msgpack_values_never_escape(value, expected):
    decoded_or_rejected(pack(value), expected)


@settings(max_examples=500, **PROPERTY_SETTINGS)
@given(kind=st.sampled_from(sorted(MESSAGE_TYPES)), version=st.integers(-5, 5) | scalars, body=values)
def test_envelopes_with_random_bodies_never_escape(kind, version, body):
    wire = {"type": kind, "version": version}
    if isinstance(body, dict):
        wire.update(body)
    decoded_or_rejected(pack(wire), MESSAGE_TYPES[kind])


@settings(max_examples=1000, **PROPERTY_SETTINGS)
@given(data=st.data())
def test_structurally_plausible_messages_with_wrong_values_never_escape(data):
    index = data.draw(st.integers(0, len(SAMPLE_WIRES) - 1))
    cls, wire = SAMPLE_WIRES[index]
    path = data.draw(st.sampled_from(SAMPLE_PATHS[index]))
    action = data.draw(st.sampled_from(["replace", "replace", "delete", "add"]))
    replacement = data.draw(values | float32_blobs | st.binary(min_size=4, max_size=300))
    mutated = mutate(wire, path, action, replacement)
    decoded_or_rejected(pack(mutated), cls)
    with contextlib.suppress(WireError):
        cls.from_wire(unpack(pack(mutated)))


peer_ids = st.sampled_from([wire_key(2).peer_id, wire_key(3).peer_id])


@settings(max_examples=1000, **PROPERTY_SETTINGS)
@given(
    version=st.integers(-1, 4) | scalars,
    topic=st.sampled_from(["databases", "", "a\x00b", "x" * 129]) | scalars,
    model_version=st.none() | st.integers(-1, 2**54) | scalars,
    origin=st.none() | peer_ids | scalars | st.text(max_size=60),
    extra=st.none() | values,
)
def test_model_requests_with_any_origin_and_version_decode_or_are_rejected(
    version, topic, model_version, origin, extra
):
    """The relay-capable model request (schema 2, `origin`) beside schema 1: only WireError escapes, and
    what decodes names an origin only under schema version 2."""
    wire = {"type": "model_request", "version": version, "topic": topic, "model_version": model_version}
    if origin is not None:
        wire["origin"] = origin
    if extra is not None:
        wire["relay"] = extra
    message = decoded_or_rejected(pack(wire), ModelRequest)
    if message is not None:
        assert version in (1, 2) and (message.origin is None or version == 2)
        assert message.origin is None or message.origin == origin


@settings(max_examples=300, **PROPERTY_SETTINGS)
@given(data=st.data())
def test_hostile_float32_weights_are_rejected_unless_finite_and_sized(data):
    blob = data.draw(float32_blobs)
    message = decoded_or_rejected(pack(signed_model_wire(weights=blob)), ModelResponse)
    if message is not None:
        weights = message.model.payload.weight_matrix()
        assert weights.shape == (1, 64) and np.isfinite(weights).all()


@settings(max_examples=300, **PROPERTY_SETTINGS)
@given(data=st.binary(max_size=200), chunk=st.integers(1, 16), max_size=st.integers(1, 300))
def test_read_frame_on_random_streams_never_escapes(data, chunk, max_size):
    async def read_all() -> None:
        stream = ShortReadStream(data, chunk=chunk)
        while True:
            try:
                payload = await read_frame(stream, max_size)
            except WireError:
                return
            assert 0 < len(payload) <= max_size
            decoded_or_rejected(payload)

    trio.run(read_all)


# A seeded structure-aware fuzzer for volume: hypothesis draws the seed, each example mutates
# FRAMES_PER_EXAMPLE sample messages (wrong values, missing and extra fields, hostile floats, corrupted
# bytes) and feeds each frame to its type's decoder, to the dispatching decoder and through read_frame.
FRAMES_PER_EXAMPLE = 30
FUZZ_EXAMPLES = 400  # 12,000 frames; the tests above add about 3,600 more
SPECIAL_FLOAT32 = np.array([np.nan, np.inf, -np.inf, 3.4e38, -0.0, 1e-45], dtype="<f4")


def fuzz_value(rng, depth: int = 0) -> Any:
    pick = rng.randrange((12, 11, 9)[min(depth, 2)])  # long repeated lists only at the top: bounded size
    if pick == 0:
        return None
    if pick == 1:
        return rng.random() < 0.5
    if pick == 2:
        return rng.choice(
            [0, -1, 1, 2**31, 2**53, 2**63 - 1, -(2**63), 2**64 - 1, rng.randrange(-1000, 1000)]
        )
    if pick == 3:
        return rng.choice([math.nan, math.inf, -math.inf, 1e308, -0.0, rng.uniform(-1e6, 1e6)])
    if pick == 4:
        return "".join(
            chr(rng.choice([0, 10, 32, 65, 0x7F, 0xE9, 0x1F600, rng.randrange(32, 127)]))
            for _ in range(rng.randrange(0, 20))
        )
    if pick == 5:
        return "x" * rng.choice([129, 257, 2049, 5000])
    if pick == 6:
        return rng.randbytes(rng.randrange(0, 70))
    if pick == 7:
        floats = np.ones(rng.choice([1, 63, 64, 65, 128]), dtype="<f4")
        floats[rng.randrange(floats.size)] = rng.choice(SPECIAL_FLOAT32)
        return floats.tobytes()
    if pick == 8:
        return rng.choice(
            ["12D3KooW", "Qm" + "1" * 44, "/ip4/1.2.3.4", "http://", "databases", "meta", "linear"]
        )
    if pick == 9:
        return [fuzz_value(rng, depth + 1) for _ in range(rng.randrange(0, 6))]
    if pick == 10:
        return {f"k{i}": fuzz_value(rng, depth + 1) for i in range(rng.randrange(0, 4))}
    return [fuzz_value(rng, 2)] * rng.choice([300, 1000])


def fuzz_frame(rng) -> tuple[type[Message], bytes]:
    index = rng.randrange(len(SAMPLE_WIRES))
    cls, wire = SAMPLE_WIRES[index]
    for _ in range(rng.randint(1, 3)):
        action = rng.choice(["replace", "replace", "replace", "delete", "add"])
        wire = mutate(wire, rng.choice(SAMPLE_PATHS[index]), action, fuzz_value(rng))
    payload = bytearray(pack(wire))
    corruption = rng.randrange(6)
    if corruption == 0:
        for _ in range(rng.randint(1, 4)):
            payload[rng.randrange(len(payload))] = rng.randrange(256)
    elif corruption == 1:
        del payload[rng.randrange(len(payload)) :]
    elif corruption == 2:
        payload += rng.randbytes(rng.randint(1, 8))
    return cls, bytes(payload)


@pytest.mark.slow  # about 5 s alone, 10-15 s on a loaded machine
@settings(
    max_examples=FUZZ_EXAMPLES,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # a failure names its seed; shrinking is slow here
    **PROPERTY_SETTINGS,
)
@given(rng=st.randoms(use_true_random=False))
def test_fuzzed_frames_never_escape_any_decoder(rng):
    frames = [fuzz_frame(rng) for _ in range(FRAMES_PER_EXAMPLE)]
    for cls, payload in frames:
        decoded_or_rejected(payload, cls)
        decoded_or_rejected(payload)

    lying_lengths = [max(0, len(payload) + rng.choice([0, 0, 0, -1, 1, 2**31])) for _, payload in frames]
    stream_bytes = b"".join(
        struct.pack(">I", n) + payload for n, (_, payload) in zip(lying_lengths, frames, strict=True)
    )

    async def read_all() -> None:
        stream = ShortReadStream(stream_bytes, chunk=rng.randint(1, 4096))
        while True:
            try:
                payload = await read_frame(stream, 64 * 1024)
            except WireError:
                return
            decoded_or_rejected(payload)

    trio.run(read_all)
