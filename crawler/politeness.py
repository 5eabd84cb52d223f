"""Per-host manners: spacing between requests, per-host concurrency, back-off and host states.

Every request to a host, robots.txt included, happens inside `Politeness.slot(host)`. A slot is granted
when the host has a free concurrency place and its next start time has come; granting it moves the next
start time on by the host's current gap, the largest of `download_delay`, the robots.txt Crawl-delay
(capped), the AutoThrottle delay (Scrapy's algorithm) and any back-off after failures.

A request that timed out, or that a stop cancelled after it left, may still be running on the server, so
its slot stays taken (a "ghost") for another `download_timeout` seconds: the server never sees more than
`concurrent_requests_per_domain`.

Host states follow BINGO! (thesis 2.3.8): a failure tags a host "slow"; after `host_bad_after_failures`
consecutive failures it is "bad" and skipped; a success makes it "ok" again. A node crawls for weeks, and a
host that is down for an hour (or the node's own network, down for a minute) must not lose its queued links:
a bad host is tried again after `host_bad_retry_delay` seconds, by one request (a failure makes it bad again
at once), the wait doubling at each failed try. After `host_bad_retries` tries it stays bad (`given_up`).
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from enum import StrEnum

import trio

from crawler.errors import HostBadError
from crawler.settings import CrawlSettings

# Error kinds that say something about the host rather than about one page.
HOST_FAILURE_KINDS = frozenset({"timeout", "connect", "reset", "http_5xx", "http_429"})
UNANSWERED_KINDS = frozenset({"timeout", "connect", "reset"})  # of those, no answer from the host at all
MAX_RETRY_DELAY = 86_400.0  # a bad host is tried again at least once a day while it has tries left


class HostState(StrEnum):
    OK = "ok"
    SLOW = "slow"
    BAD = "bad"


@dataclass
class _Host:
    delay: float  # AutoThrottle's current delay (or download_delay when it is off)
    crawl_delay: float = 0.0
    next_start: float = -math.inf
    backoff_until: float = -math.inf
    in_flight: int = 0  # requests holding a slot, ghosts included
    unsent: int = 0  # granted requests not yet on the wire: the next grant waits for them
    ghosts: list[float] = field(default_factory=list)  # release times of slots kept after timeouts, cancels
    last_start: float = -math.inf
    failures: int = 0
    state: HostState = HostState.OK
    bad_spells: int = 0  # times the host turned bad with no success since
    retry_at: float = math.inf  # while bad: when one request may try it again (inf: never)
    answered: bool = False  # it sent an HTTP status (any) since the crawler started
    lot: trio.lowlevel.ParkingLot = field(default_factory=trio.lowlevel.ParkingLot)


@dataclass(frozen=True)
class HostRecord:
    """What the repository keeps of a host's state, so a restarted crawl does not hammer a bad host."""

    state: HostState
    failures: int = 0
    bad_spells: int = 0
    retry_in: float | None = None  # while bad: seconds until it is tried again (inf: never)


@dataclass
class Grant:
    """One granted slot; `Politeness.mark_sent(host, grant)` says when its request really left."""

    pending: bool = True


class Politeness:
    def __init__(self, settings: CrawlSettings, clock: Callable[[], float] = trio.current_time) -> None:
        self._settings = settings
        self._clock = clock
        self._hosts: dict[str, _Host] = {}
        start = settings.autothrottle_start_delay if settings.autothrottle_enabled else 0.0
        self._start_delay = max(settings.download_delay, start)

    def _host(self, host: str) -> _Host:
        state = self._hosts.get(host)
        if state is None:
            state = self._hosts[host] = _Host(delay=self._start_delay)
        return state

    def gap(self, host: str) -> float:
        """Seconds that must separate two request starts to `host` now (back-off not included)."""
        h = self._host(host)
        return max(self._settings.download_delay, h.delay, h.crawl_delay)

    def min_gap(self, host: str) -> float:
        """The smallest spacing this host may ever see: what a server-side check must hold us to."""
        return max(self._settings.download_delay, self._host(host).crawl_delay)

    def ready_at(self, host: str) -> float:
        """Earliest clock time a new request to `host` may start: when a bad host is tried again (inf when
        it never is), inf at its concurrency cap."""
        h = self._host(host)
        self._release_ghosts(h)
        self._try_again_if_due(h)
        if h.state is HostState.BAD:
            return h.retry_at
        if h.in_flight >= self._settings.concurrent_requests_per_domain:
            return math.inf
        return max(h.next_start, h.backoff_until)

    def state(self, host: str) -> HostState:
        h = self._hosts.get(host)
        if h is None:
            return HostState.OK
        self._try_again_if_due(h)
        return h.state

    def given_up(self, host: str) -> bool:
        """Whether the host is bad for the rest of the crawl: its queued links will never be fetched."""
        h = self._hosts.get(host)
        return h is not None and h.state is HostState.BAD and h.retry_at == math.inf

    def record_of(self, host: str) -> HostRecord:
        h = self._host(host)
        self._try_again_if_due(h)
        retry_in = max(0.0, h.retry_at - self._clock()) if h.state is HostState.BAD else None
        return HostRecord(h.state, h.failures, h.bad_spells, retry_in)

    def restore(self, host: str, record: HostRecord) -> None:
        """Take up a host's state as a previous crawl left it (`record_of`)."""
        h = self._host(host)
        h.state, h.failures, h.bad_spells = record.state, record.failures, record.bad_spells
        if record.state is HostState.BAD:
            h.retry_at = self._clock() + (math.inf if record.retry_in is None else record.retry_in)

    def answered(self, host: str) -> bool:
        """Whether `host` ever sent an HTTP status (any, errors too) to this crawler: a host that has not,
        new or unreachable (DNS, connect, robots.txt timeouts), may never answer."""
        h = self._hosts.get(host)
        return h is not None and h.answered

    def in_flight(self, host: str) -> int:
        h = self._hosts.get(host)
        return 0 if h is None else h.in_flight

    def set_crawl_delay(self, host: str, seconds: float) -> None:
        """Apply a robots.txt Crawl-delay (capped), also to the request that follows the robots.txt one."""
        h = self._host(host)
        h.crawl_delay = max(0.0, min(seconds, self._settings.crawl_delay_cap))
        h.next_start = max(h.next_start, h.last_start + h.crawl_delay)

    @asynccontextmanager
    async def slot(self, host: str) -> AsyncIterator[Grant]:
        """Wait until a request to `host` is allowed, and hold one of its concurrency places.

        Raises HostBadError when the host is (or becomes, while waiting) bad.
        """
        h = self._host(host)
        while True:
            self._try_again_if_due(h)
            if h.state is HostState.BAD:
                raise HostBadError(host)
            self._release_ghosts(h)
            if h.unsent:  # spacing counts from the previous request's real send: wait for it
                await h.lot.park()
                continue
            if h.in_flight >= self._settings.concurrent_requests_per_domain:
                with trio.move_on_at(min(h.ghosts, default=math.inf)):
                    await h.lot.park()
                continue
            wait = max(h.next_start, h.backoff_until) - self._clock()
            if wait > 0:
                await trio.sleep(wait)
                continue
            break
        h.in_flight += 1
        h.unsent += 1
        h.last_start = self._clock()
        h.next_start = h.last_start + self.gap(host)
        grant = Grant()
        try:
            yield grant
        except trio.Cancelled:  # a stop cancelled a request that left: the server may still be answering it
            if not grant.pending:
                self._keep_as_ghost(h)
            raise
        finally:
            if grant.pending:
                grant.pending = False
                h.unsent -= 1
            h.in_flight -= 1
            h.lot.unpark_all()

    def mark_sent(self, host: str, grant: Grant | None = None) -> None:
        """The request really left now (later than its slot was granted, when the loop was busy or it
        waited for a connection): count the spacing to the next request from here."""
        h = self._host(host)
        if grant is not None and grant.pending:
            grant.pending = False
            h.unsent -= 1
            h.lot.unpark_all()
        now = self._clock()
        h.last_start = max(h.last_start, now)
        h.next_start = max(h.next_start, now + self.gap(host))

    def record(
        self,
        host: str,
        latency: float,
        ok: bool,
        error_kind: str | None = None,
        status: int = 0,
        retry_after: float | None = None,
    ) -> None:
        """Feed back one request's outcome: AutoThrottle on latency, back-off and state on failures.

        `ok` means the host answered properly (any status but 5xx/429); page-level errors such as a 404
        or a wrong content type are not the host's fault and do not count as failures. `retry_after`: the
        seconds a 429 or 503 asked the crawler to wait (RFC 9110 10.2.3); a wait longer than
        `retry_backoff_max` makes the host bad until then, its links waiting as for any bad host.
        """
        h = self._host(host)
        self._try_again_if_due(h)
        h.answered = h.answered or status > 0 or (ok and error_kind is None)
        if ok or (error_kind is not None and error_kind not in HOST_FAILURE_KINDS):
            h.failures = 0
            h.bad_spells = 0
            if h.state is not HostState.OK:  # it answered (a request sent before it turned bad, too)
                h.state = HostState.OK
                h.retry_at = math.inf
            if self._settings.autothrottle_enabled and latency >= 0:
                self._throttle(h, latency, status)
            return
        if error_kind == "timeout":
            self._keep_as_ghost(h)
        h.failures += 1
        s = self._settings
        backoff = min(s.retry_backoff_base * 2 ** (h.failures - 1), s.retry_backoff_max)
        asked = None if retry_after is None else min(max(0.0, retry_after), MAX_RETRY_DELAY)
        h.backoff_until = self._clock() + max(backoff, asked or 0.0)
        if h.state is HostState.BAD:
            return
        if asked is not None and asked > s.retry_backoff_max:
            self._turn_bad(h, asked)
        elif h.failures >= s.host_bad_after_failures:
            self._turn_bad(h)
        elif h.state is HostState.OK:
            h.state = HostState.SLOW

    def _turn_bad(self, h: _Host, asked: float | None = None) -> None:
        """Bad until its next try: `asked` seconds when the server said so, else host_bad_retry_delay
        doubled per spell; given up (never tried again) after host_bad_retries spells."""
        s = self._settings
        h.state = HostState.BAD
        h.bad_spells += 1
        h.retry_at = math.inf
        if s.host_bad_retry_delay > 0 and h.bad_spells <= s.host_bad_retries:
            wait = asked if asked is not None else s.host_bad_retry_delay * 2 ** (h.bad_spells - 1)
            h.retry_at = self._clock() + min(wait, MAX_RETRY_DELAY)
        h.lot.unpark_all()

    def _try_again_if_due(self, h: _Host) -> None:
        """A bad host whose wait is over gets one request: slow, one failure short of bad."""
        if h.state is HostState.BAD and self._clock() >= h.retry_at:
            h.state = HostState.SLOW
            h.failures = max(0, self._settings.host_bad_after_failures - 1)
            h.retry_at = math.inf

    def _keep_as_ghost(self, h: _Host) -> None:
        """Keep the slot of a request given up on (timed out, or cancelled) taken for another
        `download_timeout`: the server may still be working on it."""
        h.ghosts.append(self._clock() + self._settings.download_timeout)
        h.in_flight += 1

    def _release_ghosts(self, h: _Host) -> None:
        if not h.ghosts:
            return
        now = self._clock()
        expired = [t for t in h.ghosts if t <= now]
        if expired:
            h.ghosts = [t for t in h.ghosts if t > now]
            h.in_flight -= len(expired)
            h.lot.unpark(count=len(expired))

    def _throttle(self, h: _Host, latency: float, status: int) -> None:
        """Scrapy's AutoThrottle: move the delay towards latency / target concurrency."""
        target = latency / self._settings.autothrottle_target_concurrency
        new_delay = max(target, (h.delay + target) / 2.0)
        new_delay = min(max(self._settings.download_delay, new_delay), self._settings.autothrottle_max_delay)
        if status != 200 and new_delay <= h.delay:
            return
        h.delay = new_delay

    def hosts(self) -> dict[str, HostState]:
        """Every host seen so far and its state (for status displays and statistics)."""
        return {name: h.state for name, h in self._hosts.items()}
