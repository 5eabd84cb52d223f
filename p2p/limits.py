"""Per-peer budgets: token-bucket rate limits and a ledger of violations that bans repeat offenders.

Every rejection of a peer's message goes through `PeerLedger.record`, which logs it (peer and reason, at
WARNING), counts it per reason for the UI ("peers whose messages were rejected and why") and bans the
peer for a while once it crosses the threshold. Both structures are bounded, so a crowd of fake peer ids
cannot grow them without limit, and take an injectable clock so tests need no sleeping. The ledger also
holds the peers the node's user blocked (`PeerLedger.block`): banned until unblocked, whatever they do.
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter, OrderedDict, deque
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import trio

from p2p.codec import MAX_FRAME, decode_frame, read_frame
from p2p.errors import WireError

__all__ = ["PeerGuard", "PeerLedger", "PeerRecord", "RateLimiter", "Violation"]

log = logging.getLogger("p2p.wire")

Clock = Callable[[], float]
MAX_TRACKED_PEERS = 10_000
MAX_BAN_SECONDS = 24 * 3600.0
MAX_BLOCKED = 10_000  # peers a user may block: a list people keep by hand, bounded all the same


@dataclass
class _Bucket:
    tokens: float
    updated: float


class OutboundPacer:
    """What this node sends one peer: at most `concurrent` exchanges at once and `rate` requests a second
    after a burst, waiting for room instead of being refused. The node paces itself at half of what a peer
    with its own settings serves: a node with 150 topics pulled its peer's 150 models at once, both sides
    counted the flood as violations, and two honest nodes banned each other for ten minutes."""

    def __init__(self, rate: float, burst: float, concurrent: int) -> None:
        self.rate = rate
        self.concurrent = concurrent
        self._bucket = RateLimiter(rate, burst, clock=trio.current_time)
        self._slots: dict[str, trio.CapacityLimiter] = {}

    @asynccontextmanager
    async def turn(self, peer: str) -> AsyncIterator[None]:
        """Hold one of the peer's exchange slots, once its request rate allows one more."""
        slots = self._slots.setdefault(peer, trio.CapacityLimiter(self.concurrent))
        try:
            async with slots:
                while not self._bucket.allow(peer):
                    await trio.sleep(1.0 / self.rate)
                yield
        finally:
            if slots.borrowed_tokens == 0 and slots.statistics().tasks_waiting == 0:
                self._slots.pop(peer, None)


class RateLimiter:
    """One token bucket per peer: `burst` requests at once, then `rate` per second."""

    def __init__(
        self,
        rate: float,
        burst: float,
        clock: Clock = time.monotonic,
        max_peers: int = MAX_TRACKED_PEERS,
    ) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("rate must be > 0 and burst >= 1")
        self.rate = rate
        self.burst = float(burst)
        self._clock = clock
        self._max_peers = max_peers
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def allow(self, peer: str, cost: float = 1.0) -> bool:
        """Takes `cost` tokens from the peer's bucket if it has them."""
        now = self._clock()
        bucket = self._buckets.get(peer)
        if bucket is None:
            bucket = _Bucket(self.burst, now)
            self._buckets[peer] = bucket
            while len(self._buckets) > self._max_peers:
                self._buckets.popitem(last=False)  # the least recently seen peer starts afresh
        else:
            self._buckets.move_to_end(peer)
            bucket.tokens = min(self.burst, bucket.tokens + max(0.0, now - bucket.updated) * self.rate)
            bucket.updated = now
        if bucket.tokens < cost:
            return False
        bucket.tokens -= cost
        return True

    def check(self, peer: str, cost: float = 1.0) -> None:
        """Like `allow`, but raises `WireError("rate_limited")`."""
        if not self.allow(peer, cost):
            raise WireError("rate_limited", f"more than {self.rate:g}/s (burst {self.burst:g})")

    def forget(self, peer: str) -> None:
        self._buckets.pop(peer, None)


@dataclass(frozen=True)
class Violation:
    at: float
    reason: str
    detail: str


@dataclass(frozen=True)
class PeerRecord:
    """What the ledger knows about one peer, as shown in the UI."""

    peer: str
    total: int
    reasons: Mapping[str, int]
    recent: tuple[Violation, ...]
    bans: int
    banned_until: float | None


@dataclass
class _Entry:
    reasons: Counter[str] = field(default_factory=Counter)
    recent: deque[Violation] = field(default_factory=lambda: deque(maxlen=10))
    total: int = 0
    since_ban: int = 0
    bans: int = 0
    banned_until: float | None = None
    last_logged: dict[str, float] = field(default_factory=dict)
    suppressed: Counter[str] = field(default_factory=Counter)


class PeerLedger:
    """Counts violations per peer and reason; `max_violations` since the last ban earn a ban.

    Bans last `ban_seconds`, doubling for each further ban (at most a day; `math.inf` means until the
    node restarts). Repeats of one reason from one peer within `log_interval` seconds are counted but
    logged once, so a flood cannot flood the log as well.
    """

    def __init__(
        self,
        max_violations: int = 20,
        ban_seconds: float = 600.0,
        clock: Clock = time.monotonic,
        max_peers: int = MAX_TRACKED_PEERS,
        log_interval: float = 1.0,
    ) -> None:
        if max_violations < 1:
            raise ValueError("max_violations must be >= 1")
        self.max_violations = max_violations
        self.ban_seconds = ban_seconds
        self._clock = clock
        self._max_peers = max_peers
        self._log_interval = log_interval
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._blocked: set[str] = set()

    def block(self, peer: str) -> None:
        """The user's choice: the peer is refused from now on, until `unblock`."""
        if peer not in self._blocked and len(self._blocked) >= MAX_BLOCKED:
            raise ValueError(f"at most {MAX_BLOCKED} peers can be blocked: unblock some first")
        self._blocked.add(peer)

    def unblock(self, peer: str) -> None:
        self._blocked.discard(peer)

    def is_blocked(self, peer: str) -> bool:
        return peer in self._blocked

    def record(self, peer: str, error: WireError) -> bool:
        """Logs and counts one rejected message; True when this violation got the peer banned."""
        now = self._clock()
        entry = self._entry(peer)
        entry.total += 1
        entry.since_ban += 1
        entry.reasons[error.reason] += 1
        entry.recent.append(Violation(now, error.reason, error.detail[:200]))
        self._log(peer, entry, error, now)
        if entry.since_ban < self.max_violations or self._banned(entry, now):
            return False
        entry.bans += 1
        entry.since_ban = 0
        duration = min(
            self.ban_seconds * 2 ** min(entry.bans - 1, 20), max(MAX_BAN_SECONDS, self.ban_seconds)
        )
        entry.banned_until = now + duration
        log.warning(
            "banned peer %s for %s after %d violations (%s)",
            peer,
            "the rest of this run" if math.isinf(duration) else f"{duration:g} s",
            self.max_violations,
            ", ".join(f"{reason} x{count}" for reason, count in entry.reasons.most_common(3)),
        )
        return True

    def is_banned(self, peer: str) -> bool:
        """Banned for its violations, or blocked by the user."""
        if peer in self._blocked:
            return True
        entry = self._entries.get(peer)
        return entry is not None and self._banned(entry, self._clock())

    def check(self, peer: str) -> None:
        """Raises `WireError("banned")` while the peer is banned or blocked (not counted: it is the
        consequence)."""
        if peer in self._blocked:
            raise WireError("banned", "blocked by this node's user")
        entry = self._entries.get(peer)
        if entry is not None and self._banned(entry, self._clock()):
            raise WireError("banned", f"until clock {entry.banned_until:g}")

    def record_of(self, peer: str) -> PeerRecord | None:
        entry = self._entries.get(peer)
        return None if entry is None else self._record(peer, entry, self._clock())

    def snapshot(self) -> list[PeerRecord]:
        """Every peer with violations, the worst first."""
        now = self._clock()
        records = [self._record(peer, entry, now) for peer, entry in self._entries.items()]
        return sorted(records, key=lambda record: (-record.total, record.peer))

    def _entry(self, peer: str) -> _Entry:
        entry = self._entries.get(peer)
        if entry is None:
            entry = self._entries[peer] = _Entry()
            self._evict()
        else:
            self._entries.move_to_end(peer)
        return entry

    def _evict(self) -> None:
        # Forget the least recently offending peer that is not banned; bans are what must survive.
        now = self._clock()
        while len(self._entries) > self._max_peers:
            victim = next((p for p, e in self._entries.items() if not self._banned(e, now)), None)
            if victim is None:
                victim = next(iter(self._entries))
            del self._entries[victim]

    @staticmethod
    def _banned(entry: _Entry, now: float) -> bool:
        return entry.banned_until is not None and now < entry.banned_until

    def _record(self, peer: str, entry: _Entry, now: float) -> PeerRecord:
        return PeerRecord(
            peer=peer,
            total=entry.total,
            reasons=MappingProxyType(dict(entry.reasons)),
            recent=tuple(entry.recent),
            bans=entry.bans,
            banned_until=entry.banned_until if self._banned(entry, now) else None,
        )

    def _log(self, peer: str, entry: _Entry, error: WireError, now: float) -> None:
        last = entry.last_logged.get(error.reason)
        if last is not None and now - last < self._log_interval:
            entry.suppressed[error.reason] += 1
            return
        entry.last_logged[error.reason] = now
        repeats = entry.suppressed.pop(error.reason, 0)
        suffix = f" (+{repeats} more like it not logged)" if repeats else ""
        log.warning("rejected message from peer %s: %s%s", peer, error, suffix)


class PeerGuard:
    """The gate in front of every protocol handler: refuses banned peers, charges the rate limit, and
    records whatever a handler rejects."""

    def __init__(self, limiter: RateLimiter, ledger: PeerLedger) -> None:
        self.limiter = limiter
        self.ledger = ledger

    def admit(self, peer: str, cost: float = 1.0) -> None:
        """Raises `WireError` ("banned" or "rate_limited"); a rate-limit excess counts as a violation."""
        self.ledger.check(peer)
        try:
            self.limiter.check(peer, cost)
        except WireError as error:
            self.ledger.record(peer, error)
            raise

    def reject(self, peer: str, error: WireError) -> bool:
        """Records a handler's rejection; True when the peer is now banned."""
        return self.ledger.record(peer, error)

    async def receive(
        self, peer: str, stream: Any, expected: type | None = None, max_size: int | None = None
    ) -> Any:
        """Admit, read one frame, decode it; every `WireError` is recorded against the peer and re-raised
        (except a clean close before a frame, which is not a violation)."""
        self.admit(peer)
        try:
            if max_size is None:
                max_size = getattr(expected, "MAX_FRAME", MAX_FRAME)
            return decode_frame(await read_frame(stream, max_size), expected, max_size)
        except WireError as error:
            if error.reason != "closed":
                self.ledger.record(peer, error)
            raise
