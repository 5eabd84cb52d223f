"""Rate limits and the violation ledger, on a fake clock."""

from __future__ import annotations

import logging
import math

import pytest
import trio
from trio.testing import MockClock

from p2p.errors import WireError
from p2p.limits import PeerGuard, PeerLedger, RateLimiter


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return FakeClock()


def test_burst_then_rate(clock):
    limiter = RateLimiter(rate=2.0, burst=5, clock=clock)
    assert [limiter.allow("a") for _ in range(6)] == [True] * 5 + [False]
    clock.now += 0.5
    assert limiter.allow("a")
    assert not limiter.allow("a")
    clock.now += 100
    assert sum(limiter.allow("a") for _ in range(10)) == 5


def test_peers_have_separate_buckets(clock):
    limiter = RateLimiter(rate=1.0, burst=1, clock=clock)
    assert limiter.allow("a")
    assert not limiter.allow("a")
    assert limiter.allow("b")


def test_check_raises_rate_limited(clock):
    limiter = RateLimiter(rate=1.0, burst=1, clock=clock)
    limiter.check("a")
    with pytest.raises(WireError) as info:
        limiter.check("a")
    assert info.value.reason == "rate_limited"


def test_limiter_tracks_a_bounded_number_of_peers(clock):
    limiter = RateLimiter(rate=1.0, burst=1, clock=clock, max_peers=3)
    for peer in "abcde":
        limiter.allow(peer)
    assert len(limiter._buckets) == 3


def test_ledger_counts_reasons(clock):
    ledger = PeerLedger(max_violations=10, clock=clock)
    ledger.record("p", WireError("bad_signature", "x"))
    ledger.record("p", WireError("bad_signature", "y"))
    ledger.record("p", WireError("oversize_frame"))
    record = ledger.record_of("p")
    assert record.total == 3
    assert dict(record.reasons) == {"bad_signature": 2, "oversize_frame": 1}
    assert [v.detail for v in record.recent] == ["x", "y", ""]
    assert ledger.record_of("q") is None


def test_peer_banned_after_threshold_and_released_later(clock):
    ledger = PeerLedger(max_violations=3, ban_seconds=60, clock=clock)
    assert [ledger.record("p", WireError("wrong_type")) for _ in range(3)] == [False, False, True]
    assert ledger.is_banned("p")
    with pytest.raises(WireError, match="banned"):
        ledger.check("p")
    clock.now += 61
    assert not ledger.is_banned("p")
    ledger.check("p")
    assert ledger.record_of("p").bans == 1


def test_repeat_ban_lasts_longer(clock):
    ledger = PeerLedger(max_violations=1, ban_seconds=60, clock=clock)
    ledger.record("p", WireError("wrong_type"))
    clock.now += 61
    ledger.record("p", WireError("wrong_type"))
    clock.now += 61
    assert ledger.is_banned("p")
    clock.now += 60
    assert not ledger.is_banned("p")


def test_infinite_ban_lasts_the_run(clock):
    ledger = PeerLedger(max_violations=1, ban_seconds=math.inf, clock=clock)
    ledger.record("p", WireError("wrong_type"))
    clock.now += 1e9
    assert ledger.is_banned("p")


def test_snapshot_lists_worst_peer_first(clock):
    ledger = PeerLedger(clock=clock)
    ledger.record("a", WireError("x"))
    for _ in range(3):
        ledger.record("b", WireError("y"))
    assert [record.peer for record in ledger.snapshot()] == ["b", "a"]


def test_ledger_eviction_keeps_banned_peers(clock):
    ledger = PeerLedger(max_violations=1, clock=clock, max_peers=2)
    ledger.record("banned", WireError("x"))
    for peer in ("b", "c", "d"):
        ledger.record(peer, WireError("x"))
    assert ledger.is_banned("banned")
    assert len(ledger.snapshot()) == 2


def test_rejection_logged_with_peer_and_reason(clock, caplog):
    ledger = PeerLedger(clock=clock)
    with caplog.at_level(logging.WARNING, logger="p2p.wire"):
        ledger.record("12D3KooWpeer", WireError("non_finite_float", "model.weights: element 3 is nan"))
    assert len(caplog.records) == 1
    message = caplog.records[0].getMessage()
    assert "12D3KooWpeer" in message and "non_finite_float" in message and "element 3" in message


def test_repeated_rejections_are_logged_once_per_interval(clock, caplog):
    ledger = PeerLedger(max_violations=1000, clock=clock, log_interval=1.0)
    with caplog.at_level(logging.WARNING, logger="p2p.wire"):
        for _ in range(100):
            ledger.record("p", WireError("rate_limited"))
        clock.now += 2
        ledger.record("p", WireError("rate_limited"))
    assert len(caplog.records) == 2
    assert "+99 more" in caplog.records[1].getMessage()
    assert ledger.record_of("p").total == 101


def test_guard_turns_a_flood_into_a_ban(clock):
    guard = PeerGuard(RateLimiter(rate=1.0, burst=5, clock=clock), PeerLedger(max_violations=10, clock=clock))
    reasons = []
    for _ in range(100):
        try:
            guard.admit("flooder")
        except WireError as error:
            reasons.append(error.reason)
    assert reasons.count("rate_limited") == 10
    assert reasons.count("banned") == 85
    guard.admit("honest")


def test_a_blocked_peer_is_refused_until_unblocked_whatever_its_record(clock):
    ledger = PeerLedger(max_violations=3, clock=clock)
    ledger.block("p")
    assert ledger.is_blocked("p") and ledger.is_banned("p") and not ledger.is_banned("q")
    with pytest.raises(WireError, match="blocked by this node's user"):
        ledger.check("p")
    clock.now += 10 * 24 * 3600.0  # no ban runs out on a block
    assert ledger.is_banned("p")
    ledger.unblock("p")
    assert not ledger.is_banned("p")
    ledger.check("p")


def test_the_blocked_list_is_bounded(clock, monkeypatch):
    monkeypatch.setattr("p2p.limits.MAX_BLOCKED", 2)
    ledger = PeerLedger(clock=clock)
    ledger.block("a")
    ledger.block("b")
    ledger.block("b")  # already blocked: no room needed
    with pytest.raises(ValueError, match="at most 2 peers"):
        ledger.block("c")


async def _sixty_requests_to_one_peer() -> None:
    """On trio's fake clock: 60 requests to one peer, at most 3 at once and 4 a second after a burst of 6."""
    from p2p.limits import OutboundPacer

    pacer = OutboundPacer(rate=4.0, burst=6, concurrent=3)
    started: list[float] = []
    running = [0, 0]  # now, most at once

    async def one() -> None:
        async with pacer.turn("peer"):
            started.append(trio.current_time())
            running[0] += 1
            running[1] = max(running[1], running[0])
            await trio.sleep(0.01)
            running[0] -= 1

    async with trio.open_nursery() as nursery:
        for _ in range(60):
            nursery.start_soon(one)
    assert len(started) == 60 and running[1] == 3
    first = started[0]
    for at in started:  # every window from the start holds at most the burst and the rate since
        assert sum(1 for t in started if t <= at) <= 6 + 4 * (at - first) + 1e-9
    assert pacer._slots == {}  # an idle peer's slots are not kept


def test_a_nodes_own_requests_wait_for_room_under_the_rate_and_the_exchanges_at_once():
    trio.run(_sixty_requests_to_one_peer, clock=MockClock(autojump_threshold=0))
