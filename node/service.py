"""The node service: one running peer around one data directory, under trio.

It composes the crawler (engine, and the focus loop when topics are imported), the peer-to-peer service
(only when the node runs networked; libp2p is imported lazily because importing it takes seconds) and the
cooperation layer (`node.cooperation.Cooperation`, when installed), and serves them to the control API.

The service keeps the node's lifecycle, the crawl's control (the crawl state per topic, the supervisor that
runs the engine, holds while the frontier is edited, revisits) and the way to the cooperation layer
(`cooperate`). The rest are parts of their own, attributes the API calls directly, as the cooperation layer's
`results` and `refinement` are: `topics` (`node.topics.Topics`: import, keywords, the crawl's focus, the
topic list with classifier quality, meta), `search` (`node.search.Search`: ranked search, documents,
feedback), `report` (`node.status_report.StatusReport`: the crawl's figures and why it idles, status,
metrics, stats events) and `peer_blocks` (`node.peer_blocks.PeerBlocks`: the peers answer and the user's
blocked peers). The parts reach the node through its public `db`, `publish`, `poke`, `hold_crawl`,
`add_seeds` and crawl state (`crawl_state`, `crawl_running`, `wants_crawl`, `held_topics`, `stopping`).

Database access: the crawl engine owns one SQLite connection and writes through it from its writer thread;
everything else the node does (API reads, metrics, crawl state, topics, feedback) goes through a second
connection, one call at a time, in a worker thread (`NodeService.db`), so the event loop never waits on disk.

A shutdown (SIGINT/SIGTERM, or `request_stop`) stops the crawler gracefully: in-flight pages are stored, the
frontier is persisted, `api.json` is removed. Crawl state per topic, the frontier and the metrics history are
in the repository, so a restarted node continues where it was.
"""

from __future__ import annotations

import json
import logging
import math
import os
import signal
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import trio

from crawler.engine import Crawler
from crawler.errors import RepositoryError
from crawler.repository import Repository
from crawler.revisits import mark_due
from crawler.settings import CrawlSettings
from node.config import Config, ConfigError, load_config
from node.datadir import DataDir, free_bytes, write_atomically
from node.errors import NodeServiceError, not_found, unavailable
from node.events import EventBus
from node.metrics import (
    ALL_TOPICS,
    CRAWL_STATES,
    PAUSED,
    RUNNING,
    STOPPED,
    ensure_schema,
    load_crawl_states,
    save_crawl_state,
)
from node.peer_blocks import PeerBlocks
from node.search import Search
from node.status_report import StatusReport
from node.stored_state import document_counts, score_links
from node.topics import Topics
from node.wording import counted

log = logging.getLogger(__name__)
T = TypeVar("T")
LINK_SCORES_CHECK_S = 10.0  # how often the link-score loop counts the pages (a cheap count)
BLOCKED_CHECK_S = 1.0  # shortest wait before a crawl that found only bad hosts looks again
DISK_CHECK_S = 30.0  # after a full disk, how often the crawl checks whether space was freed
DISK_ROOM_BYTES = 16 * 2**20  # free space gained since the disk filled that resumes the crawl
ABANDON_WAIT_S = 5.0  # how long a shutdown waits for the crawl to end once its requests are cancelled
STOP_ANSWER_SECONDS = 0.2  # how long a stop through the API waits for its answer to leave
# The cooperation layer's methods (`NodeService.cooperate`) as the work a refusal names: "building a
# meta-classifier needs peers", where the method's name ("build meta") read as an internal action.
COOPERATION_WORK = {
    "models": "listing peers' models",
    "meta": "a meta-classifier",
    "meta_protocol.build": "building a meta-classifier",
    "set_loss": "setting a meta-classifier's loss",
    "refinement.refine": "refining a topic into subtopics",
    "refinement.proposals": "listing subtopic proposals",
    "refinement.accept_proposal": "accepting a subtopic proposal",
    "refinement.reject_proposal": "dismissing a subtopic proposal",
}


class NodeService:
    """A running node: `await run()` until `request_stop()` or a signal; the API calls the other methods
    and its parts'."""

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
        self.crawler: Crawler | None = None
        self.crawl_running = False  # whether the engine runs now (`_crawl_supervisor` runs it)
        self.nursery: trio.Nursery | None = None  # while the node runs: its parts start tasks in it too
        self._repo: Repository | None = None
        self._side: Repository | None = None
        self._db_limiter = trio.CapacityLimiter(1)
        self._states: dict[str, str] = {}
        self._changed = trio.Event()
        self._holds = 0
        self._crawl_idle = trio.Event()
        self._crawl_idle.set()
        self._stop = trio.Event()
        self.topics = Topics(self)
        self.report = StatusReport(self)
        self.peer_blocks = PeerBlocks(self)
        self.search = Search(self)

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
            self.peer_blocks.load()
            if self.networked:
                from node.network import check_listen_addrs

                check_listen_addrs(self)
            async with trio.open_nursery() as nursery:
                self.nursery = nursery
                if self.handle_signals:
                    nursery.start_soon(self._stop_on_signals)
                if self.networked:
                    await self._start_network(nursery)
                await self._start_cooperation(nursery)
                from node.api import serve_api

                await self.topics.refresh_focus()
                self.api_url = await nursery.start(serve_api, self)
                self._write_api_file()
                nursery.start_soon(self.topics.resume_stored)
                nursery.start_soon(self._crawl_supervisor)
                nursery.start_soon(self.report.metrics_loop)
                nursery.start_soon(self._link_scores_loop)
                nursery.start_soon(self.report.stats_event_loop)
                task_status.started(self)
                log.info("node ready (%s): API at %s", self.peer_id or "offline", self.api_url)
                await self._stop.wait()
                self._say_stopping()
                await self._shutdown_crawl()
                await self.report.sample_at_stop()
                nursery.cancel_scope.cancel()
        finally:
            try:
                if self.crawler is not None:
                    with trio.CancelScope(shield=True):
                        await self.crawler.aclose()
                for repo in (self._repo, self._side):
                    if repo is not None:
                        repo.close()
                self.topics.held_out.close()
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

        assert self.nursery is not None  # the API serves inside `run`
        self.nursery.start_soon(stop_after_the_answer)

    async def _stop_on_signals(self) -> None:
        # SIGHUP: the terminal of a node run in the foreground closed; its default killed the node unsaved
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
            count = 0
            async for signum in signals:
                count += 1
                if count == 1:
                    log.info("signal %s: stopping (finishing in-flight pages; again to stop at once)", signum)
                    self.request_stop()
                elif count == 2 and self.crawler is not None and self.crawl_running:
                    self.crawler.stop()  # before the cancel: else their links are taken again at once
                    cancelled = counted(self.crawler.abandon_in_flight(), "request")
                    log.info(
                        "signal %s again: %s in flight cancelled (the links stay queued)", signum, cancelled
                    )
                elif self.nursery is not None:  # nothing in flight to cancel, or a third signal
                    self.nursery.cancel_scope.cancel()

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
        self.publish("log", {"message": f"cooperation failed: {root_cause(exc)}; crawling on alone"})

    async def db(self, fn: Callable[..., T], *args: Any) -> T:
        """Run `fn(side_repository, *args)` in a worker thread, one call at a time."""
        return await trio.to_thread.run_sync(lambda: fn(self._side, *args), limiter=self._db_limiter)

    # -- crawl control ------------------------------------------------------------------------------------
    def wants_crawl(self) -> bool:
        """Whether the engine may run: a paused or stopped topic is held by the frontier, which serves none
        of its queue (`_sync_paused_topics`), so the engine runs while any other queue has entries. (Judged
        by the topics with a stored state, a node whose topics were imported before it ran stopped every
        topic's crawl when one was paused.)"""
        return not (self.stopping or self._holds or self._states.get(ALL_TOPICS, RUNNING) != RUNNING)

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def held_topics(self) -> dict[str, str]:
        """Topics paused or stopped (key -> state) while the crawl runs for the others."""
        return {
            key: state
            for key, state in sorted(self._states.items())
            if key != ALL_TOPICS and state != RUNNING
        }

    def _sync_paused_topics(self) -> None:
        """The frontier serves no queue of a topic that is paused or stopped (its entries wait there)."""
        if self.crawler is not None:
            self.crawler.frontier.set_paused_topics(self.held_topics())

    def poke(self) -> None:
        """The crawl state or the frontier changed: the supervisor looks again, a crawl no longer wanted
        stops."""
        self._changed.set()
        if self.crawler is not None and self.crawl_running and not self.wants_crawl():
            self.crawler.stop()

    async def _crawl_supervisor(self) -> None:
        """Run the crawler whenever the crawl state wants it; else wait for a change."""
        assert self.crawler is not None
        self.crawler.add_listener(self.report.on_stats)
        while True:
            if self.wants_crawl() and (
                (self.crawler.frontier.servable_size() > 0 and not self.limit_reached())
                or self.crawler.revisit_due_in() == 0
            ):
                self._crawl_idle = trio.Event()
                self.crawl_running = True
                try:
                    stats = await self.crawler.run(self.max_pages)
                    # before the engine counts as idle: a hold waiting for idle edits the frontier on the
                    # engine's connection, which must not be inside this worker thread's transaction
                    if stats.reason != "disk_full":
                        await self.topics.record_focus_stats()
                finally:
                    self.crawl_running = False
                    self._crawl_idle.set()
                self.report.run_ended(stats)
                log.info("crawl run ended (%s) after %d pages", stats.reason, stats.pages)
                self.publish("log", {"message": f"crawl paused: {stats.reason}", "reason": stats.reason})
                if stats.reason == "disk_full":
                    self.publish("log", {"message": self.report.idle_detail("disk_full", stats.total_pages)})
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
        return self.crawler.revisit_due_in() if self.wants_crawl() else math.inf

    def limit_reached(self) -> bool:
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
        self.poke()
        self.publish("log", {"message": f"{counted(due, 'stored page')} due for a revisit now"})
        answer: dict[str, Any] = {"due": due, "not_revisited": missing, "state": self.crawl_state()}
        if due and not self.wants_crawl():
            answer["detail"] = "the crawl is not running: `topicswarm crawl start` fetches them"
        return answer

    async def set_crawl_state(self, state: str, topic: str | None = None) -> dict[str, Any]:
        """Start, pause or stop the crawl (of `topic`; all topics when None). A pause lets the requests in
        flight finish and stores their pages; a stop cancels them at once (their links stay queued), so a
        server slow to answer never holds it up. Either lasts until `start`, across restarts too."""
        if state not in CRAWL_STATES:
            raise NodeServiceError("bad_request", f"crawl state must be one of {', '.join(CRAWL_STATES)}")
        if topic is not None:
            await self.topics.require(topic)
        now = time.time()
        if topic is None:  # every topic, those never given a state of their own too
            for key in sorted({*await self.topics.keys(), *self._states} - {ALL_TOPICS}):
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
        self.poke()
        if topic is not None:
            answer["topic"] = topic
        reason = "" if self.crawl_running and self.wants_crawl() else self.report.idle_reason()
        answer["crawl"] = {
            "state": self.crawl_state(),
            "reason": reason,
            "detail": self.report.idle_detail(reason, self.crawler.stats.total_pages if self.crawler else 0),
        }
        self.publish("log", {"message": f"crawl {state}" + (f" for {topic}" if topic else "")})
        return answer

    async def adopt_topics(self, keys: Iterable[str]) -> None:
        """Crawl states for the topics of an import: a new one runs, one held before stays held."""
        now = time.time()
        for key in keys:
            self._states.setdefault(key, RUNNING)
            await self.db(save_crawl_state, key, self._states[key], now)
        known = set(await self.topics.keys())  # a topic the new file lacks is gone: so is its held state
        self._states = {k: v for k, v in self._states.items() if k == ALL_TOPICS or k in known}
        self._sync_paused_topics()

    async def add_seeds(self, urls: Sequence[str], topic: str | None = None, priority: float = 1.0) -> int:
        """Queue start URLs (the engine pauses for the edit, so the frontier has one writer)."""
        assert self.crawler is not None
        async with await self.hold_crawl():
            added = self.crawler.add_seeds(urls, topic=topic, priority=priority)
        return added

    # -- events and link scores ---------------------------------------------------------------------------
    def publish(self, kind: str, data: dict[str, Any]) -> None:
        """Events to the UI, the cooperation layer's too (its peer, model, meta and refine events)."""
        self.events.publish(kind, data)

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

    # -- the node on the network --------------------------------------------------------------------------
    @property
    def peer_id(self) -> str | None:
        return None if self.network is None else str(self.network.peer_id)

    def addrs(self) -> list[str]:
        return [] if self.network is None else list(self.network.addrs())

    # -- API: cooperation ---------------------------------------------------------------------------------
    def require_cooperation(self, method: str) -> Any:
        """The cooperation layer, which `method` (its name in `cooperate`) needs; a refusal in plain words
        when it is missing ("build meta needs peers" named the method, not the work)."""
        what = COOPERATION_WORK.get(method, method.rpartition(".")[2].replace("_", " "))
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
        coop = self.require_cooperation(method)
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
        self.service.poke()
        await self.service._crawl_idle.wait()

    async def __aexit__(self, *exc: object) -> None:
        self.service._holds -= 1
        self.service.poke()


# -- repository queries (run in the side connection's worker thread) -------------------------------------
def ensure_schemas(repo: Repository) -> None:
    """Every component's tables, created at start: reading (a search, the feedback it weighs, the topics)
    then never has to create one, which a full disk would refuse."""
    from crawler import feedback, ranking, taxonomy

    ensure_schema(repo)
    for component in (ranking, feedback, taxonomy):
        component.ensure_schema(repo)


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
