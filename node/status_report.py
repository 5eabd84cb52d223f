"""What a running node reports about itself: the crawl's live figures and why it does not crawl, the API's
`status` and `metrics` answers, the `stats` events to the UI and the metrics samples kept for history.

`StatusReport` is the service's `report`. It keeps the figures of the engine's finished runs (pages,
seconds, why the last one ended), which only the report reads, and reads everything else from the service:
a status is judged from the node's present state, not from a run's own reason, which can be stale.
"""

from __future__ import annotations

import logging
import math
import sqlite3
import time
from typing import TYPE_CHECKING, Any

import trio

from crawler.errors import RepositoryError, RepositoryFull
from crawler.revisits import next_revisit_at
from node.datadir import free_bytes
from node.metrics import PAUSED, RUNNING, STOPPED, MetricsSample, record_sample, samples_since
from node.stored_state import document_counts, harvest_figures, harvest_rates
from node.wording import counted, held_topics_text, readable, start_held

if TYPE_CHECKING:
    from crawler.crawl_stats import CrawlStats
    from node.service import NodeService

log = logging.getLogger(__name__)

# what the crawl does while the crawler does not run, by reason (see StatusReport.idle_reason)
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


class StatusReport:
    """The figures and answers of one node's reporting (`NodeService.report`)."""

    def __init__(self, service: NodeService) -> None:
        self.service = service
        self._last_stats: CrawlStats | None = None
        self._stats_dirty = False
        # pages stored and seconds crawled by the engine's finished runs since the node started (a run
        # ends whenever the node edits the frontier, so one run alone is only a fragment of the crawl)
        self._runs_pages = 0
        self._runs_seconds = 0.0
        self._last_reason = ""

    # -- the engine's runs --------------------------------------------------------------------------------
    def on_stats(self, stats: CrawlStats) -> None:
        self._last_stats = stats
        self._stats_dirty = True

    def run_ended(self, stats: CrawlStats) -> None:
        self._runs_pages += stats.pages
        self._runs_seconds += stats.elapsed
        self._last_reason = stats.reason

    # -- API: status and metrics --------------------------------------------------------------------------
    async def status(self) -> dict[str, Any]:
        service = self.service
        figures = self.crawl_figures()
        if service.crawler is not None and service.crawler.settings.revisit_enabled:
            due = await service.db(next_revisit_at, (), service.crawler.listings)
            figures["revisits"]["next_in_s"] = None if due is None else max(0.0, due - time.time())
        counts = await service.db(document_counts)
        return {
            "peer_id": service.peer_id,
            "addrs": service.addrs(),
            "uptime_s": time.time() - service.started_at,
            "networked": service.network is not None,
            "cooperation": service.cooperation is not None,
            "crawl": figures,
            **await service.db(harvest_figures),
            "peers_online": self._peers_online(),
            "peers_sharing_topics": self._peers_sharing_topics(),
            # topic keys too long to announce: peers never meet these topics (see Exchange.announce)
            "topics_not_shared": list(
                getattr(getattr(service.cooperation, "exchange", None), "unshared", [])
            ),
            "bytes_exchanged": self._traffic(),
            "bytes_by_message": self._traffic_by_message(),
            "documents": counts,
            "api": service.api_url,
            "data_dir": str(service.data.root),
        }

    async def metrics(self, since: float = 0.0) -> dict[str, Any]:
        samples = await self.service.db(samples_since, since)
        return {"samples": [s.to_dict() for s in samples]}

    # -- events and samples -------------------------------------------------------------------------------
    async def stats_event_loop(self) -> None:
        """One coalesced `stats` event per interval (only when something changed or someone listens)."""
        service = self.service
        while True:
            await trio.sleep(service.settings.stats_event_interval)
            if service.events.subscribers and (self._stats_dirty or service.crawl_running):
                self._stats_dirty = False
                service.publish("stats", self.crawl_figures())

    async def metrics_loop(self) -> None:
        while True:
            try:
                await self._sample_metrics()
            except RepositoryFull as exc:  # the crawl's stop says so to the user; a sample is not worth more
                log.debug("metrics sample not stored: %s", exc)
            await trio.sleep(self.service.settings.metrics_interval)

    async def sample_at_stop(self) -> None:
        """The figures the node stopped at, for `status` to show while it does not run (the periodic
        samples lag the crawl by up to `metrics_interval`)."""
        try:
            await self._sample_metrics()
        except (RepositoryError, sqlite3.Error, OSError) as exc:
            log.warning("the last metrics sample was not stored: %s", exc)

    async def _sample_metrics(self) -> None:
        figures = self.crawl_figures()
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
            harvest=await self.service.db(harvest_rates),
        )
        await self.service.db(record_sample, sample, self.service.settings.metrics_keep)

    # -- the crawl's figures ------------------------------------------------------------------------------
    def crawl_figures(self) -> dict[str, Any]:
        """The crawl's live figures. `state` is what the user set (running, paused, stopped); `activity`
        what the crawl does (crawling, pausing, stopping, finished, paused, stopped, waiting, idle),
        `reason` and `detail` why it does not crawl and what to do; `pages_per_s` is the rate of the last
        few seconds (0 when nothing is fetched) and `session` the pages stored since the node started over
        the seconds it crawled, so a finished crawl still shows how fast it went."""
        service, crawler = self.service, self.service.crawler
        assert crawler is not None
        running = service.crawl_running
        stats = crawler.stats if self._last_stats is None else self._last_stats
        if running:
            stats = crawler.stats if crawler.stats.elapsed >= stats.elapsed else stats
        reason = "" if running else self.idle_reason()
        return {
            "state": service.crawl_state(),
            "activity": self._activity(reason),
            "active": running,
            "reason": reason,
            "detail": self.idle_detail(reason, stats.total_pages),
            "pages": stats.total_pages,  # the node's own crawl: peers' pooled results not counted
            "pages_per_s": stats.recent_pages_per_s if running else 0.0,
            "session": self._session_figures(stats),
            "max_pages": service.max_pages,
            "frontier_size": crawler.queued,
            "hosts_waiting": crawler.waiting_hosts(),
            "beyond_tunnel": self._beyond_tunnel(),
            "errors_by_kind": dict(stats.errors_by_kind),
            "bytes_crawled": stats.bytes,
            "in_flight": stats.in_flight if running else 0,
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
            "held_topics": service.held_topics(),  # topics paused or stopped while the others are crawled
            "held_links": sum(crawler.frontier.held_per_topic().values()),  # the links queued they hold
        }

    def _activity(self, idle_reason: str) -> str:
        """crawling; pausing or stopping while the requests in flight end after a pause, a stop or the
        node's shutdown; else what the idle crawl waits for (IDLE_ACTIVITY)."""
        service = self.service
        if not service.crawl_running:
            return IDLE_ACTIVITY.get(idle_reason, "waiting")
        if service.wants_crawl():
            return "crawling"
        return "stopping" if service.stopping or service.crawl_state() == STOPPED else "pausing"

    def _session_figures(self, current: CrawlStats) -> dict[str, Any]:
        """Pages stored since the node started over the seconds the crawler ran (its pauses left out)."""
        pages, seconds = self._runs_pages, self._runs_seconds
        if self.service.crawl_running:
            pages, seconds = pages + current.pages, seconds + current.elapsed
        return {
            "pages": pages,
            "crawl_seconds": round(seconds, 1),
            "pages_per_s": pages / seconds if seconds > 0 else 0.0,
        }

    # -- why the crawl does not crawl ---------------------------------------------------------------------
    def idle_reason(self) -> str:
        """Why the crawler does not run now, judged from the node's present state (a finished run's own
        reason can be stale: a restarted node at its page limit never runs)."""
        service, crawler = self.service, self.service.crawler
        assert crawler is not None
        state = service.crawl_state()
        if service.stopping:
            return "shutting_down"
        if state != RUNNING:
            return state
        if service.limit_reached():
            return "max_pages"
        if len(crawler.frontier) == 0:
            return "exhausted" if crawler.stats.total_pages else "no_seeds"
        if crawler.frontier.servable_size() == 0:
            return "topics_held"
        if self._last_reason == "disk_full" or (self._last_reason == "blocked" and crawler.blocked()):
            return self._last_reason
        return "starting"

    def idle_detail(self, reason: str, pages: int) -> str:
        """What an idle reason means for the user, and what to do about it."""
        root = self.service.data.root
        if reason == "disk_full":
            free = free_bytes(root) / 2**20
            return (
                f"the disk holding {root} is full ({free:.0f} MB free): the crawl stopped, nothing "
                "stored was lost and the pages it could not store are queued again; free some space and it "
                "resumes (or at once: `topicswarm crawl start`)"
            )
        details = {
            "max_pages": f"reached max_pages ({pages} of {self.service.max_pages} documents); raise it with "
            "`topicswarm node run --max-pages N` or [node] max_pages in config.toml",
            "exhausted": self._exhausted_detail() if reason == "exhausted" else "",
            "no_seeds": "nothing to crawl: import topics with `topicswarm topics import FILE` or give "
            "`topicswarm node run --seed URL`",
            "topics_held": f"what is queued belongs to {self._held_by()}" if reason == "topics_held" else "",
            "blocked": self._blocked_detail() if reason == "blocked" else "",
            PAUSED: "by the user; `topicswarm crawl start` resumes (in the UI: ctrl+p, Start crawling)",
            STOPPED: "by the user; `topicswarm crawl start` resumes (in the UI: ctrl+p, Start crawling)",
            "shutting_down": "the node is shutting down",
            "starting": "about to crawl",
        }
        return details.get(reason, "")

    def _beyond_tunnel(self) -> dict[str, Any] | None:
        """Links of rejected pages the focus gave up at its tunnel depth and never reached otherwise (None
        without a focused crawl): where a crawl that ends before `max_pages` could have gone on."""
        crawler = self.service.crawler
        count = getattr(crawler.policy, "beyond_tunnel", None) if crawler else None
        if count is None:
            return None
        links, at_least = count()
        return {"links": links, "at_least": at_least, "tunnel_depth": self.service.config.focus.tunnel_depth}

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
        """Why the crawl waits: first the topics the user paused or stopped that hold queued links, as
        starting one crawls at once (naming only the failing hosts sent a user who had paused a topic after
        the wrong fix), then the hosts that failed repeatedly and their next try."""
        crawler = self.service.crawler
        assert crawler is not None
        wait = crawler.next_ready_in()
        when = "never: they were given up" if wait == math.inf else f"in {readable(wait)}"
        hosts = (
            "belongs to a host that failed repeatedly (down, or this computer offline); its links wait, and "
            f"the next such host is tried again {when} ([crawler] host_bad_retry_delay in config.toml)"
        )
        held = sum(crawler.frontier.held_per_topic().values())
        if not held:
            return f"every queued link {hosts}"
        belong = "belongs" if held == 1 else "belong"
        return (
            f"{counted(held, 'link')} queued {belong} to {self._held_by()}; every other queued link {hosts}"
        )

    def _held_by(self) -> str:
        """The topics the user paused or stopped that hold queued links, and how to start them."""
        crawler = self.service.crawler
        assert crawler is not None
        holding = crawler.frontier.held_per_topic()
        held = {key: state for key, state in self.service.held_topics().items() if key in holding}
        return f"{held_topics_text(held)}: {start_held(held)} (in the UI: s on the Topics screen)"

    # -- network figures ----------------------------------------------------------------------------------
    def _peers_online(self) -> int:
        network = self.service.network
        return 0 if network is None else int(network.peers_online())

    def _peers_sharing_topics(self) -> int:
        network = self.service.network
        return 0 if network is None else int(network.peers_sharing_topics())

    def _traffic(self) -> dict[str, int]:
        """Bytes the p2p service exchanged (the cooperation layer's exchanges run over it)."""
        traffic = getattr(self.service.network, "traffic", None)
        return {d: int(n) for d, n in traffic().items()} if traffic else {"in": 0, "out": 0}

    def _traffic_by_message(self) -> dict[str, int]:
        """Bytes per direction and message type ("out model_response", "in announcement", ...)."""
        by_message = getattr(self.service.network, "bytes_by_message", None)
        return by_message() if by_message else {}
