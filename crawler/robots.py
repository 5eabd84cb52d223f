"""robots.txt rules per host, fetched once and cached (RFC 9309 semantics, Protego as the parser).

A robots.txt answering 5xx or 429 (or not answering) *defers* the host: nothing is fetched from it until a
later retry, since an overloaded server says nothing about permission. Any other 4xx means no rules.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

import trio
from protego import Protego

from crawler.politeness import UNANSWERED_KINDS
from crawler.settings import CrawlSettings
from crawler.sitemaps import declared_sitemaps
from crawler.urls import host_of, origin_of


@dataclass(frozen=True)
class RobotsResponse:
    """What fetching a robots.txt gave: status 0 with `error` set when there was no usable answer."""

    status: int
    body: bytes = b""
    error: str | None = None


@dataclass(frozen=True)
class RobotsDecision:
    verdict: Literal["allow", "disallow", "defer"]
    retry_at: float | None = None  # clock time to ask again, for "defer"
    local: bool = False  # deferred because this machine had no socket for the robots.txt, not the host


@dataclass
class _Rules:
    parser: Protego | None  # None: every path allowed
    expires_at: float
    sitemaps: tuple[str, ...] = ()  # its Sitemap lines, absolute


@dataclass
class _Deferred:
    until: float
    attempts: int
    local: bool = False


# No answer at all, after the fetcher's retries: the host turned bad (or is close to it), and its links wait
# for its next try; a deferral of robotstxt_defer_delay would hold them back again after that try.
UNANSWERED = UNANSWERED_KINDS | {"host_bad"}
UNANSWERED_WAIT = 1.0

RobotsFetch = Callable[[str], Awaitable[RobotsResponse]]
ALLOW = RobotsDecision("allow")
DISALLOW = RobotsDecision("disallow")


class RobotsCache:
    """Answers "may this URL be fetched?", fetching each host's robots.txt at most once per TTL.

    `fetch(robots_url)` does the request (through politeness); concurrent checks for one host share one
    fetch. `on_crawl_delay(host, seconds)` receives each host's Crawl-delay, already capped.
    """

    def __init__(
        self,
        settings: CrawlSettings,
        fetch: RobotsFetch,
        on_crawl_delay: Callable[[str, float], None] | None = None,
        clock: Callable[[], float] = trio.current_time,
        max_hosts: int = 50_000,
    ) -> None:
        self._settings = settings
        self._fetch = fetch
        self._on_crawl_delay = on_crawl_delay
        self._clock = clock
        self._max_hosts = max_hosts
        self._rules: OrderedDict[str, _Rules] = OrderedDict()
        self._deferred: dict[str, _Deferred] = {}
        self._pending: dict[str, trio.Event] = {}

    async def check(self, url: str) -> RobotsDecision:
        if not self._settings.robotstxt_obey:
            return ALLOW
        host = host_of(url)
        while True:
            decision = self._cached(host, url)
            if decision is not None:
                return decision
            pending = self._pending.get(host)
            if pending is not None:
                await pending.wait()
                continue
            self._pending[host] = trio.Event()
            try:
                await self._load(host, url)
            finally:
                self._pending.pop(host).set()

    def cached_decision(self, url: str) -> RobotsDecision | None:
        """The decision without fetching: None when the host's robots.txt is not known yet."""
        if not self._settings.robotstxt_obey:
            return ALLOW
        return self._cached(host_of(url), url)

    def sitemaps(self, host: str) -> tuple[str, ...] | None:
        """The sitemaps the host's robots.txt names (`crawler.sitemaps`); None while it is not known."""
        rules = self._rules.get(host)
        return None if rules is None else rules.sitemaps

    def _cached(self, host: str, url: str) -> RobotsDecision | None:
        now = self._clock()
        deferred = self._deferred.get(host)
        if deferred is not None and now < deferred.until:
            return RobotsDecision("defer", deferred.until, deferred.local)
        rules = self._rules.get(host)
        if rules is None or now >= rules.expires_at:
            return None
        self._rules.move_to_end(host)
        if rules.parser is None or rules.parser.can_fetch(url, self._settings.user_agent):
            return ALLOW
        return DISALLOW

    async def _load(self, host: str, url: str) -> None:
        response = await self._fetch(origin_of(url) + "/robots.txt")
        now = self._clock()
        if response.error == "local_resources":  # the host is not to blame: ask again soon, no back-off
            attempts = self._deferred[host].attempts if host in self._deferred else 0
            self._deferred[host] = _Deferred(now + self._settings.robotstxt_defer_delay, attempts, local=True)
            return
        if response.error is not None or response.status == 429 or response.status >= 500:
            attempts = self._deferred[host].attempts + 1 if host in self._deferred else 1
            wait = self._settings.robotstxt_defer_delay * 2 ** (attempts - 1)
            if response.error in UNANSWERED:  # the host's state (crawler.politeness) says when to ask again
                wait = min(wait, UNANSWERED_WAIT)
            self._deferred[host] = _Deferred(now + min(wait, self._settings.robotstxt_cache_ttl), attempts)
            return
        self._deferred.pop(host, None)
        parser = None
        sitemaps: tuple[str, ...] = ()
        if 200 <= response.status < 300:
            # UTF-8 (RFC 9309); a byte-order mark, as Windows editors write one, is no part of the first
            # line, else "User-agent" would not be read there and the first group's rules would be lost
            parser = Protego.parse(response.body.decode("utf-8-sig", errors="replace"))
            delay = requested_delay(parser, self._settings.user_agent)
            if delay is not None and self._on_crawl_delay is not None:
                self._on_crawl_delay(host, min(float(delay), self._settings.crawl_delay_cap))
            sitemaps = tuple(declared_sitemaps(origin_of(url) + "/robots.txt", list(parser.sitemaps)))
        self._rules[host] = _Rules(parser, now + self._settings.robotstxt_cache_ttl, sitemaps)
        self._rules.move_to_end(host)
        while len(self._rules) > self._max_hosts:
            self._rules.popitem(last=False)


def requested_delay(parser: Protego, user_agent: str) -> float | None:
    """The gap between requests a robots.txt asks of us: its Crawl-delay, or the gap its Request-rate
    implies ("1/5": one request per 5 seconds), whichever is longer. A Request-rate's time of day window
    is not read: the rate holds all day, the polite side."""
    gaps: list[float] = []
    delay = parser.crawl_delay(user_agent)
    if delay is not None and math.isfinite(delay) and delay >= 0:
        gaps.append(float(delay))
    rate = parser.request_rate(user_agent)
    if rate is not None and rate.requests > 0 and math.isfinite(rate.seconds) and rate.seconds >= 0:
        gaps.append(rate.seconds / rate.requests)
    return max(gaps) if gaps else None
