"""The result-sync request's optional Bloom filter of URLs the asker holds: no false negatives, a
false-positive rate near the target, the same bits in every process (BLAKE2b, not `hash()`), strict
validation that bounds a hostile filter's cost, and a provider that leaves the held URLs out."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p2p.codec import decode_frame, encode_frame, pack, read_frame
from p2p.errors import WireError
from p2p.message_limits import MAX_HELD_FILTER_BYTES, MAX_HELD_HASHES
from p2p.messages.results import CrawlResult, HeldFilter, ResultSyncRequest
from p2p.protocols import Protocols, ResultPage
from p2p.signing import sign_results
from p2p.wire_testing import ShortReadStream

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # see conftest


def urls(prefix: str, count: int) -> list[str]:
    return [f"http://127.0.0.{n % 11 + 2}:8080/{prefix}/page{n}.html" for n in range(count)]


def request_wire(held: object) -> dict:
    return {**ResultSyncRequest("databases", 5, 100).to_wire(), "held": held}


def rejects(wire: object, reason: str) -> None:
    with pytest.raises(WireError) as info:
        decode_frame(pack(wire), ResultSyncRequest)
    assert info.value.reason == reason, info.value


def test_every_key_put_in_is_found():
    held = urls("held", 3000)
    bloom = HeldFilter.build(held, 0.01, 16 * 1024)
    assert all(url in bloom for url in held)


@pytest.mark.parametrize("fp_rate", [0.01, 0.05])
def test_false_positive_rate_is_near_the_target(fp_rate):
    bloom = HeldFilter.build(urls("held", 2000), fp_rate, MAX_HELD_FILTER_BYTES)
    others = urls("other", 20_000)
    measured = sum(url in bloom for url in others) / len(others)
    assert measured < 1.5 * fp_rate


def test_filter_at_its_byte_cap_keeps_every_key_and_degrades_gracefully():
    held = urls("held", 5000)
    bloom = HeldFilter.build(held, 0.01, 1024)
    assert len(bloom.bits) == 1024 and 1 <= bloom.hashes <= MAX_HELD_HASHES
    assert all(url in bloom for url in held)
    assert sum(url in bloom for url in urls("other", 2000)) < 2000  # worse than 1%, still a filter


def test_capacity_keys_fit_the_byte_cap_at_the_target_rate():
    keys = urls("held", HeldFilter.capacity(0.01, 2048))
    bloom = HeldFilter.build(keys, 0.01, 2048)
    assert len(bloom.bits) == 2048
    assert sum(url in bloom for url in urls("other", 20_000)) / 20_000 < 0.015
    assert len(HeldFilter.build(keys[:-50], 0.01, 2048).bits) < 2048


def test_size_follows_the_number_of_keys():
    small = HeldFilter.build(urls("held", 100), 0.01, MAX_HELD_FILTER_BYTES)
    large = HeldFilter.build(urls("held", 1000), 0.01, MAX_HELD_FILTER_BYTES)
    assert 100 <= len(small.bits) < 200 and 1000 <= len(large.bits) < 1300  # ~9.6 bits per key at 1%
    assert small.hashes == large.hashes == 7


def test_bits_follow_the_written_specification():
    """An independent reading of the docstring's specification gives the same bytes."""
    keys = urls("spec", 50)
    bloom = HeldFilter.build(keys, 0.02, 4096)
    m, k = 8 * len(bloom.bits), bloom.hashes
    expected = bytearray(len(bloom.bits))
    for key in keys:
        digest = hashlib.blake2b(key.encode(), digest_size=16, person=b"topicswarm-bloom").digest()
        h1, h2 = int.from_bytes(digest[:8], "little"), int.from_bytes(digest[8:], "little") | 1
        for i in range(k):
            bit = (h1 + i * h2) % m
            expected[bit // 8] |= 1 << (bit % 8)
    assert bytes(expected) == bloom.bits


def test_filter_is_the_same_in_processes_with_different_hash_seeds():
    code = (
        "from p2p.messages.results import HeldFilter;"
        "print(HeldFilter.build([f'http://h/{n}' for n in range(300)], 0.01, 4096).bits.hex())"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outputs) == 1


def test_request_round_trips_with_and_without_a_filter():
    bloom = HeldFilter.build(urls("held", 10), 0.01, 64)
    with_filter = ResultSyncRequest("databases", 7, 50, bloom)
    assert decode_frame(encode_frame(with_filter)[4:], ResultSyncRequest) == with_filter
    without = ResultSyncRequest("databases", 7, 50)
    assert "held" not in without.to_wire()
    assert decode_frame(encode_frame(without)[4:], ResultSyncRequest) == without


@pytest.mark.trio
async def test_largest_filter_fits_the_request_frame():
    bloom = HeldFilter(b"\xff" * MAX_HELD_FILTER_BYTES, MAX_HELD_HASHES)
    frame = encode_frame(ResultSyncRequest("t" * 128, 1, 500, bloom))
    payload = await read_frame(ShortReadStream(frame, 4096), ResultSyncRequest.MAX_FRAME)
    assert decode_frame(payload, ResultSyncRequest).held == bloom


@pytest.mark.parametrize(
    ("held", "reason"),
    [
        ({"bits": b"", "hashes": 3}, "too_short"),
        ({"bits": b"\x00" * (MAX_HELD_FILTER_BYTES + 1), "hashes": 3}, "too_long"),
        ({"bits": b"\x01", "hashes": 0}, "out_of_range"),
        ({"bits": b"\x01", "hashes": MAX_HELD_HASHES + 1}, "out_of_range"),
        ({"bits": b"\x01", "hashes": 2**64 - 1}, "out_of_range"),
        ({"bits": b"\x01", "hashes": True}, "wrong_type"),
        ({"bits": b"\x01", "hashes": 2.0}, "wrong_type"),
        ({"bits": "01", "hashes": 2}, "wrong_type"),
        ({"bits": b"\x01"}, "missing_field"),
        ({"bits": b"\x01", "hashes": 2, "seed": 9}, "unknown_field"),
        ([b"\x01", 2], "wrong_type"),
        (b"\x01", "wrong_type"),
    ],
)
def test_malformed_filter_rejected_with_its_reason(held, reason):
    rejects(request_wire(held), reason)


def test_build_refuses_sizes_outside_the_wire_limits():
    with pytest.raises(ValueError, match="max_bytes"):
        HeldFilter.build(["http://h/"], 0.01, MAX_HELD_FILTER_BYTES + 1)
    with pytest.raises(ValueError, match="fp_rate"):
        HeldFilter.build(["http://h/"], 0.0, 1024)


_HELD_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats()
    | st.binary(max_size=64)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    held=_HELD_VALUES
    | st.fixed_dictionaries(
        {
            "bits": st.binary(max_size=64) | _HELD_VALUES,
            "hashes": st.integers(-(2**63), 2**64 - 1) | _HELD_VALUES,
        }
    )
)
def test_random_filters_never_escape_as_other_errors(held):
    try:
        request = decode_frame(pack(request_wire(held)), ResultSyncRequest)
    except WireError:
        return
    assert request.held is None or (1 <= request.held.hashes <= MAX_HELD_HASHES and request.held.bits)


@settings(max_examples=200, deadline=None)
@given(
    bits=st.binary(min_size=1, max_size=256),
    hashes=st.integers(1, MAX_HELD_HASHES),
    url=st.text(max_size=200),
)
def test_any_accepted_filter_answers_membership_without_raising(bits, hashes, url):
    bloom = decode_frame(pack(request_wire({"bits": bits, "hashes": hashes})), ResultSyncRequest).held
    assert (url in bloom) in (True, False)
    if bits == b"\xff" * len(bits):
        assert url in bloom


def _results(origin: str, names: list[str]) -> list[CrawlResult]:
    return [
        CrawlResult(
            url=url,
            title="t",
            preview="p",
            topic="databases",
            confidence=0.5,
            fingerprint=f"{n:016x}",
            origin=origin,
            fetched_at=1_700_000_000.0,
        )
        for n, url in enumerate(names)
    ]


@pytest.mark.trio
async def test_provider_leaves_out_the_urls_the_asker_holds(start_hosts):
    offered = urls("offered", 40)
    with trio.fail_after(30):
        async with start_hosts(2) as (a, b):
            signed = sign_results(a.host.get_private_key(), _results(str(a.peer_id), offered))

            async def provide(topic, cursor, limit):
                return ResultPage(signed[cursor:], len(signed))

            Protocols(a).serve_results(provide)
            await b.connect_addr(a.addrs()[0])
            held = HeldFilter.build(offered[::2], 0.001, 4096)
            page = await Protocols(b).fetch_results(a.peer_id, "databases", 0, 100, held)
            sent = [item.result.url for item in page.items]
            assert set(sent) <= set(offered[1::2]) and len(sent) >= 18 and page.next_cursor == 40
            plain = await Protocols(b).fetch_results(a.peer_id, "databases", 0, 100)
            assert [item.result.url for item in plain.items] == offered
