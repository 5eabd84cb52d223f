"""Frames: length prefix, short reads, size limits before reading, strict msgpack."""

from __future__ import annotations

import os
import random
import struct

import msgpack
import pytest
import trio
import trio.testing

from p2p.codec import (
    COMPRESSED,
    MAX_FRAME,
    WireError,
    decode_frame,
    encode_frame,
    pack,
    read_frame,
    unpack,
    write_frame,
)
from p2p.messages.membership import NeighbourExchange
from p2p.messages.models import ModelRequest, ModelResponse
from p2p.wire_testing import ShortReadStream


def frame_of(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


def test_encode_frame_prefixes_big_endian_length():
    frame = encode_frame(ModelRequest(topic="databases"))
    (length,) = struct.unpack(">I", frame[:4])
    assert length == len(frame) - 4
    assert msgpack.unpackb(frame[4:])["type"] == "model_request"


@pytest.mark.trio
async def test_read_frame_reassembles_short_reads():
    message = ModelRequest(topic="databases", version=3)
    stream = ShortReadStream(encode_frame(message) * 2, chunk=2)
    first = await read_frame(stream)
    second = await read_frame(stream)
    assert decode_frame(first) == message
    assert decode_frame(second) == message
    assert stream.reads > 10


@pytest.mark.trio
async def test_read_frame_over_trio_memory_stream():
    left, right = trio.testing.memory_stream_pair()
    message = NeighbourExchange(entries=())
    async with trio.open_nursery() as nursery:
        nursery.start_soon(write_frame, left, message)
        payload = await read_frame(right)
    assert decode_frame(payload, NeighbourExchange) == message
    await left.aclose()
    await right.aclose()


@pytest.mark.trio
async def test_oversized_length_rejected_before_body_is_read():
    stream = ShortReadStream(struct.pack(">I", 1000) + b"x" * 1000, chunk=4096)
    with pytest.raises(WireError) as info:
        await read_frame(stream, max_size=999)
    assert info.value.reason == "oversize_frame"
    assert stream.consumed == 4


@pytest.mark.trio
async def test_default_limit_is_max_frame():
    stream = ShortReadStream(struct.pack(">I", MAX_FRAME + 1), chunk=4096)
    with pytest.raises(WireError, match="oversize_frame"):
        await read_frame(stream)


@pytest.mark.trio
@pytest.mark.parametrize("cut", [1, 3, 4, 5, 20])
async def test_truncated_frame_rejected(cut):
    frame = encode_frame(ModelRequest(topic="databases"))
    with pytest.raises(WireError) as info:
        await read_frame(ShortReadStream(frame[:cut]))
    assert info.value.reason == "truncated_frame"


@pytest.mark.trio
async def test_clean_close_before_a_frame_is_reported_as_closed():
    with pytest.raises(WireError) as info:
        await read_frame(ShortReadStream(b""))
    assert info.value.reason == "closed"


@pytest.mark.trio
async def test_empty_frame_rejected():
    with pytest.raises(WireError, match="empty_frame"):
        await read_frame(ShortReadStream(struct.pack(">I", 0)))


def test_encode_refuses_oversized_message():
    with pytest.raises(WireError, match="oversize_frame"):
        encode_frame({"type": "reject", "version": 1, "reason": "x", "detail": "y" * 200}, max_size=100)


def test_encode_refuses_invalid_message():
    with pytest.raises(WireError, match="bad_topic"):
        encode_frame(ModelRequest(topic=" padded "))


@pytest.mark.parametrize(
    "payload",
    [
        b"\xc1",  # never-used msgpack byte
        b"\x92\x01",  # array announces 2 items, has 1
        b"\x01\x02",  # trailing data
        b"\xa2\xff\xfe",  # invalid UTF-8 string
        b"\x81\x01\x02",  # integer map key
        b"\xd4\x01\x00",  # ext type
        msgpack.packb(msgpack.Timestamp(1)),  # the built-in timestamp ext
        b"\x91" * 5000 + b"\xc0",  # nesting deeper than msgpack's stack
        b"\xdd\xff\xff\xff\xff",  # array claiming 4 billion items
        b"\x82\xa1a\x01\xa1a\x02",  # repeated map key
    ],
)
def test_malformed_msgpack_rejected(payload):
    with pytest.raises(WireError) as info:
        decode_frame(payload)
    assert info.value.reason == "malformed_msgpack"


def test_unpack_limits_map_size():
    with pytest.raises(WireError, match="malformed_msgpack"):
        unpack(pack({f"k{i}": i for i in range(1000)}))


def test_unpack_returns_plain_immutable_values():
    value = unpack(pack({"a": [1, 2.5, "x", b"y", None, True]}))
    assert value == {"a": (1, 2.5, "x", b"y", None, True)}


@pytest.mark.trio
async def test_each_message_type_has_its_own_frame_limit():
    big_request = {
        "type": "model_request",
        "version": 1,
        "topic": "t",
        "model_version": None,
        "pad": os.urandom(20000).hex(),  # incompressible: the frame stays over the limit
    }
    frame = encode_frame(big_request, max_size=MAX_FRAME)
    with pytest.raises(WireError, match="oversize_frame"):
        await read_frame(ShortReadStream(frame, chunk=4096), ModelRequest.MAX_FRAME)
    with pytest.raises(WireError, match="oversize_frame"):
        decode_frame(frame[4:], ModelRequest)
    assert ModelRequest.MAX_FRAME < MAX_FRAME < ModelResponse.MAX_FRAME


def test_large_payloads_travel_compressed_and_decode_to_the_same_message():
    from p2p.messages.membership import NeighbourEntry

    peer = "12D3KooWLKsakJPED1th1pebHPWaMcDKhzQmuqtoMuChLEGuSTFh"
    big = NeighbourExchange(tuple(NeighbourEntry(peer, ("/ip4/127.0.0.1/tcp/4001",), 1.0) for _ in range(50)))
    frame = encode_frame(big)
    assert frame[4:5] == COMPRESSED and len(frame) < len(pack(big.to_wire()))
    assert decode_frame(frame[4:]) == big
    small = encode_frame(ModelRequest("databases", 3))
    assert small[4:5] != COMPRESSED


def test_a_neighbour_list_of_a_small_community_travels_compressed():
    from p2p.messages.membership import NeighbourEntry

    alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"  # base58, as peer ids
    rng = random.Random(4)
    peers = ["12D3KooW" + "".join(rng.choice(alphabet) for _ in range(44)) for _ in range(4)]
    entries = tuple(NeighbourEntry(p, (f"/ip4/127.0.0.{i + 1}/tcp/4001",), 1.0) for i, p in enumerate(peers))
    message = NeighbourExchange(entries)
    frame = encode_frame(message)
    assert len(pack(message.to_wire())) < 1024  # a few hundred bytes: compressed only below the old threshold
    assert frame[4:5] == COMPRESSED and decode_frame(frame[4:]) == message


def test_compressed_payload_inflating_beyond_the_limit_is_rejected():
    import zlib

    bomb = COMPRESSED + zlib.compress(pack({"type": "x" * 100_000}))
    with pytest.raises(WireError) as info:
        unpack(bomb, max_size=10_000)
    assert info.value.reason == "oversize_frame"


@pytest.mark.parametrize("payload", [COMPRESSED + b"not zlib", COMPRESSED])
def test_garbage_after_the_compression_mark_is_malformed(payload):
    with pytest.raises(WireError) as info:
        unpack(payload)
    assert info.value.reason == "malformed_msgpack"
