"""The crawl engine: fetch, parse, deduplicate, classify, store, index and follow links, under trio.

The BINGO! pipeline (thesis 2.3.3) as three stages:

1. a dispatcher pops the frontier whenever a fetch slot is free and the entry's host may be contacted
   (`Politeness.ready_at`), and starts at most `concurrent_requests` fetches, of which hosts that never
   answered (new or unreachable) hold at most `unanswered_hosts_share`;
2. fetched results queue up; one processor takes whatever has arrived (up to `write_batch_size`) and parses
   it, fingerprints it and runs the focus policy's classifier in a worker thread (`parse_in_thread`,
   `crawler.analysis`);
3. back on the loop it deduplicates, turns links into frontier entries with the policy's priorities
   (`crawler.link_following`), and commits documents, links, host states and frontier changes in one
   transaction, so a URL is marked done exactly when its document is stored: after kill -9 the crawl
   resumes with nothing lost and nothing completed fetched again. When the disk has no room for a batch,
   its transaction rolls back and the run stops (reason "disk_full"); the crawler reloads its frontier and
   duplicate index from the repository, so the batch's pages, still queued there, are fetched again when
   the crawl resumes.

Stored pages that fall due (`crawler.revisits`, queued by `crawler.revisit_queue`) are fetched again before
new links: keeping the repository true comes before growing it, and a node at its `max_pages` still
revisits. A revisit that changed a page replaces its row in the batch's transaction. Sitemaps
(`crawler.sitemaps`) are read when a host's first page is accepted, feeds (`crawler.feeds`) when a page
names them, and both again when due with the revisits (`crawler.sitemap_following`).

The focus loop plugs in through a `FocusPolicy` (`crawler.policy`), or the `score_page` / `link_priority`
callables: the default accepts every page and gives links breadth-first priorities (1 / depth, thesis 2.7
strategy 1). What a run reports is `crawler.crawl_stats`.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import replace
from typing import Any

import trio

from crawler.analysis import analyse
from crawler.crawl_stats import CrawlCounters, CrawlStats, RunMeter
from crawler.dedup import DedupIndex, DedupVerdict
from crawler.errors import RepositoryFull
from crawler.frontier import Frontier, FrontierEntry, ReadyAt, retried
from crawler.link_following import LinkFollower
from crawler.policy import CrawledPage, FocusPolicy, LinkPriority, PageVerdict, ScorePage, hooks_policy
from crawler.politeness import HOST_FAILURE_KINDS, HostRecord, HostState
from crawler.repository import DocumentRecord, Repository, StoredPage
from crawler.revisit_queue import RevisitOutcome, RevisitQueue
from crawler.revisits import GONE_STATUSES, Revisit, next_interval, relisted_failures, retry_interval
from crawler.settings import CrawlSettings
from crawler.sitemap_following import SitemapFollower, SitemapRead
from crawler.urls import host_of, normalize_url

log = logging.getLogger(__name__)
ROBOTS_DEFER_TRIES = 2  # deferrals (robots.txt answering 5xx/429) before a URL is given up
HOST_FAILURE_TRIES = 3  # tries of a URL whose failure turned its host bad, before the URL is given up
UNASKED_KINDS = frozenset({"host_bad", "robots_deferred"})  # failures with no request for the page itself
LOCAL_RESOURCES_WAIT = 5.0  # seconds before a URL the node had no socket for is tried again
LOCAL_RESOURCES_TRIES = 60  # and how often (5 minutes) before it is given up, its host left unharmed


def _always_ready(host: str) -> float:
    return -math.inf


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
        score_page: ScorePage | None = None,
        link_priority: LinkPriority | None = None,
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
        self.policy = policy if policy is not None else hooks_policy(score_page, link_priority)
        self._clock = clock
        s = self.settings
        self.frontier = Frontier(
            max_size=s.frontier_max_size,
            depth_limit=s.depth_limit,
            host_page_budget=s.host_page_budget,
            max_per_host_in_flight=s.concurrent_requests_per_domain,
        )
        self._links = LinkFollower(s, self.frontier)
        self._unanswered_slots = max(1, int(s.concurrent_requests * s.unanswered_hosts_share))
        self.frontier.load(repo)
        self._restore_bad_hosts()
        self._total_at_start = self._load_documents_state()
        self._counters = CrawlCounters()  # since the crawler was built: a node runs it many times
        self._run_meter = RunMeter(self._counters)
        self._sitemaps = SitemapFollower(s, self.frontier, self._links, self._counters, self.fetcher)
        self._revisits = RevisitQueue(repo, self.frontier, wall_clock, self.listings, s.revisit_enabled)
        self._listeners: list[Callable[[CrawlStats], None]] = []
        self._wake = trio.Event()
        self._stopping = False
        self._pending = 0  # dispatched and not yet committed
        self._in_flight = 0  # fetching now
        self._active_bytes = 0  # bodies fetched and not yet processed (scraper_slot_max_active_size)
        self._deferred: list[tuple[float, FrontierEntry]] = []  # (retry at, entry) after robots_deferred
        self._fetching: dict[int, tuple[FrontierEntry, trio.CancelScope]] = {}  # in flight, by id(entry)
        self._last_stats_row = -math.inf
        self._reason = ""
        self._disk_full = False  # this run had a batch the repository had no room for (RepositoryFull)
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
        self._revisits.clear()

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
        return self._revisits.due_in()

    def revisit_soon(self) -> None:
        """Pages were made due by another writer (`revisits.mark_due`): look for them before the next
        expected due time."""
        self._revisits.look_again()
        self._wake.set()

    def allows(self, url: str) -> bool:
        """Whether the `allowed_hosts` setting lets the crawl follow `url` (every URL when it is empty)."""
        return self._links.allows(url)

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
        self._run_meter.begin(self._clock())
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
                self._revisits.take_due()
                full = max_pages is not None and self._stored_total() >= max_pages
                if full and not self._revisits.waiting and not self._revisits.in_flight:
                    self._reason = "max_pages"
                    break
                if self._active_bytes > self.settings.scraper_slot_max_active_size:
                    await self._sleep_until_woken(math.inf)  # processing frees them, then wakes this
                    continue
                growing = max_pages is None or self._stored_total() + self._new_pending() < max_pages
                if not growing and not self._revisits.waiting:
                    await self._sleep_until_woken(math.inf)
                    continue
                if self.lockstep and self._pending:
                    await self._sleep_until_woken(math.inf)  # the last page's links are not queued yet
                    continue
                await limiter.acquire()
                if self._stopping:  # stopped while every slot was taken: start nothing more
                    limiter.release()
                    break
                now = self._clock()
                ready = self._within_unanswered_share(ready_at)
                entry = self._revisits.pop(ready, now, self._is_bad)
                if entry is None and growing:
                    entry = self.frontier.pop(ready, now)
                if entry is None:
                    limiter.release()
                    if self._pending == 0 and not self._deferred and not self._revisits.waiting:
                        dry = self._dry_reason(ready_at)
                        if dry and self._policy_refills():
                            continue
                        if dry:
                            self._reason = dry
                            break
                    await self._sleep_until_woken(self._next_wake(ready))
                    continue
                self._pending += 1
                self._in_flight += 1
                scope = trio.CancelScope()
                self._fetching[id(entry)] = (entry, scope)  # now: the next pop counts it
                fetches.start_soon(self._fetch_one, entry, scope, send, limiter)

    def _within_unanswered_share(self, ready_at: ReadyAt) -> ReadyAt:
        """`ready_at` with hosts that never answered held back while their fetches hold their share of the
        slots (`unanswered_hosts_share`): a host that never answers holds its slot through timeouts and
        retries, and a frontier with links to many such hosts would otherwise leave live hosts no slot.
        They are tried as slots of their share free up; a host counts as live from its first answer."""
        if self.lockstep or self._unanswered_in_flight() < self._unanswered_slots:
            return ready_at
        answered = self.politeness.answered
        return lambda host: ready_at(host) if answered(host) else math.inf

    def _unanswered_in_flight(self) -> int:
        answered = self.politeness.answered
        return sum(1 for entry, _ in self._fetching.values() if not answered(entry.host))

    def _dry_reason(self, ready_at: ReadyAt) -> str:
        """Why no queued entry can ever be served, with nothing in flight; "" while one can."""
        if len(self.frontier) == 0:
            return "exhausted"
        if self.frontier.servable_size() == 0:
            return "paused"  # what is left belongs to paused topics
        if self.frontier.next_ready_at(self._unless_bad(ready_at)) == math.inf:
            return "blocked"  # every queued host is bad (its links wait for its next try) or capped
        return ""

    def blocked(self) -> bool:
        """Whether every link the crawl may serve now belongs to a host that failed repeatedly (or a capped
        one), judged from the present frontier: a run that ended "blocked" may no longer be, once a topic
        with links on other hosts was started."""
        return self._dry_reason(self.politeness.ready_at) == "blocked"

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
        return self._pending - len(self._revisits.in_flight)

    def _next_wake(self, ready_at: Callable[[str], float]) -> float:
        wake = self.frontier.next_ready_at(ready_at)
        revisits = (ready_at(revisit.entry.host) for revisit in self._revisits.waiting)
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
        self,
        entry: FrontierEntry,
        scope: trio.CancelScope,
        send: trio.MemorySendChannel,
        limiter: trio.Semaphore,
    ) -> None:
        # The request slot is held until processing accepts the result: when parsing and storing fall
        # behind (a busy CPU), fetching waits instead of piling fetched bodies up in memory.
        revisit = self._revisits.in_flight.get(entry.url)
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
        if not self._revisits.abandoned(entry.url):
            self.frontier.push_back(entry)
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
                self._revisits.in_flight.pop(entry.url, None)
            self._pending -= len(batch)
            self._wake.set()
            return
        fetched = [
            (entry, result) for entry, result in batch if result.error is None and result.status != 304
        ]
        if self.settings.parse_in_thread and fetched:
            analysed = await trio.to_thread.run_sync(analyse, fetched, self.settings, self.policy)
        else:
            analysed = analyse(fetched, self.settings, self.policy)
        pages: list[StoredPage] = []
        revisited: list[RevisitOutcome] = []
        sitemaps: list[SitemapRead] = []
        hosts: dict[str, str | None] = {}
        by_url = {id(entry): item for item, (entry, _) in zip(analysed, fetched, strict=True)}
        for entry, result in batch:
            self._counters.fetches += 1
            host = entry.host
            revisit = self._revisits.in_flight.get(entry.url)  # in flight until written: else it is due still
            if revisit is not None:
                analysed_page = by_url.get(id(entry))
                if revisit.listing:
                    sitemaps.append(self._sitemaps.reread(revisit, result, analysed_page, self.policy))
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
                sitemaps.append(self._sitemaps.read(crawled, self.policy))
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
            self._counters.count_revisits(outcome.kind for outcome in revisited)
            if sitemaps:  # they fall due again, and pages their lastmod names may be due now
                self._revisits.look_again()
        for entry, _ in batch:
            self._revisits.in_flight.pop(entry.url, None)
        self._pending -= len(batch)
        self._run_meter.mark(self._clock())
        self._wake.set()

    def _note_full_disk(self, exc: RepositoryFull) -> None:
        """Stop the run: the repository has no room (its last transaction was rolled back)."""
        log.warning("%s; the crawl stops, nothing stored is lost", exc)
        self._disk_full = True
        self._reason = "disk_full"
        self._stopping = True
        self._wake.set()

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
            self._sitemaps.queue_declared(page, verdict, self.policy)
        return StoredPage(
            self._record(page, verdict, dedup, self.settings.revisit_after, None),
            self._links.link_rows(page, verdict, dedup, self.policy),
            doc_id=doc_id,
        )

    def _deduplicate(self, doc_id: int, page: CrawledPage) -> DedupVerdict:
        dedup = self.dedup.check(page.fingerprint, page.simhash)
        if not dedup.is_duplicate:
            self.dedup.add(doc_id, page.fingerprint, page.simhash)
        self._counters.bytes += page.size
        return dedup

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
        self._revisits.expect_due(fetched_at + wait)
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
    ) -> RevisitOutcome:
        """What a revisit found: the page gone, changed (its new rows), or as stored (or unknown: a failed
        fetch keeps the stored version and tries again sooner)."""
        after = self.settings.revisit_after
        retry = retry_interval(revisit.interval, after)
        if result.error is not None:
            self._counters.errors[result.error] += 1
            if result.status in GONE_STATUSES:
                self.dedup.discard(revisit.fingerprint)
                return RevisitOutcome("gone", revisit.doc_id)
            return RevisitOutcome.checked(revisit, self._wall(), retry, revisit.interval)
        if analysed is not None and analysed[0].parsed.error not in (None, "empty"):
            self._counters.errors["unparsable"] += 1
            return RevisitOutcome.checked(revisit, self._wall(), retry, revisit.interval)
        if analysed is None or analysed[0].fingerprint == revisit.fingerprint:  # None: a 304
            interval = next_interval(revisit.interval, False, after)
            return RevisitOutcome.checked(revisit, self._wall(), interval, interval, result.headers)
        page, verdict = analysed
        self.dedup.discard(revisit.fingerprint)
        dedup = self._deduplicate(revisit.doc_id, page)
        interval = next_interval(revisit.interval, True, after)
        record = self._record(page, verdict, dedup, interval, interval)
        links = self._links.link_rows(page, verdict, dedup, self.policy)
        return RevisitOutcome("changed", revisit.doc_id, StoredPage(record, links))

    def _write(
        self,
        pages: list[StoredPage],
        revisited: list[RevisitOutcome],
        sitemaps: list[SitemapRead],
        changes: dict,
        hosts: list[tuple[str, HostRecord, str | None]],
        stats_row: dict[str, Any] | None,
    ) -> list[FrontierEntry]:
        """One transaction: documents, links, revisits, sitemaps read, host states, frontier changes (in a
        worker thread). Returns the failed URLs the sitemaps read date after their failure, to queue again."""
        now = self._wall()
        with self.repo.transaction():
            for read in sitemaps:
                read.write(self.repo, now)
            for page in pages:
                self.repo.insert_page(page)
            for outcome in revisited:
                outcome.write(self.repo, now)
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
        return self._run_meter.snapshot(
            self._clock(),
            total_pages=self._stored_total(),
            frontier_size=self.queued,
            in_flight=self._in_flight,
            finished=finished,
            reason=self._reason,
        )

    def _stats_row_if_due(self) -> dict[str, Any] | None:
        now = self._clock()
        if now - self._last_stats_row < max(self.settings.stats_interval, 5.0):
            return None
        self._last_stats_row = now
        return self._snapshot().history_row()

    async def _stats_loop(self, scope: trio.CancelScope) -> None:
        with scope:
            while True:
                await trio.sleep(self.settings.stats_interval)
                self.stats = self._snapshot()
                self._emit(self.stats)

    def _emit(self, stats: CrawlStats) -> None:
        for callback in self._listeners:
            callback(stats)
