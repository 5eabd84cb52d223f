"""The node service: one running peer around one data directory, under trio.

It composes the crawler (engine, and the focus loop when topics are imported), the peer-to-peer service
(only when the node runs networked; libp2p is imported lazily because importing it takes seconds) and the
cooperation layer (`node.cooperation.Cooperation`, when installed), and serves them to the control API.

Database access: the crawl engine owns one SQLite connection and writes through it from its writer thread;
everything else the node does (API reads, metrics, crawl state, topics, feedback) goes through a second
connection, one call at a time, in a worker thread (`NodeService.db`), so the event loop never waits on disk.

A shutdown (SIGINT/SIGTERM, or `request_stop`) stops the crawler gracefully: in-flight pages are stored, the
frontier is persisted, `api.json` is removed. Crawl state per topic, the frontier and the metrics history are
in the repository, so a restarted node continues where it was.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import shutil
import signal
import sqlite3
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import trio

from crawler.crawl_stats import CrawlStats
from crawler.engine import Crawler
from crawler.errors import TaxonomyError
from crawler.focus import SEED_PRIORITY
from crawler.repository import Repository, RepositoryError, RepositoryFull
from crawler.revisits import mark_due, next_revisit_at
from crawler.settings import CrawlSettings
from crawler.taxonomy import TOPICS_LISTED_API, clean_keywords, load_keywords, save_keywords, unknown_topic
from node.config import Config, ConfigError, load_config
from node.datadir import DataDir, write_atomically
from node.events import EventBus
from node.heldout import FOLDS, accuracy_at
from node.heldout_cache import HeldOutCurves
from node.metrics import (
    ALL_TOPICS,
    CRAWL_STATES,
    PAUSED,
    RUNNING,
    STOPPED,
    MetricsSample,
    ensure_schema,
    load_crawl_states,
    record_sample,
    samples_since,
    save_crawl_state,
)
from node.stored_state import (
    document_counts,
    document_details,
    harvest_rates,
    score_links,
    subtopic_pattern,
    table_exists,
    topic_keys,
)
from node.wording import counted, readable

log = logging.getLogger(__name__)
T = TypeVar("T")
LINK_SCORES_CHECK_S = 10.0  # how often the link-score loop counts the pages (a cheap count)
# what the crawl does while the crawler does not run, by reason (see NodeService._idle_reason)
IDLE_ACTIVITY = {
    "max_pages": "finished",
    "exhausted": "finished",
    "no_seeds": "idle",
    "topics_held": "paused",
    PAUSED: "paused",
    STOPPED: "stopped",
    "blocked": "waiting",
    "shutting_down": "stopping",
    "starting": "waiting",
    "disk_full": "waiting",
}
BLOCKED_CHECK_S = 1.0  # shortest wait before a crawl that found only bad hosts looks again
DISK_CHECK_S = 30.0  # after a full disk, how often the crawl checks whether space was freed
DISK_ROOM_BYTES = 16 * 2**20  # free space gained since the disk filled that resumes the crawl
ABANDON_WAIT_S = 5.0  # how long a shutdown waits for the crawl to end once its requests are cancelled
STOP_ANSWER_SECONDS = 0.2  # how long a stop through the API waits for its answer to leave


class NodeServiceError(Exception):
    """A request the node cannot serve; `kind` and `status` become the API's JSON error."""

    def __init__(self, kind: str, detail: str, status: int = 400) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.status = status


def shown(value: object, limit: int = 60) -> str:
    """A caller's value quoted in an error message, cut to `limit` characters: an answer echoing a
    100,000-character topic name back is no help."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def not_found(what: str) -> NodeServiceError:
    return NodeServiceError("not_found", what, 404)


def unavailable(detail: str) -> NodeServiceError:
    return NodeServiceError("unavailable", detail, 503)


class NodeService:
    """A running node: `await run()` until `request_stop()` or a signal; the API calls the other methods."""

    def __init__(
        self,
        data: DataDir,
        config: Config | None = None,
        *,
        bootstrap: Sequence[str] = (),
        listen: Sequence[str] = (),
        offline: bool | None = None,
        max_pages: int | None = None,
        handle_signals: bool = False,
    ) -> None:
        self.data = data.ensure()
        try:
            self.config = config or load_config(data.config)
        except ConfigError as exc:
            raise NodeServiceError("config", str(exc)) from exc
        self.settings = self.config.node
        self.crawl_settings: CrawlSettings = self.config.crawler
        self.bootstrap = tuple(bootstrap)
        self.listen = tuple(listen)
        self.networked = self.settings.networked if offline is None else not offline
        limit = self.settings.max_pages if max_pages is None else max_pages
        self.max_pages = limit or None
        self.handle_signals = handle_signals
        self.events = EventBus(self.settings.event_queue_size)
        self.started_at = time.time()
        self.api_url: str | None = None
        self.network: Any = None  # the p2p service (or a bare host) when networked
        self.cooperation: Any = None
        self.blocked_peers: dict[str, float] = {}  # peer id -> when the user blocked it (blocked.json)
        self.crawler: Crawler | None = None
        self._repo: Repository | None = None
        self._side: Repository | None = None
        self._db_limiter = trio.CapacityLimiter(1)
        self._states: dict[str, str] = {}
        self._changed = trio.Event()
        self._holds = 0
        self._crawl_idle = trio.Event()
        self._crawl_idle.set()
        self._crawl_running = False
        # pages stored and seconds crawled by the engine's finished runs since the node started (a run
        # ends whenever the node edits the frontier, so one run alone is only a fragment of the crawl)
        self._runs_pages = 0
        self._runs_seconds = 0.0
        self._last_reason = ""
        self._stop = trio.Event()
        self._nursery: trio.Nursery | None = None
        self._last_stats: CrawlStats | None = None
        self._stats_dirty = False
        self._held_out = HeldOutCurves(self.data.repository, self._featurizer)

    # -- lifecycle ----------------------------------------------------------------------------------------
    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Run the node until `request_stop()`; `task_status.started(self)` once the API answers."""
        try:
            self._repo = Repository(self.data.repository)
            self._side = Repository(self.data.repository)
        except RepositoryError as exc:
            raise NodeServiceError("repository", str(exc)) from exc
        try:
            ensure_schemas(self._side)
            self._states = load_crawl_states(self._side)
            self._states.setdefault(ALL_TOPICS, RUNNING)
            self.crawler = self._build_crawler()
            self._sync_paused_topics()
            from node.network import read_blocked_peers

            self.blocked_peers = read_blocked_peers(self.data.blocked_peers)
            if self.networked:
                from node.network import check_listen_addrs

                check_listen_addrs(self)
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                if self.handle_signals:
                    nursery.start_soon(self._stop_on_signals)
                if self.networked:
                    await self._start_network(nursery)
                await self._start_cooperation(nursery)
                from node.api import serve_api

                await self._refresh_focus()
                self.api_url = await nursery.start(serve_api, self)
                self._write_api_file()
                nursery.start_soon(self._resume_topics)
                nursery.start_soon(self._crawl_supervisor)
                nursery.start_soon(self._metrics_loop)
                nursery.start_soon(self._link_scores_loop)
                nursery.start_soon(self._stats_event_loop)
                task_status.started(self)
                log.info("node ready (%s): API at %s", self.peer_id or "offline", self.api_url)
                await self._stop.wait()
                self._say_stopping()
                await self._shutdown_crawl()
                await self._sample_at_stop()
                nursery.cancel_scope.cancel()
        finally:
            try:
                if self.crawler is not None:
                    with trio.CancelScope(shield=True):
                        await self.crawler.aclose()
                for repo in (self._repo, self._side):
                    if repo is not None:
                        repo.close()
                self._held_out.close()
            finally:  # last: while api.json is there a node runs here, so `node stop` waits for all of this
                self.data.api_address.unlink(missing_ok=True)

    def request_stop(self) -> None:
        self._stop.set()

    def stop_soon(self) -> None:
        """Stop as SIGTERM does, once the API's answer to the stop request has left: the API's server stops
        with the node, and a node with no page in flight stops at once."""
        log.info("stop requested through the API: stopping (finishing in-flight pages)")

        async def stop_after_the_answer() -> None:
            await trio.sleep(STOP_ANSWER_SECONDS)
            self.request_stop()

        assert self._nursery is not None  # the API serves inside `run`
        self._nursery.start_soon(stop_after_the_answer)

    async def _stop_on_signals(self) -> None:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            count = 0
            async for signum in signals:
                count += 1
                if count == 1:
                    log.info("signal %s: stopping (finishing in-flight pages; again to stop at once)", signum)
                    self.request_stop()
                elif count == 2 and self.crawler is not None and self._crawl_running:
                    self.crawler.stop()  # before the cancel: else their links are taken again at once
                    cancelled = counted(self.crawler.abandon_in_flight(), "request")
                    log.info(
                        "signal %s again: %s in flight cancelled (the links stay queued)", signum, cancelled
                    )
                elif self._nursery is not None:  # nothing in flight to cancel, or a third signal
                    self._nursery.cancel_scope.cancel()

    async def _shutdown_crawl(self) -> None:
        """Stop the crawler, letting in-flight pages finish within the grace period; the requests still
        waiting for an answer then are cancelled, their links queued for the next run."""
        if self.crawler is None:
            return
        self.crawler.stop()
        with trio.move_on_after(self.settings.shutdown_grace):
            await self._crawl_idle.wait()
        if not self._crawl_idle.is_set():
            cancelled = counted(self.crawler.abandon_in_flight(), "request")
            log.info("cancelling %s still in flight (the links stay queued)", cancelled)
            with trio.move_on_after(ABANDON_WAIT_S):  # pages fetched already are stored first
                await self._crawl_idle.wait()

    def _write_api_file(self, stopping: bool = False) -> None:
        """api.json: where the API listens and the node's pid; `stopping` once a stop began, so clients say
        so instead of asking an API that is about to close (`node.client.NodeStopping`)."""
        where = {"url": self.api_url, "pid": os.getpid()} | ({"stopping": True} if stopping else {})
        write_atomically(self.data.api_address, json.dumps(where) + "\n")

    def _say_stopping(self) -> None:
        try:
            self._write_api_file(stopping=True)
        except OSError as exc:  # a full disk must not hold up the stop: clients then find the API closed
            log.warning("could not mark %s as stopping: %s", self.data.api_address, exc)

    # -- components ---------------------------------------------------------------------------------------
    def _build_crawler(self) -> Crawler:
        return Crawler(self._repo, self.crawl_settings)  # type: ignore[arg-type]

    def _focus_policy(self) -> Any:
        """The focus loop (`crawler.focus.TopicFocus`, `[focus]` settings) trained on the imported taxonomy,
        with the apprentice setting link priorities when `crawler.apprentice_enabled`; None without one."""
        from crawler.focus import TopicFocus
        from crawler.taxonomy import PENDING, load_taxonomy

        repo: Repository = self._side  # type: ignore[assignment]
        taxonomy = load_taxonomy(repo)
        if taxonomy is None:
            return None
        try:
            focus = TopicFocus(taxonomy, self.config.focus, indicators=load_keywords(repo))
        except ValueError as exc:  # no bookmark could be fetched: nothing to train on
            if any(d.status == PENDING for d in taxonomy.documents):  # `_resume_topics` fetches them
                log.info("the bookmarks are fetched first: the crawl focuses once they are")
            else:
                log.warning("crawling without focus: %s", exc)
            return None
        if not self.crawl_settings.apprentice_enabled:
            return focus
        from crawler.apprentice import ApprenticeFocus

        return ApprenticeFocus(focus)

    async def _start_network(self, nursery: trio.Nursery) -> None:
        from node.network import start_network

        self.network = await nursery.start(start_network, self)

    async def _start_cooperation(self, nursery: trio.Nursery) -> None:
        try:
            from node.cooperation import Cooperation
        except ImportError:
            return
        if self.network is None:
            return
        try:
            cooperation = Cooperation.for_node(self)  # type: ignore[attr-defined]
        except Exception as exc:
            self._cooperation_failed(exc)
            return
        self.cooperation = await nursery.start(self._run_cooperation, cooperation)

    async def _run_cooperation(
        self, cooperation: Any, *, task_status: Any = trio.TASK_STATUS_IGNORED
    ) -> None:
        """The cooperation layer's loops; if they fail, the node logs why and crawls on alone."""
        started = False

        def on_started(value: Any = None) -> None:
            nonlocal started
            started = True
            task_status.started(cooperation)

        status = _StartedHook(on_started)
        try:
            await cooperation.run(task_status=status)
        except Exception as exc:
            self._cooperation_failed(exc)
            self.cooperation = None
            if not started:
                task_status.started(None)

    def _cooperation_failed(self, exc: BaseException) -> None:
        log.error("cooperation failed, the node goes on without it: %s", root_cause(exc), exc_info=exc)
        self._publish("log", {"message": f"cooperation failed: {root_cause(exc)}; crawling on alone"})

    async def db(self, fn: Callable[..., T], *args: Any) -> T:
        """Run `fn(side_repository, *args)` in a worker thread, one call at a time."""
        return await trio.to_thread.run_sync(lambda: fn(self._side, *args), limiter=self._db_limiter)

    # -- crawl control ------------------------------------------------------------------------------------
    def _wants_crawl(self) -> bool:
        """Whether the engine may run: a paused or stopped topic is held by the frontier, which serves none
        of its queue (`_sync_paused_topics`), so the engine runs while any other queue has entries. (Judged
        by the topics with a stored state, a node whose topics were imported before it ran stopped every
        topic's crawl when one was paused.)"""
        return not (self._stop.is_set() or self._holds or self._states.get(ALL_TOPICS, RUNNING) != RUNNING)

    def _sync_paused_topics(self) -> None:
        """The frontier serves no queue of a topic that is paused or stopped (its entries wait there)."""
        if self.crawler is not None:
            held = [key for key, state in self._states.items() if key != ALL_TOPICS and state != RUNNING]
            self.crawler.frontier.set_paused_topics(held)

    def _poke(self) -> None:
        self._changed.set()
        if self.crawler is not None and self._crawl_running and not self._wants_crawl():
            self.crawler.stop()

    async def _crawl_supervisor(self) -> None:
        """Run the crawler whenever the crawl state wants it; else wait for a change."""
        assert self.crawler is not None
        self.crawler.add_listener(self._on_stats)
        while True:
            if self._wants_crawl() and (
                (self.crawler.frontier.servable_size() > 0 and not self._limit_reached())
                or self.crawler.revisit_due_in() == 0
            ):
                self._crawl_idle = trio.Event()
                self._crawl_running = True
                try:
                    stats = await self.crawler.run(self.max_pages)
                    # before the engine counts as idle: a hold waiting for idle edits the frontier on the
                    # engine's connection, which must not be inside this worker thread's transaction
                    if stats.reason != "disk_full":
                        await self._record_focus_stats()
                finally:
                    self._crawl_running = False
                    self._crawl_idle.set()
                self._runs_pages += stats.pages
                self._runs_seconds += stats.elapsed
                self._last_reason = stats.reason
                log.info("crawl run ended (%s) after %d pages", stats.reason, stats.pages)
                self._publish("log", {"message": f"crawl paused: {stats.reason}", "reason": stats.reason})
                if stats.reason == "disk_full":
                    self._publish("log", {"message": self._idle_detail("disk_full", stats.total_pages)})
                    await self._wait_for_room()
                elif stats.reason == "blocked":  # until a bad host's next try (or a page falls due)
                    await self._wait_for_change(
                        timeout=max(BLOCKED_CHECK_S, min(self.crawler.next_ready_in(), self._revisit_wait()))
                    )
                elif stats.reason in ("exhausted", "max_pages", "paused"):
                    await self._wait_for_change(timeout=self._revisit_wait())
                continue
            await self._wait_for_change(timeout=self._revisit_wait())

    def _revisit_wait(self) -> float:
        """Seconds until a stored page falls due (crawler.revisits): the crawl wakes up for it."""
        assert self.crawler is not None
        return self.crawler.revisit_due_in() if self._wants_crawl() else math.inf

    def _limit_reached(self) -> bool:
        assert self.crawler is not None
        return self.max_pages is not None and self.crawler.stats.total_pages >= self.max_pages

    async def _wait_for_change(self, timeout: float) -> None:
        with trio.move_on_after(timeout):
            await self._changed.wait()
        self._changed = trio.Event()

    async def _wait_for_room(self) -> None:
        """After a full disk: until the user acts on the crawl (`crawl start`) or the data directory's file
        system has `DISK_ROOM_BYTES` more free than when it filled (looked at every `DISK_CHECK_S`)."""
        full_at = free_bytes(self.data.root)
        while True:
            with trio.move_on_after(DISK_CHECK_S):
                await self._changed.wait()
                break
            if free_bytes(self.data.root) >= full_at + DISK_ROOM_BYTES:
                break
        self._changed = trio.Event()

    async def hold_crawl(self) -> _CrawlHold:
        """Pause the engine (in-flight pages finish) while the node edits its frontier."""
        return _CrawlHold(self)

    def crawl_state(self, topic: str | None = None) -> str:
        if topic is None:
            return self._states.get(ALL_TOPICS, RUNNING)
        if self._states.get(ALL_TOPICS, RUNNING) != RUNNING:
            return self._states[ALL_TOPICS]
        return self._states.get(topic, RUNNING)

    async def revisit(self, urls: list[str] | None) -> dict[str, Any]:
        """Make stored pages (all when `urls` is None) due now: the crawl fetches them before new links."""
        due, missing = await self.db(mark_due, time.time(), urls)
        if self.crawler is not None:
            self.crawler.revisit_soon()
        self._poke()
        self._publish("log", {"message": f"{due} stored pages due for a revisit now"})
        answer: dict[str, Any] = {"due": due, "not_revisited": missing, "state": self.crawl_state()}
        if due and not self._wants_crawl():
            answer["detail"] = "the crawl is not running: `topicswarm crawl start` fetches them"
        return answer

    async def set_crawl_state(self, state: str, topic: str | None = None) -> dict[str, Any]:
        """Start, pause or stop the crawl (of `topic`; all topics when None). A pause lets the requests in
        flight finish and stores their pages; a stop cancels them at once (their links stay queued), so a
        server slow to answer never holds it up. Either lasts until `start`, across restarts too."""
        if state not in CRAWL_STATES:
            raise NodeServiceError("bad_request", f"crawl state must be one of {', '.join(CRAWL_STATES)}")
        if topic is not None:
            await self.require_topic(topic)
        now = time.time()
        if topic is None:  # every topic, those never given a state of their own too
            for key in sorted({*await self.topic_keys(), *self._states} - {ALL_TOPICS}):
                self._states[key] = state
                await self.db(save_crawl_state, key, state, now)
        key = ALL_TOPICS if topic is None else topic
        self._states[key] = state
        if topic is not None and state == RUNNING and self._states.get(ALL_TOPICS) != RUNNING:
            self._states[ALL_TOPICS] = RUNNING  # starting one topic starts the crawler
            await self.db(save_crawl_state, ALL_TOPICS, RUNNING, now)
        await self.db(save_crawl_state, key, state, now)
        self._sync_paused_topics()
        # a topic's answer is its own state (what was asked), even while the whole crawl is held
        answer: dict[str, Any] = {"state": self._states[key]}
        if self.crawler is not None:
            topics = None if topic is None else {topic}
            if state == STOPPED:
                answer["in_flight_cancelled"] = self.crawler.abandon_in_flight(topics)
            elif state == PAUSED:
                answer["in_flight_finishing"] = self.crawler.in_flight_of(topics)
        self._poke()
        if topic is not None:
            answer["topic"] = topic
        reason = "" if self._crawl_running and self._wants_crawl() else self._idle_reason()
        answer["crawl"] = {
            "state": self.crawl_state(),
            "reason": reason,
            "detail": self._idle_detail(reason, self.crawler.stats.total_pages if self.crawler else 0),
        }
        self._publish("log", {"message": f"crawl {state}" + (f" for {topic}" if topic else "")})
        return answer

    async def add_seeds(self, urls: Sequence[str], topic: str | None = None, priority: float = 1.0) -> int:
        """Queue start URLs (the engine pauses for the edit, so the frontier has one writer)."""
        assert self.crawler is not None
        async with await self.hold_crawl():
            added = self.crawler.add_seeds(urls, topic=topic, priority=priority)
        return added

    # -- statistics and events ----------------------------------------------------------------------------
    def _on_stats(self, stats: CrawlStats) -> None:
        self._last_stats = stats
        self._stats_dirty = True

    def _publish(self, kind: str, data: dict[str, Any]) -> None:
        self.events.publish(kind, data)

    def publish(self, kind: str, data: dict[str, Any]) -> None:
        """For the cooperation layer: peer, model, meta and refine events to the UI."""
        self._publish(kind, data)

    async def _stats_event_loop(self) -> None:
        """One coalesced `stats` event per interval (only when something changed or someone listens)."""
        while True:
            await trio.sleep(self.settings.stats_event_interval)
            if self.events.subscribers and (self._stats_dirty or self._crawl_running):
                self._stats_dirty = False
                self._publish("stats", self._crawl_figures())

    async def _metrics_loop(self) -> None:
        while True:
            try:
                await self._sample_metrics()
            except RepositoryFull as exc:  # the crawl's stop says so to the user; a sample is not worth more
                log.debug("metrics sample not stored: %s", exc)
            await trio.sleep(self.settings.metrics_interval)

    async def _link_scores_loop(self) -> None:
        """Link authority (HITS) and PageRank of the stored pages, for search's `authority` and `pagerank`
        signals (thesis chapter 4), computed at start and again once the node's own pages grew by
        `link_scores_pages` or a tenth; in a worker thread on a connection of its own, so the API's reads
        do not wait the seconds a large repository takes."""

        def score() -> int:
            repo = Repository(self.data.repository)
            try:
                pages = document_counts(repo)["local"]
                if pages:
                    score_links(repo)
                return pages
            finally:
                repo.close()

        scored = -1
        while True:
            pages = (await self.db(document_counts))["local"]
            if scored < 0 or pages - scored >= max(self.settings.link_scores_pages, scored // 10):
                try:
                    scored = await trio.to_thread.run_sync(score)
                except (RepositoryError, sqlite3.Error) as exc:  # a full disk: search keeps the old scores
                    log.warning("link scores not updated: %s", exc)
                    scored = pages
            await trio.sleep(LINK_SCORES_CHECK_S)

    async def _sample_at_stop(self) -> None:
        """The figures the node stopped at, for `status` to show while it does not run (the periodic
        samples lag the crawl by up to `metrics_interval`)."""
        try:
            await self._sample_metrics()
        except (RepositoryError, sqlite3.Error, OSError) as exc:
            log.warning("the last metrics sample was not stored: %s", exc)

    async def _sample_metrics(self) -> None:
        figures = self._crawl_figures()
        traffic = self._traffic()
        sample = MetricsSample(
            t=time.time(),
            pages=figures["pages"],
            pages_per_s=figures["pages_per_s"],
            frontier_size=figures["frontier_size"],
            errors=figures["errors_by_kind"],
            peers_online=self._peers_online(),
            bytes_in=traffic["in"],
            bytes_out=traffic["out"],
            harvest=await self.db(harvest_rates),
        )
        await self.db(record_sample, sample, self.settings.metrics_keep)

    def _crawl_figures(self) -> dict[str, Any]:
        """The crawl's live figures. `state` is what the user set (running, paused, stopped); `activity`
        what the crawl does (crawling, pausing, stopping, finished, paused, stopped, waiting, idle),
        `reason` and `detail` why it does not crawl and what to do; `pages_per_s` is the rate of the last
        few seconds (0 when nothing is fetched) and `session` the pages stored since the node started over
        the seconds it crawled, so a finished crawl still shows how fast it went."""
        assert self.crawler is not None
        stats = self.crawler.stats if self._last_stats is None else self._last_stats
        if self._crawl_running:
            stats = self.crawler.stats if self.crawler.stats.elapsed >= stats.elapsed else stats
        reason = "" if self._crawl_running else self._idle_reason()
        return {
            "state": self.crawl_state(),
            "activity": self._activity(reason),
            "active": self._crawl_running,
            "reason": reason,
            "detail": self._idle_detail(reason, stats.total_pages),
            "pages": stats.total_pages,  # the node's own crawl: peers' pooled results not counted
            "pages_per_s": stats.recent_pages_per_s if self._crawl_running else 0.0,
            "session": self._session_figures(stats),
            "max_pages": self.max_pages,
            "frontier_size": self.crawler.queued,
            "hosts_waiting": self.crawler.waiting_hosts(),
            "beyond_tunnel": self._beyond_tunnel(),
            "errors_by_kind": dict(stats.errors_by_kind),
            "bytes_crawled": stats.bytes,
            "in_flight": stats.in_flight if self._crawl_running else 0,
            "revisits": {"fetched": stats.revisits, "changed": stats.changed, "gone": stats.gone},
            "sitemaps": {
                "read": stats.sitemaps,
                "urls_queued": stats.sitemap_urls,
                "unchanged": stats.sitemaps_unchanged,
            },
            "feeds": {
                "read": stats.feeds,
                "urls_queued": stats.feed_urls,
                "unchanged": stats.feeds_unchanged,
            },
            "relisted": stats.relisted,  # failed URLs a sitemap or feed dated later, queued again
            "held_topics": {  # topics paused or stopped while the crawl runs for the others
                key: state
                for key, state in sorted(self._states.items())
                if key != ALL_TOPICS and state != RUNNING
            },
        }

    def _activity(self, idle_reason: str) -> str:
        """crawling; pausing or stopping while the requests in flight end after a pause, a stop or the
        node's shutdown; else what the idle crawl waits for (IDLE_ACTIVITY)."""
        if not self._crawl_running:
            return IDLE_ACTIVITY.get(idle_reason, "waiting")
        if self._wants_crawl():
            return "crawling"
        return "stopping" if self._stop.is_set() or self.crawl_state() == STOPPED else "pausing"

    def _session_figures(self, current: CrawlStats) -> dict[str, Any]:
        """Pages stored since the node started over the seconds the crawler ran (its pauses left out)."""
        pages, seconds = self._runs_pages, self._runs_seconds
        if self._crawl_running:
            pages, seconds = pages + current.pages, seconds + current.elapsed
        return {
            "pages": pages,
            "crawl_seconds": round(seconds, 1),
            "pages_per_s": pages / seconds if seconds > 0 else 0.0,
        }

    def _idle_reason(self) -> str:
        """Why the crawler does not run now, judged from the node's present state (a finished run's own
        reason can be stale: a restarted node at its page limit never runs)."""
        assert self.crawler is not None
        state = self.crawl_state()
        if self._stop.is_set():
            return "shutting_down"
        if state != RUNNING:
            return state
        if self._limit_reached():
            return "max_pages"
        if len(self.crawler.frontier) == 0:
            return "exhausted" if self.crawler.stats.total_pages else "no_seeds"
        if self.crawler.frontier.servable_size() == 0:
            return "topics_held"
        if self._last_reason in ("blocked", "disk_full"):
            return self._last_reason
        return "starting"

    def _beyond_tunnel(self) -> dict[str, Any] | None:
        """Links of rejected pages the focus gave up at its tunnel depth and never reached otherwise (None
        without a focused crawl): where a crawl that ends before `max_pages` could have gone on."""
        count = getattr(self.crawler.policy, "beyond_tunnel", None) if self.crawler else None
        if count is None:
            return None
        links, at_least = count()
        return {"links": links, "at_least": at_least, "tunnel_depth": self.config.focus.tunnel_depth}

    def _exhausted_detail(self) -> str:
        detail = "every queued link was crawled"
        beyond = self._beyond_tunnel()
        if beyond and beyond["links"]:
            links = f"{'at least ' if beyond['at_least'] else ''}{beyond['links']}"
            detail += (
                f"; {links} more links lie beyond pages the classifier rejected, past focus.tunnel_depth "
                f"({beyond['tunnel_depth']} hops): raise it in config.toml ([focus] tunnel_depth) to "
                "follow them"
            )
        return detail + "; add start URLs with `topicswarm node run --seed URL` or import more topics"

    def _blocked_detail(self) -> str:
        assert self.crawler is not None
        wait = self.crawler.next_ready_in()
        when = "never: they were given up" if wait == math.inf else f"in {readable(wait)}"
        return (
            "every queued link belongs to a host that failed repeatedly (down, or this computer offline); "
            f"its links wait, and the next such host is tried again {when} "
            "([crawler] host_bad_retry_delay in config.toml)"
        )

    def _idle_detail(self, reason: str, pages: int) -> str:
        """What an idle reason means for the user, and what to do about it."""
        if reason == "disk_full":
            free = free_bytes(self.data.root) / 2**20
            return (
                f"the disk holding {self.data.root} is full ({free:.0f} MB free): the crawl stopped, nothing "
                "stored was lost and the pages it could not store are queued again; free some space and it "
                "resumes (or at once: `topicswarm crawl start`)"
            )
        details = {
            "max_pages": f"reached max_pages ({pages} of {self.max_pages} documents); raise it with "
            "`topicswarm node run --max-pages N` or [node] max_pages in config.toml",
            "exhausted": self._exhausted_detail() if reason == "exhausted" else "",
            "no_seeds": "nothing to crawl: import topics with `topicswarm topics import FILE` or give "
            "`topicswarm node run --seed URL`",
            "topics_held": "what is queued belongs to paused or stopped topics: start one with "
            "`topicswarm crawl start --topic KEY` (in the UI: s on the Topics screen)",
            "blocked": self._blocked_detail() if reason == "blocked" else "",
            PAUSED: "by the user; `topicswarm crawl start` resumes (in the UI: ctrl+p, Start crawling)",
            STOPPED: "by the user; `topicswarm crawl start` resumes (in the UI: ctrl+p, Start crawling)",
            "shutting_down": "the node is shutting down",
            "starting": "about to crawl",
        }
        return details.get(reason, "")

    # -- network figures ----------------------------------------------------------------------------------
    @property
    def peer_id(self) -> str | None:
        return None if self.network is None else str(self.network.peer_id)

    def _addrs(self) -> list[str]:
        return [] if self.network is None else list(self.network.addrs())

    def _peers_online(self) -> int:
        return 0 if self.network is None else int(self.network.peers_online())

    def _traffic(self) -> dict[str, int]:
        """Bytes the p2p service exchanged (the cooperation layer's exchanges run over it)."""
        traffic = getattr(self.network, "traffic", None)
        return {d: int(n) for d, n in traffic().items()} if traffic else {"in": 0, "out": 0}

    def _traffic_by_message(self) -> dict[str, int]:
        """Bytes per direction and message type ("out model_response", "in announcement", ...)."""
        by_message = getattr(self.network, "bytes_by_message", None)
        return by_message() if by_message else {}

    # -- API: status, metrics, topics ---------------------------------------------------------------------
    async def status(self) -> dict[str, Any]:
        figures = self._crawl_figures()
        if self.crawler is not None and self.crawler.settings.revisit_enabled:
            due = await self.db(next_revisit_at, (), self.crawler.listings)
            figures["revisits"]["next_in_s"] = None if due is None else max(0.0, due - time.time())
        counts = await self.db(document_counts)
        return {
            "peer_id": self.peer_id,
            "addrs": self._addrs(),
            "uptime_s": time.time() - self.started_at,
            "networked": self.network is not None,
            "cooperation": self.cooperation is not None,
            "crawl": figures,
            "harvest": await self.db(harvest_rates),
            "peers_online": self._peers_online(),
            "bytes_exchanged": self._traffic(),
            "bytes_by_message": self._traffic_by_message(),
            "documents": counts,
            "api": self.api_url,
            "data_dir": str(self.data.root),
        }

    async def metrics(self, since: float = 0.0) -> dict[str, Any]:
        samples = await self.db(samples_since, since)
        return {"samples": [s.to_dict() for s in samples]}

    async def topic_keys(self) -> list[str]:
        return await self.db(topic_keys)

    async def require_topic(self, key: str) -> None:
        """404 naming where the topic keys are listed, for the CLI's users and the API's alike."""
        known = await self.topic_keys()
        if key not in known:
            raise not_found(unknown_topic(key, known, listed=TOPICS_LISTED_API))

    async def topics(self) -> dict[str, Any]:
        rows = await self.db(topic_rows)
        for row in rows:
            row["crawl"] = self.crawl_state(row["key"])
        if self.cooperation is not None and hasattr(self.cooperation, "topic_quality"):
            for row in rows:
                quality = await self.cooperation.topic_quality(row["key"])
                row["model_version"] = quality.get("model_version", row["model_version"])
                row["quality"] = await self._held_out_quality(row["key"])
        else:  # the held-out accuracy is a meta-classifier's, and those are built with peers
            why = "no meta-classifier: " + (
                "this node runs offline, and meta-classifiers are built with peers"
                if self.network is None
                else "the cooperation layer did not start (see node.log)"
            )
            for row in rows:
                row["quality"] = {"accuracy": None, "measured_on": "", "why": why}
        return {"topics": rows}

    async def meta(self, topic: str) -> dict[str, Any]:
        """The topic's meta-classifier (cooperation layer) with its loss/accuracy curve measured on held-out
        documents beside the one on its training documents."""
        answer = await self.cooperate("meta", topic)
        answer["curve_on"] = "training documents: the local model trained on them, so it is optimistic"
        answer["held_out"] = await self._held_out.measure(topic, await self._curve_key(topic, answer))
        return answer

    def _featurizer(self) -> Any:
        return getattr(self.cooperation, "featurizer", None)

    async def _curve_key(self, topic: str, meta: dict[str, Any]) -> str:
        """What a held-out curve depends on: the topic's meta-classifier, and which rival topics have one."""
        from node.cooperation import store

        built = await self.db(store.meta_topics)  # a rival's new meta-classifier changes the curve too
        return json.dumps([meta.get("models"), meta.get("build"), meta.get("curve"), built], sort_keys=True)

    async def _held_out_quality(self, topic: str) -> dict[str, Any]:
        """A topic's classifier quality: its meta-classifier's held-out accuracy at the loss set, or, while
        that is being measured in the background, why it is missing (`measuring`: ask again soon)."""
        try:
            meta = await self.cooperate("meta", topic)
        except NodeServiceError as exc:
            why = "no meta-classifier yet: build one (Meta screen: b; `topicswarm meta build`)"
            return {"accuracy": None, "measured_on": "", "why": why if exc.status == 404 else exc.detail}
        key = await self._curve_key(topic, meta)
        held = self._held_out.ready(topic, key)
        if held is None:
            if self._nursery is not None:
                self._held_out.start(self._nursery, topic, key)
            why = f"being measured: {FOLDS}-fold cross-validation of its meta-classifier, shown when done"
            return {"accuracy": None, "measured_on": "", "why": why, "measuring": True}
        accuracy = accuracy_at(held["curve"], float(meta.get("loss") or 0.0))
        measured_on = (
            f"{held['folds']}-fold cross-validation on {held['documents']} labelled documents "
            f"at loss {float(meta.get('loss') or 0.0):.2f}"
        )
        return {
            "accuracy": accuracy,
            "measured_on": measured_on if accuracy is not None else "",
            "why": held["why"] if accuracy is None else "",
        }

    async def import_topics(
        self, bookmarks_html: str | None = None, path: str | None = None, fetch: bool = True
    ) -> dict[str, Any]:
        """Read a taxonomy (in a worker thread: a folder tree or a large file would hold the node's loop),
        fetch its bookmarked pages, store it, and seed the crawl from its bookmarks. With `fetch` False the
        answer comes before the pages are fetched: they are fetched in the background, and the crawl
        focuses on the topics once they are."""
        from crawler.taxonomy import FAILED, failure_counts, parse_bookmarks, read_taxonomy

        if bookmarks_html is not None:
            read = partial(parse_bookmarks, bookmarks_html, name="bookmarks_html")
        elif path is not None:
            if not Path(path).is_absolute():
                raise NodeServiceError("bad_request", f"give the bookmarks' path in full, not {shown(path)}")
            read = partial(read_taxonomy, Path(path))
        else:
            raise NodeServiceError("bad_request", 'send {"bookmarks_html": TEXT} or {"path": PATH}')
        try:
            taxonomy = await trio.to_thread.run_sync(read)
        except (TaxonomyError, OSError) as exc:
            raise NodeServiceError("bad_topics", str(exc)) from exc
        if fetch:
            taxonomy = await self._fetch_training_pages(taxonomy)
        from crawler.taxonomy import store_taxonomy

        await self.db(store_taxonomy, taxonomy)
        now = time.time()
        for key in taxonomy.topics:
            self._states.setdefault(key, RUNNING)
            await self.db(save_crawl_state, key, self._states[key], now)
        known = set(await self.topic_keys())  # a topic the new file lacks is gone: so is its held state
        self._states = {k: v for k, v in self._states.items() if k == ALL_TOPICS or k in known}
        self._sync_paused_topics()
        seeds = 0
        await self._refresh_focus()
        for topic, urls in taxonomy_seeds(taxonomy).items():
            seeds += await self.add_seeds(urls, topic=topic, priority=SEED_PRIORITY)
        if self.cooperation is not None and hasattr(self.cooperation, "topics_changed"):
            await self.cooperation.topics_changed(list(taxonomy.topics))
        if not fetch:
            assert self._nursery is not None  # the API serves inside `run`
            self._nursery.start_soon(self._resume_topics)
        self._poke()
        self._publish("log", {"message": f"imported {len(taxonomy.topics)} topics, {seeds} seeds"})
        return {
            "imported": list(taxonomy.topics),
            "seeds": seeds,
            "documents": len(taxonomy.documents),
            "failed": sum(1 for d in taxonomy.documents if d.status == FAILED),
            "failed_by_error": failure_counts(taxonomy),
            "skipped": list(taxonomy.skipped),
        }

    async def _fetch_training_pages(self, taxonomy: Any) -> Any:
        from crawler.fetch import Fetcher
        from crawler.taxonomy import fetch_documents

        fetcher = Fetcher(self.crawl_settings)
        try:
            return await fetch_documents(
                taxonomy, fetcher, concurrency=self.crawl_settings.concurrent_requests
            )
        finally:
            await fetcher.aclose()

    async def _refresh_focus(self) -> None:
        """At start and after an import: the crawler focuses on the stored topics (trained off the loop)."""
        assert self.crawler is not None
        policy = await trio.to_thread.run_sync(self._focus_policy, limiter=self._db_limiter)
        if policy is not None:
            async with await self.hold_crawl():
                policy.attach(self.crawler)
                self.crawler.policy = policy

    async def _refocus_indicators(self) -> None:
        """The crawl's topic model trained again with the topics' indicator keywords as stored now: pages
        classified from then on need them (the crawl waits while it trains)."""
        policy = self.crawler.policy if self.crawler is not None else None
        if not hasattr(policy, "set_indicators"):
            return
        indicators = await self.db(load_keywords)
        async with await self.hold_crawl():
            await trio.to_thread.run_sync(policy.set_indicators, indicators)

    async def _resume_topics(self) -> None:
        """Topics imported while no node ran (`topicswarm topics import` before `node run`) are crawled
        too: bookmarks stored unfetched (`--no-fetch`) are fetched and the topics' bookmarks are queued as
        seeds (URLs seen before are skipped, so a restart queues nothing twice)."""
        from crawler.taxonomy import PENDING, load_taxonomy, store_taxonomy

        taxonomy = await self.db(load_taxonomy)
        if taxonomy is None:
            return
        if any(d.status == PENDING for d in taxonomy.documents):
            taxonomy = await self._fetch_training_pages(taxonomy)
            await self.db(store_taxonomy, taxonomy)
            await self._refresh_focus()
        seeds = taxonomy_seeds(taxonomy)
        added = 0
        for topic, urls in seeds.items():
            added += await self.add_seeds(urls, topic=topic, priority=SEED_PRIORITY)
        if added:
            log.info("queued %d bookmarks of the stored topics as seeds", added)
        self._poke()

    async def _record_focus_stats(self) -> None:
        """Harvest rates of the focus loop into topic_stats, on the engine's connection: called after a run
        ends and before the engine counts as idle, so no frontier edit uses that connection meanwhile."""
        assert self.crawler is not None
        record = getattr(self.crawler.policy, "record_stats", None)
        if record is not None:
            await trio.to_thread.run_sync(record)

    async def set_keywords(self, key: str, keywords: Sequence[str]) -> dict[str, Any]:
        try:
            cleaned = clean_keywords(keywords)
        except TaxonomyError as exc:
            raise NodeServiceError("bad_request", str(exc)) from exc
        await self.require_topic(key)
        await self.db(save_keywords, key, cleaned)
        await self._refocus_indicators()
        topics = (await self.topics())["topics"]
        return next(t for t in topics if t["key"] == key)

    # -- API: search, documents, feedback -----------------------------------------------------------------
    async def search(
        self, query: str, weights: str | None = None, user: str | None = None, **options: Any
    ) -> dict[str, Any]:
        """Ranked search; `weights` as "SIGNAL=W,..." (the CLI's --weights), else the weights fitted to
        `user`'s feedback (default: the default user's)."""
        from crawler.feedback import personal_weights
        from crawler.query import DEFAULT_USER
        from crawler.ranking import RankingError, RankingWeights
        from crawler.search import SearchError, ranked_search

        def run(repo: Repository) -> dict[str, Any]:
            if weights:
                options["weights"] = RankingWeights.parse(weights)
            elif options.get("weights") is None:  # none asked for: the user's, fitted to their feedback
                options["weights"] = personal_weights(repo, user or DEFAULT_USER)
            return ranked_search(repo, query, **options).to_api()

        try:
            return await self.db(run)
        except (SearchError, RankingError) as exc:
            raise NodeServiceError("bad_query", str(exc)) from exc

    async def document(self, doc_id: int) -> dict[str, Any]:
        found = await self.db(document_details, doc_id)
        if found is None:
            raise not_found(f"no document {doc_id}: take doc_id from a search hit")
        return found

    async def feedback(
        self, doc_id: int, kind: str, query: str | None = None, user: str | None = None
    ) -> dict[str, Any]:
        """Store the mark (`user`'s: their ranking weights are fitted to their marks, `search --user`); a
        relevance mark on a peer's result trains on the page, fetched in the background (`_train_on_page`),
        and the answer names it (`fetching`)."""
        from crawler.feedback import OPENED, RELEVANT, FeedbackError, record_feedback, training_document
        from crawler.search import SearchError

        def run(repo: Repository) -> Any:
            document = repo.document(doc_id)
            pooled = document is not None and document["origin"] is not None
            marker = {"user": user} if user else {}
            record = record_feedback(repo, doc_id, kind, query=query, train=not pooled, **marker)
            if pooled and kind != OPENED and record.topic:
                return training_document(document, record.topic, kind == RELEVANT)
            return None

        try:
            marked = await self.db(run)
        except FeedbackError as exc:
            status = 404 if "no document" in str(exc) else 400
            raise NodeServiceError("not_found" if status == 404 else "bad_request", str(exc), status) from exc
        except SearchError as exc:  # the mark weighs the query's ranking signals: it must be searchable
            raise NodeServiceError("bad_query", f"the mark's query: {exc}") from exc
        if marked is None:
            return {"ok": True}
        assert self._nursery is not None  # the API serves inside `run`
        self._nursery.start_soon(self._train_on_page, marked)
        return {"ok": True, "fetching": marked.url}

    async def _train_on_page(self, marked: Any) -> None:
        """A peer's result holds only the peer's preview (`cooperation.preview_chars` characters), too little
        to train on: the page is fetched as a bookmark is (robots.txt, size and time limits), and its text
        becomes the training document; the preview does when the fetch fails. A disk that cannot take it
        loses the training document, not the node."""
        from crawler.feedback import FEEDBACK_SOURCE
        from crawler.taxonomy import FETCHED, PENDING, Taxonomy, set_marked_document

        pending = dataclasses.replace(marked, text="", status=PENDING)
        fetched = await self._fetch_training_pages(Taxonomy((marked.topic,), (pending,), FEEDBACK_SOURCE))
        page = fetched.documents[0]
        document = marked
        if page.status == FETCHED and page.text.strip():
            document = dataclasses.replace(marked, title=page.title or marked.title, text=page.text)
        else:
            log.info("training on the preview of %s: fetching it failed (%s)", marked.url, page.error)
        try:
            await self.db(set_marked_document, document)
        except (RepositoryError, sqlite3.Error, OSError) as exc:
            log.warning("could not store the marked page %s as a training document: %s", marked.url, exc)
            self._publish("log", {"message": f"feedback on {marked.url} not stored for training: {exc}"})

    # -- API: peers and cooperation -----------------------------------------------------------------------
    async def peers(self) -> dict[str, Any]:
        blocked = [{"peer_id": peer, "blocked_at": at} for peer, at in self.blocked_peers.items()]
        if self.cooperation is not None and hasattr(self.cooperation, "peers"):
            return {"peers": await self.cooperation.peers(), "blocked": blocked}
        if self.network is None:
            return {"peers": [], "blocked": blocked}
        return {"peers": self.network.peer_rows(), "blocked": blocked}

    async def block_peer(self, text: str) -> dict[str, Any]:
        """The user shuts a peer out (`text`: its id, or the start of an id the node knows): saved in
        blocked.json before anything else, refused by the network from now on (and at every start), and
        what it sent removed (`Cooperation.forget_peer`; offline, from the repository alone)."""
        from node.cooperation import store

        peer = await self._peer_named(text)
        if peer == self.peer_id:
            raise NodeServiceError("bad_request", "a node cannot block itself")
        self._save_blocked({**self.blocked_peers, peer: self.blocked_peers.get(peer, time.time())})
        if self.network is not None and hasattr(self.network, "block"):
            await self.network.block(peer)
        if self.cooperation is not None and hasattr(self.cooperation, "forget_peer"):
            forgotten = await self.cooperation.forget_peer(peer)
        else:  # offline: a repository that never cooperated has no cooperation tables yet

            def forget(repo: Repository) -> dict[str, Any]:
                store.ensure_schema(repo)
                return store.forget_peer(repo, peer)

            forgotten = await self.db(forget)
            forgotten["meta_rebuilt"] = []
            forgotten.pop("topics")
        self._publish(
            "log", {"message": f"blocked peer {peer}: {forgotten['results_removed']} results removed"}
        )
        self._publish("peer", {"peer": peer, "blocked": True})
        return {"peer_id": peer, "blocked": True, **forgotten}

    async def unblock_peer(self, text: str) -> dict[str, Any]:
        """Let a blocked peer in again; it comes back as any peer does (its models and results are
        fetched anew)."""
        peer = self._blocked_named(text)
        self._save_blocked({p: at for p, at in self.blocked_peers.items() if p != peer})
        if self.network is not None and hasattr(self.network, "unblock"):
            self.network.unblock(peer)
        self._publish("peer", {"peer": peer, "blocked": False})
        return {"peer_id": peer, "blocked": False}

    def _save_blocked(self, blocked: dict[str, float]) -> None:
        """Save the list first: a change the file does not hold would be lost at the next start."""
        from node.network import save_blocked_peers

        try:
            save_blocked_peers(self.data.blocked_peers, blocked)
        except OSError as exc:
            raise NodeServiceError(
                "blocked_peers", f"the blocked peers could not be saved: {exc}", 507
            ) from exc
        self.blocked_peers = blocked

    async def _peer_named(self, text: str) -> str:
        """The peer `text` names: a full peer id, or the start of exactly one id the node knows (a
        neighbour, or the origin of a model or result it holds)."""
        from p2p.errors import WireError
        from p2p.value_checks import check_peer_id

        text = text.strip()
        if not text:
            raise NodeServiceError(
                "bad_request", "name a peer: its id, or the start of it (see `topicswarm peers`)"
            )
        known = set(await self.db(_peer_origins))
        if self.cooperation is not None and hasattr(self.cooperation, "known_peers"):
            known.update(self.cooperation.known_peers())
        elif self.network is not None and hasattr(self.network, "peer_rows"):
            known.update(row["peer_id"] for row in self.network.peer_rows())
        candidates = known | set(self.blocked_peers)
        candidates.discard(self.peer_id)  # the node's own id: named only in full (and then refused)
        matches = sorted(peer for peer in candidates if peer.startswith(text))
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise NodeServiceError(
                "bad_request", f"{shown(text)} starts {len(matches)} peer ids: give more of it"
            )
        if text == self.peer_id:
            return text
        try:
            return check_peer_id(text, "peer")
        except WireError as exc:
            raise not_found(
                f"no peer id known here starts with {shown(text)}: see `topicswarm peers`"
            ) from exc

    def _blocked_named(self, text: str) -> str:
        text = text.strip()
        matches = [peer for peer in self.blocked_peers if text and peer.startswith(text)]
        if len(matches) != 1:
            what = "no blocked peer" if not matches else f"{len(matches)} blocked peers"
            raise NodeServiceError(
                "bad_request" if matches else "not_found",
                f"{what} ids start with {text!r}: see the blocked list of `topicswarm peers`",
                400 if matches else 404,
            )
        return matches[0]

    def require_cooperation(self, what: str) -> Any:
        if self.cooperation is None:
            if self.network is None:
                raise unavailable(
                    f"{what} needs peers: this node runs offline; restart it without --offline "
                    "(and with --bootstrap MULTIADDR to join a network)"
                )
            raise unavailable(f"{what} needs the cooperation layer, which this installation lacks")
        return self.cooperation

    async def cooperate(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call a public method of the cooperation layer ("models") or of one of its parts
        ("refinement.refine"), mapping its errors to API errors."""
        coop = self.require_cooperation(method.rpartition(".")[2].replace("_", " "))
        fn = coop
        for name in method.split("."):
            fn = getattr(fn, name, None)
        if fn is None:
            raise unavailable(f"the cooperation layer has no {method!r} yet")
        try:
            return await fn(*args, **kwargs)
        except NodeServiceError:
            raise
        except (KeyError, LookupError) as exc:
            raise not_found(str(exc.args[0]) if exc.args else str(exc)) from exc
        except ValueError as exc:
            raise NodeServiceError("bad_request", str(exc)) from exc


class _StartedHook:
    """A task_status that calls back when the task reports it has started."""

    def __init__(self, callback: Callable[[Any], None]) -> None:
        self.started = callback


class _CrawlHold:
    """`async with await service.hold_crawl():` the engine is idle inside, and resumes after."""

    def __init__(self, service: NodeService) -> None:
        self.service = service

    async def __aenter__(self) -> None:
        self.service._holds += 1
        self.service._poke()
        await self.service._crawl_idle.wait()

    async def __aexit__(self, *exc: object) -> None:
        self.service._holds -= 1
        self.service._poke()


# -- repository queries (run in the side connection's worker thread) -------------------------------------
def ensure_schemas(repo: Repository) -> None:
    """Every component's tables, created at start: reading (a search, the feedback it weighs, the topics)
    then never has to create one, which a full disk would refuse."""
    from crawler import feedback, ranking, taxonomy

    ensure_schema(repo)
    for component in (ranking, feedback, taxonomy):
        component.ensure_schema(repo)


def free_bytes(path: Path) -> int:
    """Free space for this user on the file system holding `path`."""
    return shutil.disk_usage(path).free


def _peer_origins(repo: Repository) -> list[str]:
    """Peers whose models or results the repository holds."""
    rows = repo.db.execute("SELECT DISTINCT origin FROM documents WHERE origin IS NOT NULL").fetchall()
    peers = {row[0] for row in rows}
    if table_exists(repo, "coop_models"):
        peers.update(row[0] for row in repo.db.execute("SELECT DISTINCT origin FROM coop_models"))
    return sorted(peers - {"local"})


def taxonomy_seeds(taxonomy: Any) -> dict[str, list[str]]:
    """Topic -> URLs of its bookmarks (positive examples), the crawl's start points."""
    from crawler.taxonomy import POSITIVE

    by_topic: dict[str, list[str]] = {}
    for doc in taxonomy.documents:
        if doc.polarity == POSITIVE and doc.url:
            by_topic.setdefault(doc.topic, []).append(doc.url)
    return by_topic


def topic_rows(repo: Repository) -> list[dict[str, Any]]:
    """The API's topic list: the taxonomy with local/pooled counts, harvest rate, keywords."""
    if not table_exists(repo, "topics"):
        return []
    keywords = load_keywords(repo)
    rates = harvest_rates(repo)
    rows = []
    for key, name, parent in repo.db.execute("SELECT key, name, parent FROM topics ORDER BY key").fetchall():
        local, pooled = repo.db.execute(
            "SELECT coalesce(sum(origin IS NULL), 0), coalesce(sum(origin IS NOT NULL), 0) FROM documents "
            "WHERE accepted = 1 AND (topic = ? OR topic LIKE ? ESCAPE '\\')",
            [key, subtopic_pattern(key)],
        ).fetchone()
        rows.append(
            {
                "key": key,
                "name": name,
                "parent": parent or None,
                "local": int(local),
                "pooled": int(pooled),
                "harvest_rate": rates.get(key, 0.0),
                "quality": {"accuracy": None},
                "keywords": list(keywords.get(key, ())),
                "crawl": RUNNING,
                "model_version": None,
            }
        )
    return rows


def replace_settings(config: Config, **sections: dict[str, Any]) -> Config:
    """`config` with some settings of some sections replaced (the demo and tests tune nodes this way)."""
    changed = {
        name: dataclasses.replace(getattr(config, name), **values) for name, values in sections.items()
    }
    return dataclasses.replace(config, **changed)


def root_cause(exc: BaseException) -> str:
    """The innermost message of nested exception groups and chains (what a user can act on)."""
    cause = innermost(exc)
    return f"{type(cause).__name__}: {cause}"


def innermost(exc: BaseException) -> BaseException:
    """The first leaf of nested exception groups, followed down its chain of causes."""
    while True:
        if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        elif exc.__cause__ is not None:
            exc = exc.__cause__
        else:
            return exc
