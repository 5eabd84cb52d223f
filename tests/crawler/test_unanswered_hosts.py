"""Hosts that never answer must not take the crawl's fetch slots from hosts that do (as Heritrix's or
Mercator's fixed fetcher pools must not fill up with dead servers): requests to hosts that never answered
yet hold at most `unanswered_hosts_share` of `concurrent_requests` at once. The silent hosts are still
tried, their links wait, and the live hosts' pages are fetched meanwhile."""

from __future__ import annotations

from functools import partial

import pytest
import trio

from crawler.engine import Crawler
from crawler.repository import Repository
from crawler.repository_schema import QUEUED
from crawler.settings import CrawlSettings
from simnet.web import serve_web

SETTINGS = CrawlSettings(
    download_delay=0.0,
    autothrottle_enabled=False,
    concurrent_requests=8,
    concurrent_requests_per_domain=2,
    unanswered_hosts_share=0.25,  # 2 of the 8 slots
    download_timeout=600.0,  # the silent hosts' requests hang for the whole test
    allowed_hosts=("127.0.0.0/8",),
    sitemaps_enabled=False,
    feeds_enabled=False,
)
UNANSWERED_SLOTS = 2
LIVE_PAGES = 30
HANG_GUARD = 30.0


class SilentHosts:
    """Loopback servers that accept connections and never reply: to a crawler, hosts that never answer."""

    def __init__(self) -> None:
        self.ports: list[int] = []
        self.connections = 0

    async def start(self, nursery: trio.Nursery, count: int) -> None:
        for _ in range(count):
            listeners = await nursery.start(partial(trio.serve_tcp, self._hold, 0, host="127.0.0.1"))
            self.ports.append(listeners[0].socket.getsockname()[1])

    async def _hold(self, stream: trio.SocketStream) -> None:
        self.connections += 1
        await trio.sleep_forever()

    def urls(self) -> list[str]:
        return [f"http://127.0.0.1:{port}/page" for port in self.ports]


async def crawl_until_live_pages(crawler: Crawler, pages: int) -> int:
    """Run the crawl until it stored `pages` pages (or the hang guard ends it), then stop it, abandoning
    the requests that hang; returns the most fetches of the "silent" topic seen in flight at once."""
    most = 0
    stored = 0

    def count(stats) -> None:
        nonlocal stored
        stored = stats.pages

    crawler.add_listener(count)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(crawler.run)
        with trio.move_on_after(HANG_GUARD):
            while stored < pages:
                most = max(most, crawler.in_flight_of({"silent"}))
                await trio.sleep(0.001)
        crawler.stop()
        crawler.abandon_in_flight()
    return most


@pytest.mark.trio
async def test_live_hosts_are_crawled_while_hosts_that_never_answer_hold_only_their_share(tmp_path):
    silent = SilentHosts()
    settings = CrawlSettings(**{**SETTINGS.__dict__, "stats_interval": 0.01})
    async with serve_web("fixture") as web, trio.open_nursery() as servers:
        await silent.start(servers, 12)  # more than the crawl's 8 slots
        repo = Repository(tmp_path / "repo.db")
        crawler = Crawler(repo, settings)
        crawler.add_seeds(silent.urls(), topic="silent", priority=2.0)  # served first within their topic
        crawler.add_seeds([web.site_url("postgresql")], topic="live")  # 100 pages on one host
        most_silent = await crawl_until_live_pages(crawler, LIVE_PAGES)
        await crawler.aclose()
        servers.cancel_scope.cancel()
    assert crawler.stats.pages >= LIVE_PAGES  # the live host's pages, fetched while the silent ones hang
    assert most_silent == UNANSWERED_SLOTS  # the silent hosts held their share of the slots, no more
    assert silent.connections == UNANSWERED_SLOTS  # and were tried, as many at once as their share
    queued = {url for (url,) in repo.db.execute("SELECT url FROM frontier WHERE state = ?", (QUEUED,))}
    assert set(silent.urls()) <= queued  # their links wait for an answer
    repo.close()
