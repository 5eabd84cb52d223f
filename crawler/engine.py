"""The crawl engine: fetch, parse, deduplicate, classify, store, index and follow links, under trio.

The BINGO! pipeline (thesis 2.3.3) as three stages:

1. a dispatcher pops the frontier whenever a fetch slot is free and the entry's host may be contacted
   (`Politeness.ready_at`), and starts at most `concurrent_requests` fetches;
2. fetched results queue up; one processor takes whatever has arrived (up to `write_batch_size`) and parses
   it, fingerprints it and runs the focus policy's classifier in a worker thread (`parse_in_thread`);
3. back on the loop it deduplicates, turns links into frontier entries with the policy's priorities, and
   commits documents, links, host states and frontier changes in one transaction, so a URL is marked done
   exactly when its document is stored: after kill -9 the crawl resumes with nothing lost and nothing
   completed fetched again. When the disk has no room for a batch, its transaction rolls back and the run
   stops (reason "disk_full"); the crawler reloads its frontier and duplicate index from the repository, so
   the batch's pages, still queued there, are fetched again when the crawl resumes.

Stored pages that fall due (`crawler.revisits`) are fetched again before new links: keeping the repository
true comes before growing it, and a node at its `max_pages` still revisits. A revisit that changed a page
replaces its row in the batch's transaction. Sitemaps (`crawler.sitemaps`) are read when a host's first
page is accepted, feeds (`crawler.feeds`) when a page names them, and both again when due with the
revisits.

The focus loop plugs in through a `FocusPolicy` (or the `score_page` / `link_priority` callables): the
default accepts every page and gives links breadth-first priorities (1 / depth, thesis 2.7 strategy 1).
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import logging
import math
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, Protocol
from urllib.parse import urlsplit

import trio

from crawler.dedup import DedupIndex, DedupVerdict, fingerprint, simhash
from crawler.feeds import is_feed, parse_feed
from crawler.frontier import Frontier, FrontierEntry, ReadyAt, retried
from crawler.parse import Link, ParsedPage, parse_page
from crawler.politeness import HOST_FAILURE_KINDS, HostRecord, HostState
from crawler.repository import DocumentRecord, LinkRecord, Repository, RepositoryFull, StoredPage
from crawler.revisits import (
    GONE_STATUSES,
    Revisit,
    due_revisits,
    due_sitemaps,
    mark_changed,
    next_interval,
    next_revisit_at,
    relisted_failures,
    retry_interval,
)
from crawler.settings import CrawlSettings
from crawler.sitemaps import Sitemap, SitemapEntry, listed_hosts, may_be_sitemap, parse_sitemap
from crawler.urls import host_of, looks_like_trap, normalize_url, strip_params

log = logging.getLogger(__name__)
ROBOTS_DEFER_TRIES = 2  # deferrals (robots.txt answering 5xx/429) before a URL is given up
HOST_FAILURE_TRIES = 3  # tries of a URL whose failure turned its host bad, before the URL is given up
UNASKED_KINDS = frozenset({"host_bad", "robots_deferred"})  # failures with no request for the page itself
LOCAL_RESOURCES_WAIT = 5.0  # seconds before a URL the node had no socket for is tried again
LOCAL_RESOURCES_TRIES = 60  # and how often (5 minutes) before it is given up, its host left unharmed
META_REFRESH_MAX_DELAY = 10.0  # a slower refresh is a page in its own right, not a redirect
RATE_WINDOW = 5.0  # seconds over which the current pages/s is measured
REVISIT_BATCH = 64  # due pages taken from the repository at a time
# One encoder for every link's context: json.dumps with options builds a new encoder per call.
_encode_context = json.JSONEncoder(ensure_ascii=False).encode


def host_filter(patterns: Iterable[str]) -> Callable[[str], bool]:
    """A URL predicate for `allowed_hosts`: exact names, '.suffix' for subdomains, or IP networks."""
    names: set[str] = set()
    suffixes: list[str] = []
    networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
    for pattern in patterns:
        pattern = pattern.strip().lower()
        if "/" in pattern:
            networks.append(ipaddress.ip_network(pattern, strict=False))
        elif pattern.startswith("."):
            suffixes.append(pattern)
        elif pattern:
            names.add(pattern)

    decided: dict[str, bool] = {}  # per host name: parsing addresses for every link was a cost

    def allowed(url: str) -> bool:
        host = (urlsplit(url).hostname or "").lower()
        verdict = decided.get(host)
        if verdict is None:
            if len(decided) >= 100_000:
                decided.clear()
            verdict = decided[host] = allowed_host(host)
        return verdict

    def allowed_host(host: str) -> bool:
        if host in names or any(host.endswith(s) or host == s[1:] for s in suffixes):
            return True
        if networks:
            try:
                address = ipaddress.ip_address(host)
            except ValueError:
                return False
            return any(address in network for network in networks)
        return False

    return allowed


def _always_ready(host: str) -> float:
    return -math.inf


class PageVerdict(NamedTuple):
    """The classifier's say on a page: its topic (None: no topic), confidence, and whether it is accepted."""

    topic: str | None
    confidence: float
    accepted: bool


@dataclass(frozen=True)
class CrawledPage:
    """A fetched and parsed page as the focus policy sees it."""

    entry: FrontierEntry
    url: str  # the final URL after redirects
    status: int
    content_type: str
    headers: dict[str, str]
    parsed: ParsedPage
    fingerprint: str
    simhash: int
    size: int
    elapsed: float
    redirects: tuple[str, ...] = ()
    sitemap: Sitemap | None = None  # a sitemap, not a page (`crawler.sitemaps`): `parsed` is empty
    entry_verdicts: tuple[PageVerdict, ...] = ()  # a feed's entries judged by their words, in entry order

    @property
    def depth(self) -> int:
        return self.entry.depth


class FocusPolicy(Protocol):
    def score_pages(self, pages: Sequence[CrawledPage]) -> list[PageVerdict]: ...

    def link_priority(self, page: CrawledPage, link: Link, verdict: PageVerdict) -> float | None: ...

    # Optional: `link_topic(page, verdict) -> str | None`, the topic queue of the page's links (default:
    # verdict.topic); a focused crawl tunnels the links of a rejected page in its entry's topic.
    # Optional: `score_entries(feed, texts) -> list[PageVerdict]`, a feed's entries judged by their words
    # (title and summary), in the worker thread: an entry it accepts is queued as a link of an accepted page
    # of that confidence and topic (one already queued is raised to that priority); the others (and every
    # entry without it) are tunnelled through the feed.
    # Optional: `frontier_dry() -> bool`, on the event loop when nothing is in flight and no queued entry can
    # be served (none left, or only paused topics' ones): True when it queued entries it held back, and the
    # crawl goes on; else the run ends ("exhausted", "paused" or "blocked").


NOT_JUDGED = PageVerdict(None, 0.0, False)  # a sitemap's: not classified


class BreadthFirst:
    """Accept every page; a link found at depth L gets priority 1/(L+1) (seeds at depth 0 come first)."""

    def score_pages(self, pages: Sequence[CrawledPage]) -> list[PageVerdict]:
        return [PageVerdict(None, 1.0, True) for _ in pages]

    def link_priority(self, page: CrawledPage, link: Link, verdict: PageVerdict) -> float | None:
        return 1.0 / (page.depth + 2)


class _CallablePolicy:
    """Adapts the contract's per-page hooks to a batch policy."""

    def __init__(
        self,
        score_page: Callable[[CrawledPage], tuple[str | None, float, bool]] | None,
        link_priority: Callable[[CrawledPage, Link, PageVerdict], float | None] | None,
    ) -> None:
        default = BreadthFirst()
        self._score = score_page
        self._priority = link_priority or default.link_priority

    def score_pages(self, pages: Sequence[CrawledPage]) -> list[PageVerdict]:
        if self._score is None:
            return [PageVerdict(None, 1.0, True) for _ in pages]
        return [PageVerdict(*self._score(page)) for page in pages]

    def link_priority(self, page: CrawledPage, link: Link, verdict: PageVerdict) -> float | None:
        return self._priority(page, link, verdict)


@dataclass(frozen=True)
class CrawlStats:
    """A snapshot of a running crawl, emitted every `stats_interval` seconds and at the end. `pages`,
    `fetches`, `elapsed` and the rates are of this `run`; errors, duplicates and bytes count since the
    crawler was built (a node runs one crawler many times: each frontier edit ends a run)."""

    pages: int = 0  # documents stored in this run
    total_pages: int = 0  # documents this node crawled itself in the repository (peers' pooled ones not)
    fetches: int = 0  # fetch attempts completed in this run
    errors: int = 0
    errors_by_kind: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0
    near_duplicates: int = 0
    bytes: int = 0
    frontier_size: int = 0
    in_flight: int = 0
    elapsed: float = 0.0
    pages_per_s: float = 0.0  # over the whole run
    recent_pages_per_s: float = 0.0  # over the last few seconds
    finished: bool = False
    reason: str = ""  # why the crawl ended: "max_pages", "exhausted", "stopped", "blocked", "paused"
    revisits: int = 0  # stored pages fetched again (crawler.revisits)
    changed: int = 0  # of which had changed and were replaced
    gone: int = 0  # of which their server said were gone, and were removed
    sitemaps: int = 0  # sitemaps read (crawler.sitemaps)
    sitemap_urls: int = 0  # URLs they listed that were queued
    sitemaps_unchanged: int = 0  # sitemaps read again and found unchanged (304 or the same bytes)
    feeds: int = 0  # feeds read (crawler.feeds)
    feed_urls: int = 0  # pages their entries link to that were queued
    feeds_unchanged: int = 0  # feeds read again and found unchanged
    relisted: int = 0  # failed URLs queued again: a sitemap or feed dated them after the failure

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass
class _Counters:
    pages: int = 0
    fetches: int = 0
    errors: Counter = field(default_factory=Counter)
    duplicates: int = 0
    near_duplicates: int = 0
    bytes: int = 0
    revisits: int = 0
    changed: int = 0
    gone: int = 0
    sitemaps: int = 0
    sitemap_urls: int = 0
    sitemaps_unchanged: int = 0
    feeds: int = 0
    feed_urls: int = 0
    feeds_unchanged: int = 0
    relisted: int = 0


class _Revisited(NamedTuple):
    """A revisit's outcome, written with its batch: "checked" (`due_at`, `interval` and validators;
    `checked_at` when the page was found as stored), or "changed" (the new version's `page`), or "gone"."""

    kind: str
    doc_id: int
    page: StoredPage | None = None
    due_at: float = 0.0
    interval: float | None = None
    etag: str | None = None
    last_modified: str | None = None
    checked_at: float | None = None


class _SitemapRead(NamedTuple):
    """A sitemap or feed (`kind`) read, found unchanged, or not read, written with its batch: `urls`, how
    many it listed (None: unchanged or unreadable, the count kept); `wait` until it is read again and the
    `interval` to adapt next time (None: revisit_after); `lastmods`: (URL, lastmod) of the pages it listed
    with one; `validators`: ETag, Last-Modified and fingerprint of the reading (None: the stored ones
    kept)."""

    entry: FrontierEntry
    urls: int | None
    wait: float
    interval: float | None = None
    lastmods: tuple[tuple[str, float], ...] = ()
    validators: tuple[str | None, str | None, str | None] = (None, None, None)
    kind: str = "sitemap"


def _listed_link(item: SitemapEntry, kind: str) -> Link:
    """A sitemap's or feed's entry as a link; a feed entry's words are its anchor text and context."""
    return Link(item.url, item.text, kind, 0, 0, ((0, item.text),) if item.text else ())


class Crawler:
    """One node's crawler over one repository: `await run(max_pages)` under trio, `stop()` to end it.

    `lockstep`: pop the next URL only once the previous fetches are stored and their links queued. The
    pipeline otherwise fetches page N+1 while page N is parsed, classified and stored, so even one fetch at a
    time pops from a frontier that may or may not hold page N's links yet, and two identical crawls part
    ways within a few fetches. With `concurrent_requests=1` and a web that answers alike, a lockstep crawl's
    fetch order is a function of its seeds, web and policy (experiments comparing two policies need that);
    it costs the overlap of fetching with processing. Politeness still
    spaces and backs off every host's requests, but by waiting for the best entry's host, not by serving
    another host first: delays cost time instead of changing the order.
    """

    def __init__(
        self,
        repo: Repository,
        settings: CrawlSettings | None = None,
        fetcher: Any = None,
        politeness: Any = None,
        *,
        policy: FocusPolicy | None = None,
        score_page: Callable[[CrawledPage], tuple[str | None, float, bool]] | None = None,
        link_priority: Callable[[CrawledPage, Link, PageVerdict], float | None] | None = None,
        clock: Callable[[], float] = trio.current_time,
        wall_clock: Callable[[], float] = time.time,
        lockstep: bool = False,
    ) -> None:
        self.repo = repo
        self._wall = wall_clock  # stored times (fetched_at, revisit_at) are the calendar's
        self.lockstep = lockstep
        self.settings = settings or CrawlSettings()
        if fetcher is None:
            from crawler.fetch import Fetcher
            from crawler.politeness import Politeness

            politeness = politeness or Politeness(self.settings, clock=clock)
            fetcher = Fetcher(self.settings, politeness, clock=clock)
            self._owns_fetcher = True
        else:
            self._owns_fetcher = False
        self.fetcher = fetcher
        self.politeness = politeness if politeness is not None else fetcher.politeness
        if policy is None:
            policy = (
                _CallablePolicy(score_page, link_priority)
                if (score_page or link_priority)
                else BreadthFirst()
            )
        self.policy = policy
        self._clock = clock
        s = self.settings
        self._allowed = host_filter(s.allowed_hosts) if s.allowed_hosts else None
        self.frontier = Frontier(
            max_size=s.frontier_max_size,
            depth_limit=s.depth_limit,
            host_page_budget=s.host_page_budget,
            max_per_host_in_flight=s.concurrent_requests_per_domain,
        )
        self.frontier.load(repo)
        self._restore_bad_hosts()
        self._total_at_start = self._load_documents_state()
        self._counters = _Counters()  # since the crawler was built: a node runs it many times
        self._before_run = (0, 0)  # the counters' (pages, fetches) when this run began
        self._listeners: list[Callable[[CrawlStats], None]] = []
        self._wake = trio.Event()
        self._stopping = False
        self._pending = 0  # dispatched and not yet committed
        self._in_flight = 0  # fetching now
        self._active_bytes = 0  # bodies fetched and not yet processed (scraper_slot_max_active_size)
        self._deferred: list[tuple[float, FrontierEntry]] = []  # (retry at, entry) after robots_deferred
        self._revisit_queue: list[Revisit] = []  # due, not yet dispatched
        self._revisiting: dict[str, Revisit] = {}  # dispatched, by URL
        self._fetching: dict[int, tuple[FrontierEntry, trio.CancelScope]] = {}  # in flight, by id(entry)
        self._next_revisit_check = -math.inf  # wall time before which no stored page is due
        self._sitemap_hosts: set[str] = set()  # hosts whose sitemaps were queued (or that name none)
        self._started = 0.0
        self._last_stats_row = -math.inf
        self._rate_marks: list[tuple[float, int]] = []
        self._reason = ""
        self._disk_full = False  # this run had a batch the repository had no room for (RepositoryFull)
        defaults = CrawlSettings()
        self._default_url_settings = all(  # links as the parser normalised them are final (`_as_configured`)
            getattr(s, name) == getattr(defaults, name)
            for name in ("url_sort_query", "url_max_length", "host_max_length")
        )
        self.stats = CrawlStats(total_pages=self._total_at_start, frontier_size=len(self.frontier))

    def _restore_bad_hosts(self) -> None:
        """Hosts a previous crawl found bad stay bad until their next try: a restart does not send them the
        requests that turned them bad again."""
        now = self._wall()
        for row in self.repo.bad_hosts():
            retry_in = max(0.0, row["retry_at"] - now)
            record = HostRecord(HostState.BAD, row["failures"], row["bad_spells"], retry_in)
            self.politeness.restore(row["host"], record)

    def _load_documents_state(self) -> int:
        """The duplicate index and the next document id as the repository holds them; returns how many
        documents the node's own crawl stored (max_pages counts those: peers' pooled results share the
        table)."""
        s = self.settings
        self.dedup = DedupIndex(max_size=s.dedup_index_size, max_distance=s.near_duplicate_distance)
        for doc_id, fp, sh in self.repo.fingerprints(s.dedup_index_size):
            self.dedup.add(doc_id, fp, sh)
        row = self.repo.db.execute(
            "SELECT coalesce(max(id), 0), count(*) FILTER (WHERE origin IS NULL) FROM documents"
        ).fetchone()
        self._next_id = int(row[0]) + 1
        return int(row[1])

    def _reload_after_full_disk(self) -> None:
        """Back to what the repository holds: a batch it had no room for left its pages' fingerprints and
        links in memory only. Those pages are still queued in the repository and are fetched again."""
        self.frontier.reload(self.repo)
        self._load_documents_state()
        self._deferred.clear()
        self._revisit_queue.clear()
        self._next_revisit_check = -math.inf

    # -- public -------------------------------------------------------------------------------------------
    def add_listener(self, callback: Callable[[CrawlStats], None]) -> None:
        """Call `callback(stats)` every `stats_interval` seconds during `run` and once at its end."""
        self._listeners.append(callback)

    def add_seeds(self, urls: Iterable[str], topic: str | None = None, priority: float = 1.0) -> int:
        """Queue start URLs (normalised; seen ones skipped) and persist them; returns how many were queued."""
        added = 0
        for raw in urls:
            url = normalize_url(raw, settings=self.settings)
            if url is None:
                continue
            entry = FrontierEntry(
                url=url, host=host_of(url), priority=priority, depth=0, topic=topic, origin=url
            )
            added += self.frontier.add(entry)
        with self.repo.transaction():
            self.frontier.persist(self.repo)
        self._wake.set()
        return added

    @property
    def queued(self) -> int:
        """Links waiting to be fetched: the frontier's and those held back until a host's robots.txt
        answers (the repository's queue holds both, so a restarted crawl has both again)."""
        return len(self.frontier) + len(self._deferred)

    @property
    def listings(self) -> tuple[str, ...]:
        """The kinds of link lists this crawl reads, and so reads again when due (`crawler.revisits`)."""
        enabled = {"sitemap": self.settings.sitemaps_enabled, "feed": self.settings.feeds_enabled}
        return tuple(kind for kind, on in enabled.items() if on)

    def revisit_due_in(self) -> float:
        """Seconds until a stored page falls due for a revisit (0: one is due; inf: none will be)."""
        if not self.settings.revisit_enabled:
            return math.inf
        if self._revisit_queue:
            return 0.0
        due = next_revisit_at(self.repo, self.frontier.paused_topics, self.listings)
        if due is None:
            return math.inf
        self._next_revisit_check = min(self._next_revisit_check, due)  # rows changed by other writers
        return max(0.0, due - self._wall())

    def revisit_soon(self) -> None:
        """Pages were made due by another writer (`revisits.mark_due`): look for them before the next
        expected due time."""
        self._next_revisit_check = -math.inf
        self._wake.set()

    def allows(self, url: str) -> bool:
        """Whether the `allowed_hosts` setting lets the crawl follow `url` (every URL when it is empty)."""
        return self._allowed is None or self._allowed(url)

    def stop(self) -> None:
        """Finish in-flight fetches, store them, persist the frontier and return from `run`."""
        self._stopping = True
        self._reason = self._reason or "stopped"
        self._wake.set()

    def abandon_in_flight(self, topics: Collection[str | None] | None = None) -> int:
        """Cancel the requests in flight (of `topics`; every one when None) instead of waiting for them: a
        slow or hostile server cannot hold up a stop. Their links are queued again as they were (a revisit
        stays due), so nothing is lost, and fetched again unless the run stops or their topics are paused
        (`frontier.set_paused_topics`); returns how many were cancelled."""
        scopes = self._fetches_of(topics)
        for scope in scopes:
            scope.cancel()
        return len(scopes)

    def in_flight_of(self, topics: Collection[str | None] | None = None) -> int:
        """How many requests are in flight (of `topics`; all when None)."""
        return len(self._fetches_of(topics))

    def _fetches_of(self, topics: Collection[str | None] | None) -> list[trio.CancelScope]:
        return [scope for entry, scope in self._fetching.values() if topics is None or entry.topic in topics]

    async def aclose(self) -> None:
        if self._owns_fetcher:
            await self.fetcher.aclose()

    async def run(self, max_pages: int | None = None) -> CrawlStats:
        """Crawl until the repository holds `max_pages` documents of this node's own crawl (None: no
        limit; peers' pooled results do not count), the frontier is exhausted, or `stop()` is called;
        returns the final statistics."""
        self._started = self._clock()
        self._before_run = (self._counters.pages, self._counters.fetches)
        self._stopping = False
        self._reason = ""
        self._disk_full = False
        send, receive = trio.open_memory_channel[tuple[FrontierEntry, Any]](
            max(1, self.settings.write_batch_size)
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._process_loop, receive)
            stats_scope = trio.CancelScope()
            nursery.start_soon(self._stats_loop, stats_scope)
            try:
                async with send:
                    await self._dispatch_loop(send, max_pages)
            finally:
                stats_scope.cancel()
        if not self._disk_full:
            try:
                with self.repo.transaction():
                    self.frontier.persist(self.repo)
            except RepositoryFull as exc:
                self._note_full_disk(exc)
        if self._disk_full:
            self._reload_after_full_disk()
        self.stats = self._snapshot(finished=True)
        self._emit(self.stats)
        return self.stats

    # -- dispatching --------------------------------------------------------------------------------------
    def _stored_total(self) -> int:
        return self._total_at_start + self._counters.pages - self._counters.gone

    async def _dispatch_loop(self, send: trio.MemorySendChannel, max_pages: int | None) -> None:
        limiter = trio.Semaphore(self.settings.concurrent_requests)
        # In lockstep the best entry is served whatever its host's politeness says: the fetch itself waits
        # in `Politeness.slot` for the host's gap or back-off, so delays slow the crawl but never reorder it.
        ready_at = _always_ready if self.lockstep else self.politeness.ready_at
        async with trio.open_nursery() as fetches:
            while True:
                if self._stopping:
                    break
                self._release_deferred()
                self._queue_due_revisits()
                full = max_pages is not None and self._stored_total() >= max_pages
                if full and not self._revisit_queue and not self._revisiting:
                    self._reason = "max_pages"
                    break
                if self._active_bytes > self.settings.scraper_slot_max_active_size:
                    await self._sleep_until_woken(math.inf)  # processing frees them, then wakes this
                    continue
                growing = max_pages is None or self._stored_total() + self._new_pending() < max_pages
                if not growing and not self._revisit_queue:
                    await self._sleep_until_woken(math.inf)
                    continue
                if self.lockstep and self._pending:
                    await self._sleep_until_woken(math.inf)  # the last page's links are not queued yet
                    continue
                await limiter.acquire()
                now = self._clock()
                entry = self._pop_revisit(ready_at, now)
                if entry is None and growing:
                    entry = self.frontier.pop(ready_at, now)
                if entry is None:
                    limiter.release()
                    if self._pending == 0 and not self._deferred and not self._revisit_queue:
                        dry = self._dry_reason(ready_at)
                        if dry and self._policy_refills():
                            continue
                        if dry:
                            self._reason = dry
                            break
                    await self._sleep_until_woken(self._next_wake(ready_at))
                    continue
                self._pending += 1
                self._in_flight += 1
                fetches.start_soon(self._fetch_one, entry, send, limiter)

    def _dry_reason(self, ready_at: ReadyAt) -> str:
        """Why no queued entry can ever be served, with nothing in flight; "" while one can."""
        if len(self.frontier) == 0:
            return "exhausted"
        if self.frontier.servable_size() == 0:
            return "paused"  # what is left belongs to paused topics
        if self.frontier.next_ready_at(self._unless_bad(ready_at)) == math.inf:
            return "blocked"  # every queued host is bad (its links wait for its next try) or capped
        return ""

    def _is_bad(self, host: str) -> bool:
        return str(self.politeness.state(host)) == "bad"  # str: test politeness doubles answer strings

    def _unless_bad(self, ready_at: ReadyAt) -> ReadyAt:
        """`ready_at` with bad hosts never ready: a run does not wait for a bad host's next try."""
        return lambda host: math.inf if self._is_bad(host) else ready_at(host)

    def waiting_hosts(self) -> dict[str, Any]:
        """The bad hosts whose queued links wait for their next try: how many hosts and links, and the
        seconds until the first is tried (None: no host waits)."""
        waits = {
            host: queued
            for host, queued in self.frontier.queued_per_host().items()
            if self._is_bad(host) and not self.politeness.given_up(host)
        }
        first = min((self.politeness.ready_at(host) for host in waits), default=None)
        return {
            "hosts": len(waits),
            "links": sum(waits.values()),
            "next_try_in_s": None if first is None else max(0.0, first - self._clock()),
        }

    def next_ready_in(self) -> float:
        """Seconds until a queued host may be contacted (a bad one: its next try); inf when none will."""
        return max(0.0, self.frontier.next_ready_at(self.politeness.ready_at) - self._clock())

    def _policy_refills(self) -> bool:
        """Whether the policy queued something when told the crawl has nothing left to serve (its optional
        `frontier_dry()`, see `FocusPolicy`)."""
        frontier_dry = getattr(self.policy, "frontier_dry", None)
        return bool(frontier_dry()) if frontier_dry is not None else False

    def _new_pending(self) -> int:
        """Dispatched fetches that may store a new page (revisits replace theirs)."""
        return self._pending - len(self._revisiting)

    def _queue_due_revisits(self) -> None:
        """Take the stored pages now due, once the last ones taken are done (`crawler.revisits`)."""
        if not self.settings.revisit_enabled or self._revisit_queue or self._revisiting:
            return
        now = self._wall()
        if now < self._next_revisit_check:
            return
        paused = self.frontier.paused_topics
        self._revisit_queue = due_revisits(self.repo, now, REVISIT_BATCH, paused)
        self._revisit_queue.extend(due_sitemaps(self.repo, now, REVISIT_BATCH, paused, self.listings))
        if not self._revisit_queue:
            due = next_revisit_at(self.repo, paused, self.listings)
            self._next_revisit_check = math.inf if due is None else due

    def _pop_revisit(self, ready_at: Callable[[str], float], now: float) -> FrontierEntry | None:
        """The longest overdue page whose host may be contacted now, its revisit marked in flight. Pages of
        topics paused since they were taken leave the queue: they are due still when the topic resumes."""
        paused = self.frontier.paused_topics
        self._revisit_queue = [r for r in self._revisit_queue if r.entry.topic not in paused]
        for index, revisit in enumerate(self._revisit_queue):
            host = revisit.entry.host
            # a bad host's fetch fails at once (host_bad), and the page is tried again later
            if ready_at(host) <= now or self._is_bad(host):
                del self._revisit_queue[index]
                self._revisiting[revisit.entry.url] = revisit
                return revisit.entry
        return None

    def _next_wake(self, ready_at: Callable[[str], float]) -> float:
        wake = self.frontier.next_ready_at(ready_at)
        revisits = (ready_at(revisit.entry.host) for revisit in self._revisit_queue)
        return min([wake, *(at for at, _ in self._deferred), *revisits])

    async def _sleep_until_woken(self, until: float) -> None:
        timeout = max(0.0, until - self._clock()) if until != math.inf else 1.0
        with trio.move_on_after(min(timeout, 1.0)):
            await self._wake.wait()
        self._wake = trio.Event()

    def _release_deferred(self) -> None:
        if not self._deferred:
            return
        now = self._clock()
        due = [item for item in self._deferred if item[0] <= now]
        for item in due:
            self._deferred.remove(item)
            self.frontier.push_back(item[1])

    async def _fetch_one(
        self, entry: FrontierEntry, send: trio.MemorySendChannel, limiter: trio.Semaphore
    ) -> None:
        # The request slot is held until processing accepts the result: when parsing and storing fall
        # behind (a busy CPU), fetching waits instead of piling fetched bodies up in memory.
        revisit = self._revisiting.get(entry.url)
        scope = trio.CancelScope()
        self._fetching[id(entry)] = (entry, scope)
        try:
            try:
                with scope:
                    if revisit is None:
                        result = await self.fetcher.fetch(entry.url)
                    else:
                        result = await self.fetcher.fetch(entry.url, validators=revisit.validators())
            finally:
                del self._fetching[id(entry)]
                if revisit is None:
                    self.frontier.release(entry)
                self._in_flight -= 1
                self._wake.set()
            if scope.cancelled_caught:
                self._abandoned(entry)
                return
            self._active_bytes += len(result.body)
            await send.send((entry, result))
        finally:
            limiter.release()

    def _abandoned(self, entry: FrontierEntry) -> None:
        """A fetch `abandon_in_flight` cancelled: its link is queued again (a revisit is due still)."""
        if self._revisiting.pop(entry.url, None) is None:
            self.frontier.push_back(entry)
        else:
            self._next_revisit_check = -math.inf  # it is taken again with the pages due
        self._pending -= 1

    # -- processing ---------------------------------------------------------------------------------------
    async def _process_loop(self, receive: trio.MemoryReceiveChannel) -> None:
        async with receive:
            while True:
                try:
                    first = await receive.receive()
                except trio.EndOfChannel:
                    return
                batch = [first]
                while len(batch) < self.settings.write_batch_size:
                    try:
                        batch.append(receive.receive_nowait())
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                try:
                    await self._process_batch(batch)
                finally:  # before the dispatch loop runs again: _process_batch woke it, with no await since
                    self._active_bytes -= sum(len(result.body) for _, result in batch)

    async def _process_batch(self, batch: list[tuple[FrontierEntry, Any]]) -> None:
        if self._disk_full:  # fetched before the run could stop: queued (or due) in the repository still
            for entry, _ in batch:
                self._revisiting.pop(entry.url, None)
            self._pending -= len(batch)
            self._wake.set()
            return
        fetched = [
            (entry, result) for entry, result in batch if result.error is None and result.status != 304
        ]
        if self.settings.parse_in_thread and fetched:
            analysed = await trio.to_thread.run_sync(self._analyse, fetched)
        else:
            analysed = self._analyse(fetched)
        pages: list[StoredPage] = []
        revisited: list[_Revisited] = []
        sitemaps: list[_SitemapRead] = []
        hosts: dict[str, str | None] = {}
        by_url = {id(entry): item for item, (entry, _) in zip(analysed, fetched, strict=True)}
        for entry, result in batch:
            self._counters.fetches += 1
            host = entry.host
            revisit = self._revisiting.get(entry.url)  # in flight until written: else it is due still
            if revisit is not None:
                analysed_page = by_url.get(id(entry))
                if revisit.listing:
                    sitemaps.append(self._reread_sitemap(revisit, result, analysed_page))
                else:
                    revisited.append(self._revisited(revisit, result, analysed_page))
                if result.error is not None:
                    hosts[host] = result.error
                else:
                    hosts.setdefault(host, None)
                continue
            if result.error is not None:
                self._fail(entry, result)
                hosts[host] = result.error
                continue
            crawled, verdict = by_url[id(entry)]
            if crawled.sitemap is not None:
                sitemaps.append(self._read_sitemap(crawled))
                hosts.setdefault(host, None)
                continue
            if crawled.parsed.error is not None and crawled.parsed.error != "empty":
                self._counters.errors["unparsable"] += 1
                self.frontier.fail(entry, "unparsable", release=False)
                continue
            pages.append(self._integrate(crawled, verdict))
            hosts.setdefault(host, None)
        host_rows = [(h, self.politeness.record_of(h), err) for h, err in hosts.items()]
        changes = self.frontier.take_changes()
        stats_row = self._stats_row_if_due()
        try:
            relisted = await trio.to_thread.run_sync(
                self._write, pages, revisited, sitemaps, changes, host_rows, stats_row
            )
        except RepositoryFull as exc:
            self._note_full_disk(exc)
        else:
            self._counters.pages += len(pages)
            self._counters.relisted += self.frontier.retry_failed(relisted)
            self._count_revisits(revisited)
            if sitemaps:  # they fall due again, and pages their lastmod names may be due now
                self._next_revisit_check = -math.inf
        for entry, _ in batch:
            self._revisiting.pop(entry.url, None)
        self._pending -= len(batch)
        now = self._clock()
        self._rate_marks.append((now, self._counters.pages))
        self._wake.set()

    def _note_full_disk(self, exc: RepositoryFull) -> None:
        """Stop the run: the repository has no room (its last transaction was rolled back)."""
        log.warning("%s; the crawl stops, nothing stored is lost", exc)
        self._disk_full = True
        self._reason = "disk_full"
        self._stopping = True
        self._wake.set()

    def _analyse(self, fetched: list[tuple[FrontierEntry, Any]]) -> list[tuple[CrawledPage, PageVerdict]]:
        """CPU work of a batch (parsing, hashing, classifying): safe to run in a worker thread. Sitemaps are
        not classified: nothing in them speaks for a topic."""
        crawled = []
        for entry, result in fetched:
            sitemap = self._as_sitemap(result)
            if sitemap is not None:  # its fingerprint is of its bytes: unchanged bytes need no reading
                parsed = ParsedPage(url=result.final_url, base_url=result.final_url)
                prints = (hashlib.blake2b(result.body, digest_size=16).hexdigest(), 0)
            else:
                parsed = parse_page(result.body, result.final_url, result.content_type, result.headers)
                prints = (fingerprint(parsed.title + "\n" + parsed.text), simhash(parsed.text))
            crawled.append(
                CrawledPage(
                    entry=entry,
                    url=result.final_url,
                    status=result.status,
                    content_type=result.content_type,
                    headers=result.headers,
                    parsed=parsed,
                    fingerprint=prints[0],
                    simhash=prints[1],
                    size=len(result.body),
                    elapsed=result.elapsed,
                    redirects=tuple(result.redirects),
                    sitemap=sitemap,
                )
            )
        pages = [page for page in crawled if page.sitemap is None]
        verdicts = iter(self.policy.score_pages(pages) if pages else [])
        crawled = [self._with_entry_verdicts(page) for page in crawled]
        return [(page, NOT_JUDGED if page.sitemap else next(verdicts)) for page in crawled]

    def _with_entry_verdicts(self, page: CrawledPage) -> CrawledPage:
        """A feed with its entries judged by their words, when the policy judges them (`FocusPolicy`)."""
        score_entries = getattr(self.policy, "score_entries", None)
        feed = page.sitemap
        if score_entries is None or feed is None or feed.kind != "feed" or feed.error is not None:
            return page
        texts = [item.text for item in feed.entries]
        if not any(texts):
            return page
        return replace(page, entry_verdicts=tuple(score_entries(page, texts)))

    def _as_sitemap(self, result: Any) -> Sitemap | None:
        """The response read as a feed or a sitemap, if it may be one; None for a page. XML that is
        neither is a page only where `allowed_mime_types` admits it (else it fails as unparsable)."""
        s = self.settings
        if s.feeds_enabled and is_feed(result.content_type, result.body):
            listed = parse_feed(result.body, result.final_url)
        elif s.sitemaps_enabled and may_be_sitemap(result.content_type, urlsplit(result.final_url).path):
            listed = parse_sitemap(result.body, result.final_url)
        else:
            return None
        if listed.error is not None and result.content_type in s.allowed_mime_types:
            return None
        return listed

    def _fail(self, entry: FrontierEntry, result: Any) -> None:
        kind = result.error
        if self._waits_for_its_host(entry, kind):
            if kind not in UNASKED_KINDS:  # a request failed; a link that only waits is no error
                self._counters.errors[kind] += 1
            return
        self._counters.errors[kind] += 1
        if kind == "robots_deferred" and entry.retries < ROBOTS_DEFER_TRIES:
            retry_at = getattr(result, "retry_at", None) or self._clock() + 1.0
            self._deferred.append((retry_at, replace(entry, retries=entry.retries + 1)))
            return
        if kind == "local_resources" and entry.retries < LOCAL_RESOURCES_TRIES:
            retry_at = self._clock() + LOCAL_RESOURCES_WAIT
            self._deferred.append((retry_at, replace(entry, retries=entry.retries + 1)))
            return
        self.frontier.fail(entry, kind, release=False)
        if self.politeness.given_up(entry.host):
            self.frontier.drop_host(entry.host, "host_bad")

    def _waits_for_its_host(self, entry: FrontierEntry, kind: str) -> bool:
        """Queue again a URL that failed because its host is bad, to wait for the host's next try: a host
        down for an hour, or the node's network down for a minute, loses no link. A URL that keeps
        turning its host bad is given up after HOST_FAILURE_TRIES tries."""
        if not self._is_bad(entry.host) or self.politeness.given_up(entry.host):
            return False
        if kind in UNASKED_KINDS:  # no request for the page itself: it costs no try
            self.frontier.push_back(entry)
            return True
        if kind in HOST_FAILURE_KINDS and entry.retries < HOST_FAILURE_TRIES:
            # behind the links that did not fail (priorities are not negative): the host's next try asks
            # another of them, so a long outage does not spend one URL's tries, and a page that hangs does
            # not stand in front of pages that answer
            again = retried(entry)
            self.frontier.push_back(replace(again, priority=min(entry.priority, 0.0) - again.retries))
            return True
        return False

    def _integrate(self, page: CrawledPage, verdict: PageVerdict) -> StoredPage:
        """Deduplicate, queue the links, and build one page's rows (on the loop: it touches the frontier)."""
        doc_id = self._next_id
        self._next_id += 1
        self.frontier.complete(page.entry, release=False)
        dedup = self._deduplicate(doc_id, page)
        if dedup.is_duplicate:
            self._counters.duplicates += 1
        elif dedup.near_duplicate_of is not None:
            self._counters.near_duplicates += 1
        if verdict.accepted and not dedup.is_duplicate:
            self._queue_sitemaps(page, verdict)
        return StoredPage(
            self._record(page, verdict, dedup, self.settings.revisit_after, None),
            self._link_rows(page, verdict, dedup),
            doc_id=doc_id,
        )

    def _deduplicate(self, doc_id: int, page: CrawledPage) -> DedupVerdict:
        dedup = self.dedup.check(page.fingerprint, page.simhash)
        if not dedup.is_duplicate:
            self.dedup.add(doc_id, page.fingerprint, page.simhash)
        self._counters.bytes += page.size
        return dedup

    def _link_rows(
        self, page: CrawledPage, verdict: PageVerdict, dedup: DedupVerdict
    ) -> tuple[LinkRecord, ...]:
        """The page's link rows; its redirect hops count as seen, and an original's links are followed."""
        for hop in page.redirects:
            self.frontier.mark_seen(hop, host_of(hop))
        links: list[LinkRecord] = [LinkRecord(hop, host_of(hop), kind="redirect") for hop in page.redirects]
        if not dedup.is_duplicate:
            links.extend(self._follow(page, verdict))
        return tuple(links)

    def _record(
        self,
        page: CrawledPage,
        verdict: PageVerdict,
        dedup: DedupVerdict,
        wait: float,
        interval: float | None,
    ) -> DocumentRecord:
        """The page's row, falling due for a revisit `wait` seconds from now."""
        entry, parsed = page.entry, page.parsed
        indexable = not dedup.is_duplicate and not parsed.noindex
        fetched_at = self._wall()
        self._next_revisit_check = min(self._next_revisit_check, fetched_at + wait)
        return DocumentRecord(
            url=entry.url,
            final_url=page.url,
            host=entry.host,
            status=page.status,
            content_type=page.content_type,
            title=parsed.title,
            text=parsed.text if indexable else "",
            fingerprint=page.fingerprint,
            simhash=page.simhash,
            fetched_at=fetched_at,
            depth=entry.depth,
            bytes=page.size,
            elapsed=page.elapsed,
            lang=parsed.lang,
            canonical=parsed.canonical,
            topic=verdict.topic,
            confidence=verdict.confidence,
            accepted=verdict.accepted,
            duplicate_of=dedup.duplicate_of,
            near_duplicate_of=dedup.near_duplicate_of,
            redirects=page.redirects,
            etag=page.headers.get("etag"),
            last_modified=page.headers.get("last-modified"),
            revisit_at=fetched_at + wait,
            revisit_interval=interval,
        )

    def _revisited(
        self, revisit: Revisit, result: Any, analysed: tuple[CrawledPage, PageVerdict] | None
    ) -> _Revisited:
        """What a revisit found: the page gone, changed (its new rows), or as stored (or unknown: a failed
        fetch keeps the stored version and tries again sooner)."""
        after = self.settings.revisit_after
        if result.error is not None:
            self._counters.errors[result.error] += 1
            if result.status in GONE_STATUSES:
                self.dedup.discard(revisit.fingerprint)
                return _Revisited("gone", revisit.doc_id)
            return self._checked(revisit, retry_interval(revisit.interval, after), revisit.interval)
        if analysed is not None and analysed[0].parsed.error not in (None, "empty"):
            self._counters.errors["unparsable"] += 1
            return self._checked(revisit, retry_interval(revisit.interval, after), revisit.interval)
        if analysed is None or analysed[0].fingerprint == revisit.fingerprint:  # None: a 304
            interval = next_interval(revisit.interval, False, after)
            return self._checked(revisit, interval, interval, result.headers)
        page, verdict = analysed
        self.dedup.discard(revisit.fingerprint)
        dedup = self._deduplicate(revisit.doc_id, page)
        interval = next_interval(revisit.interval, True, after)
        record = self._record(page, verdict, dedup, interval, interval)
        return _Revisited(
            "changed", revisit.doc_id, StoredPage(record, self._link_rows(page, verdict, dedup))
        )

    def _checked(
        self, revisit: Revisit, wait: float, interval: float | None, headers: dict[str, str] | None = None
    ) -> _Revisited:
        """`headers`: of a response that found the page as stored (None: the revisit could not tell)."""
        now = self._wall()
        return _Revisited(
            "checked",
            revisit.doc_id,
            due_at=now + wait,
            interval=interval,
            etag=(headers or {}).get("etag"),
            last_modified=(headers or {}).get("last-modified"),
            checked_at=None if headers is None else now,
        )

    def _count_revisits(self, revisited: list[_Revisited]) -> None:
        for outcome in revisited:
            self._counters.revisits += 1
            self._counters.changed += outcome.kind == "changed"
            self._counters.gone += outcome.kind == "gone"

    def _as_configured(self, link: Link) -> Link | None:
        """`link` normalised under this crawl's URL settings: the parser normalises with the defaults, so
        `url_sort_query` (and other URL lengths) would otherwise reach only the fetch, after the frontier
        had queued `?b=1&a=2` beside `?a=2&b=1`; it keeps every parameter, and `url_strip_params` drops
        them here. None for a URL these settings refuse."""
        if self._default_url_settings:
            url = strip_params(link.url, self.settings.url_strip_params)
        else:
            url = normalize_url(link.url, settings=self.settings)
        if url is None:
            return None
        return link if url == link.url else replace(link, url=url)

    def _follow(self, page: CrawledPage, verdict: PageVerdict) -> list[LinkRecord]:
        """Link rows for the repository, and frontier entries for the links worth following."""
        entry, parsed = page.entry, page.parsed
        records: list[LinkRecord] = []
        candidates: list[tuple[Link, str, int]] = []  # (link, its host, depth)
        for found in parsed.links:
            link = self._as_configured(found)
            if link is None:
                continue
            host = host_of(link.url)
            records.append(
                LinkRecord(
                    link.url,
                    host,
                    link.anchor_text,
                    link.dom_path,
                    _encode_context(link.context),
                    link.nofollow,
                )
            )
            candidates.append((link, host, entry.depth + 1))
        if parsed.meta_refresh and (parsed.refresh_delay or 0.0) <= META_REFRESH_MAX_DELAY:
            refresh = self._as_configured(Link(parsed.meta_refresh, "", "meta", 0, 0))
            if refresh is not None:
                records.append(LinkRecord(refresh.url, host_of(refresh.url), kind="refresh"))
                candidates.append((refresh, records[-1].target_host, entry.depth))
        if parsed.canonical and parsed.canonical not in (entry.url, page.url):
            canonical = self._as_configured(Link(parsed.canonical, "", "canonical", 0, 0))
            if canonical is not None:
                records.append(LinkRecord(canonical.url, host_of(canonical.url), kind="canonical"))
                candidates.append((canonical, records[-1].target_host, entry.depth))
        if self.settings.feeds_enabled:
            for url in parsed.feeds:
                feed = self._as_configured(Link(url, "", "feed", 0, 0))
                if feed is not None:
                    records.append(LinkRecord(feed.url, host_of(feed.url), kind="feed"))
                    candidates.append((feed, records[-1].target_host, entry.depth + 1))
        if parsed.nofollow:  # <meta name=robots content=nofollow>: links are kept for analysis, not followed
            return records
        self._enqueue(page, verdict, candidates)
        return records

    def _enqueue(
        self, page: CrawledPage, verdict: PageVerdict, candidates: Iterable[tuple[Link, str, int]]
    ) -> int:
        """Queue the (link, its host, depth) candidates worth following from `page`; returns how many were."""
        entry = page.entry
        tunnel = 0 if verdict.accepted else entry.tunnel + 1
        origin = entry.origin or entry.url
        link_topic = getattr(self.policy, "link_topic", None)  # optional: the queue a page's links join
        topic = link_topic(page, verdict) if link_topic is not None else verdict.topic
        queued = 0
        for link, host, depth in candidates:
            if self.frontier.seen(link.url) or looks_like_trap(link.url, self.settings):
                continue
            if not self.allows(link.url):
                continue
            priority = self.policy.link_priority(page, link, verdict)
            if priority is None:
                continue
            queued += self.frontier.add(
                FrontierEntry(
                    url=link.url,
                    host=host,
                    priority=float(priority),
                    depth=depth,
                    topic=topic,
                    tunnel=tunnel,
                    source=page.url,
                    origin=origin,
                )
            )
        return queued

    # -- sitemaps (crawler.sitemaps) ---------------------------------------------------------------------
    def _queue_sitemaps(self, page: CrawledPage, verdict: PageVerdict) -> None:
        """An accepted page's host has shown it holds a topic: queue the sitemaps its robots.txt names, as
        links of the page (once per host)."""
        host = page.entry.host
        if not self.settings.sitemaps_enabled or host in self._sitemap_hosts:
            return
        robots = getattr(self.fetcher, "robots", None)
        declared = robots.sitemaps(host) if robots is not None else ()
        if declared is None:  # robots.txt not known (expired): the host's next accepted page asks again
            return
        self._sitemap_hosts.add(host)
        links = (Link(url, "", "sitemap", 0, 0) for url in declared)
        self._enqueue(page, verdict, ((link, host_of(link.url), page.depth + 1) for link in links))

    def _read_sitemap(self, page: CrawledPage, revisit: Revisit | None = None) -> _SitemapRead:
        """Queue what a fetched sitemap or feed lists that the crawl has not seen: an index's sitemaps in
        the index's place (same priority and path), a urlset's pages or a feed's entries as links tunnelled
        through it (a feed entry's words as its anchor text). Nothing is stored for the list itself but
        when to read it again. `revisit`: the due reading that fetched it (None: popped from the
        frontier)."""
        sitemap, entry = page.sitemap, page.entry
        assert sitemap is not None
        first, after = revisit is None, self.settings.revisit_after
        feed = sitemap.kind == "feed"
        listing = "feed" if feed else "sitemap"  # a urlset and an index are both sitemaps
        self._counters.bytes += page.size
        if sitemap.error is not None:
            self._counters.errors["unparsable"] += 1
            if first:
                self.frontier.fail(entry, "unparsable", release=False)
            interval = None if first else revisit.interval
            return _SitemapRead(entry, None, retry_interval(interval, after), interval, kind=listing)
        if first:
            self.frontier.complete(entry, release=False)
        interval = None if first else next_interval(revisit.interval, True, after)
        wait = after if interval is None else interval
        validators = (page.headers.get("etag"), page.headers.get("last-modified"), page.fingerprint)
        listed = [(item, host_of(item.url)) for item in sitemap.entries]
        if not feed:  # a feed may link to any host's pages, as a page may
            hosts = listed_hosts(page.url, entry.source)
            listed = [(item, host) for item, host in listed if host in hosts]
        if sitemap.kind == "index":
            self._counters.sitemaps += 1
            for item, host in listed:
                if not self.frontier.seen(item.url) and self.allows(item.url):
                    self.frontier.add(replace(entry, url=item.url, host=host, retries=0))
            return _SitemapRead(entry, len(listed), wait, interval, validators=validators)
        unjudged = PageVerdict(entry.topic, 0.0, False)  # rejected: tunnelled, in the queue it came from
        judged = dict(zip((item.url for item in sitemap.entries), page.entry_verdicts, strict=False))
        queued, tunnelled, raised = 0, [], {}
        for item, host in listed:  # an entry whose words the focus accepts: as a link of an accepted page
            verdict, link = judged.get(item.url), _listed_link(item, listing)
            if verdict is None or not verdict.accepted:
                tunnelled.append((link, host, entry.depth + 1))
            elif self.frontier.seen(item.url):
                raised[item.url] = self.policy.link_priority(page, link, verdict)
            else:
                queued += self._enqueue(page, verdict, [(link, host, entry.depth + 1)])
        queued += self._enqueue(page, unjudged, tunnelled)
        self._raise_queued(raised)
        if feed:
            self._counters.feeds += 1
            self._counters.feed_urls += queued
        else:
            self._counters.sitemaps += 1
            self._counters.sitemap_urls += queued
        lastmods = tuple((item.url, item.lastmod) for item, _ in listed if item.lastmod is not None)
        return _SitemapRead(entry, len(listed), wait, interval, lastmods, validators, listing)

    def _raise_queued(self, priorities: dict[str, float | None]) -> int:
        """Raise queued entries to the priorities a feed's words gave them (never lower one): a page linked
        from a rejected page waits tunnelled, and its feed entry may say it is on topic."""
        wanted = {url: p for url, p in priorities.items() if p is not None}
        if not wanted:
            return 0
        return self.frontier.rescore(
            lambda entries: {
                e.url: wanted[e.url] for e in entries if wanted.get(e.url, -math.inf) > e.priority
            }
        )

    def _reread_sitemap(
        self, revisit: Revisit, result: Any, analysed: tuple[CrawledPage, PageVerdict] | None
    ) -> _SitemapRead:
        """A due sitemap or feed read again: unchanged (304, or the same bytes) it waits longer, as an
        unchanged page does; one that failed, or is no list of links now, is tried again sooner."""
        entry, after, kind = revisit.entry, self.settings.revisit_after, revisit.listing or "sitemap"
        interval = revisit.interval
        retry = _SitemapRead(entry, None, retry_interval(interval, after), interval, kind=kind)
        if result.error is not None:
            self._counters.errors[result.error] += 1
            return retry
        page = analysed[0] if analysed is not None else None
        if result.status == 304 or (page is not None and page.fingerprint == revisit.fingerprint):
            if kind == "feed":
                self._counters.feeds_unchanged += 1
            else:
                self._counters.sitemaps_unchanged += 1
            interval = next_interval(interval, False, after)
            headers = result.headers
            validators = (headers.get("etag"), headers.get("last-modified"), None)
            return _SitemapRead(entry, None, interval, interval, validators=validators, kind=kind)
        if page is None or page.sitemap is None:
            self._counters.errors["unparsable"] += 1
            return retry
        return self._read_sitemap(page, revisit)

    def _write(
        self,
        pages: list[StoredPage],
        revisited: list[_Revisited],
        sitemaps: list[_SitemapRead],
        changes: dict,
        hosts: list[tuple[str, HostRecord, str | None]],
        stats_row: dict[str, Any] | None,
    ) -> list[FrontierEntry]:
        """One transaction: documents, links, revisits, sitemaps read, host states, frontier changes (in a
        worker thread). Returns the failed URLs the sitemaps read date after their failure, to queue again."""
        now = self._wall()
        with self.repo.transaction():
            for read in sitemaps:
                self.repo.record_sitemap(
                    read.entry, now, now + read.wait, read.urls, read.interval, read.validators, read.kind
                )
                mark_changed(self.repo, now, read.lastmods)
            for page in pages:
                self.repo.insert_page(page)
            for outcome in revisited:
                if outcome.kind == "gone":
                    self.repo.remove_document(outcome.doc_id, now)
                elif outcome.page is not None:
                    self.repo.replace_page(outcome.doc_id, outcome.page)
                else:
                    self.repo.record_revisit(
                        outcome.doc_id,
                        outcome.due_at,
                        outcome.interval,
                        outcome.etag,
                        outcome.last_modified,
                        outcome.checked_at,
                    )
            for host, record, error in hosts:
                retry_in = record.retry_in
                self.repo.record_host(
                    host,
                    str(record.state),
                    now,
                    failures=record.failures,
                    bad_spells=record.bad_spells,
                    retry_at=None if retry_in is None or retry_in == math.inf else now + retry_in,
                    error=error,
                )
            Frontier.write_changes(self.repo, changes, now)
            if stats_row is not None:
                self.repo.record_stats(stats_row)
            lastmods = [lastmod for read in sitemaps for lastmod in read.lastmods]
            return relisted_failures(self.repo, lastmods) if lastmods else []

    # -- statistics ---------------------------------------------------------------------------------------
    def _snapshot(self, finished: bool = False) -> CrawlStats:
        now = self._clock()
        elapsed = max(now - self._started, 1e-9)
        c = self._counters
        pages, fetches = c.pages - self._before_run[0], c.fetches - self._before_run[1]
        recent = 0.0
        marks = [m for m in self._rate_marks if now - m[0] <= RATE_WINDOW]
        self._rate_marks = marks
        if len(marks) >= 2 and marks[-1][0] > marks[0][0]:
            recent = (marks[-1][1] - marks[0][1]) / (now - marks[0][0])
        elif pages:
            recent = pages / elapsed
        return CrawlStats(
            pages=pages,
            total_pages=self._stored_total(),
            fetches=fetches,
            errors=sum(c.errors.values()),
            errors_by_kind=dict(sorted(c.errors.items())),
            duplicates=c.duplicates,
            near_duplicates=c.near_duplicates,
            revisits=c.revisits,
            changed=c.changed,
            gone=c.gone,
            sitemaps=c.sitemaps,
            sitemap_urls=c.sitemap_urls,
            sitemaps_unchanged=c.sitemaps_unchanged,
            feeds=c.feeds,
            feed_urls=c.feed_urls,
            feeds_unchanged=c.feeds_unchanged,
            relisted=c.relisted,
            bytes=c.bytes,
            frontier_size=self.queued,
            in_flight=self._in_flight,
            elapsed=elapsed,
            pages_per_s=pages / elapsed,
            recent_pages_per_s=recent,
            finished=finished,
            reason=self._reason if finished else "",
        )

    def _stats_row_if_due(self) -> dict[str, Any] | None:
        now = self._clock()
        if now - self._last_stats_row < max(self.settings.stats_interval, 5.0):
            return None
        self._last_stats_row = now
        s = self._snapshot()
        return {
            "at": time.time(),
            "pages": s.total_pages,
            "pages_per_s": s.recent_pages_per_s,
            "bytes": s.bytes,
            "frontier_size": s.frontier_size,
            "in_flight": s.in_flight,
            "duplicates": s.duplicates,
            "errors": s.errors,
            "errors_by_kind": s.errors_by_kind,
        }

    async def _stats_loop(self, scope: trio.CancelScope) -> None:
        with scope:
            while True:
                await trio.sleep(self.settings.stats_interval)
                self.stats = self._snapshot()
                self._emit(self.stats)

    def _emit(self, stats: CrawlStats) -> None:
        for callback in self._listeners:
            callback(stats)
