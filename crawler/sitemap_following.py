"""Sitemap and feed following inside the crawl: the lists of links a crawl reads (`crawler.sitemaps`,
`crawler.feeds`) turned into frontier entries, and when each is read again (`crawler.revisits`).

A list is not a document: nothing of it is stored but a `SitemapRead`, written with its batch, saying how
many URLs it listed and when it falls due again. The engine composes one `SitemapFollower`; it queues
through the engine's `LinkFollower`, so a listed URL is judged by the same rules as a page's link.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, NamedTuple

from crawler.crawl_stats import CrawlCounters
from crawler.frontier import Frontier, FrontierEntry
from crawler.link_following import LinkFollower
from crawler.parse import Link
from crawler.policy import CrawledPage, FocusPolicy, PageVerdict
from crawler.repository import Repository
from crawler.revisits import Revisit, mark_changed, next_interval, retry_interval
from crawler.settings import CrawlSettings
from crawler.sitemaps import SitemapEntry, listed_hosts
from crawler.urls import host_of


class SitemapRead(NamedTuple):
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

    def write(self, repo: Repository, now: float) -> None:
        """Its row, and the stored pages it dates after their fetch made due (inside the batch's
        transaction)."""
        repo.record_sitemap(
            self.entry, now, now + self.wait, self.urls, self.interval, self.validators, self.kind
        )
        mark_changed(repo, now, self.lastmods)


def _listed_link(item: SitemapEntry, kind: str) -> Link:
    """A sitemap's or feed's entry as a link; a feed entry's words are its anchor text and context."""
    return Link(item.url, item.text, kind, 0, 0, ((0, item.text),) if item.text else ())


class SitemapFollower:
    """Reads the crawl's sitemaps and feeds into its frontier, counting them in the crawler's counters."""

    def __init__(
        self,
        settings: CrawlSettings,
        frontier: Frontier,
        links: LinkFollower,
        counters: CrawlCounters,
        fetcher: Any,
    ) -> None:
        self.settings = settings
        self.frontier = frontier
        self.links = links
        self._counters = counters
        self._fetcher = fetcher  # its robots.txt cache names a host's sitemaps
        self._sitemap_hosts: set[str] = set()  # hosts whose sitemaps were queued (or that name none)

    def queue_declared(self, page: CrawledPage, verdict: PageVerdict, policy: FocusPolicy) -> None:
        """An accepted page's host has shown it holds a topic: queue the sitemaps its robots.txt names, as
        links of the page (once per host)."""
        host = page.entry.host
        if not self.settings.sitemaps_enabled or host in self._sitemap_hosts:
            return
        robots = getattr(self._fetcher, "robots", None)
        declared = robots.sitemaps(host) if robots is not None else ()
        if declared is None:  # robots.txt not known (expired): the host's next accepted page asks again
            return
        self._sitemap_hosts.add(host)
        links = (Link(url, "", "sitemap", 0, 0) for url in declared)
        candidates = ((link, host_of(link.url), page.depth + 1) for link in links)
        self.links.enqueue(page, verdict, candidates, policy)

    def read(self, page: CrawledPage, policy: FocusPolicy, revisit: Revisit | None = None) -> SitemapRead:
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
            return SitemapRead(entry, None, retry_interval(interval, after), interval, kind=listing)
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
                if not self.frontier.seen(item.url) and self.links.allows(item.url):
                    self.frontier.add(replace(entry, url=item.url, host=host, retries=0))
            return SitemapRead(entry, len(listed), wait, interval, validators=validators)
        unjudged = PageVerdict(entry.topic, 0.0, False)  # rejected: tunnelled, in the queue it came from
        judged = dict(zip((item.url for item in sitemap.entries), page.entry_verdicts, strict=False))
        queued, tunnelled, raised = 0, [], {}
        for item, host in listed:  # an entry whose words the focus accepts: as a link of an accepted page
            verdict, link = judged.get(item.url), _listed_link(item, listing)
            if verdict is None or not verdict.accepted:
                tunnelled.append((link, host, entry.depth + 1))
            elif self.frontier.seen(item.url):
                raised[item.url] = policy.link_priority(page, link, verdict)
            else:
                queued += self.links.enqueue(page, verdict, [(link, host, entry.depth + 1)], policy)
        queued += self.links.enqueue(page, unjudged, tunnelled, policy)
        self._raise_queued(raised)
        if feed:
            self._counters.feeds += 1
            self._counters.feed_urls += queued
        else:
            self._counters.sitemaps += 1
            self._counters.sitemap_urls += queued
        lastmods = tuple((item.url, item.lastmod) for item, _ in listed if item.lastmod is not None)
        return SitemapRead(entry, len(listed), wait, interval, lastmods, validators, listing)

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

    def reread(
        self,
        revisit: Revisit,
        result: Any,
        analysed: tuple[CrawledPage, PageVerdict] | None,
        policy: FocusPolicy,
    ) -> SitemapRead:
        """A due sitemap or feed read again: unchanged (304, or the same bytes) it waits longer, as an
        unchanged page does; one that failed, or is no list of links now, is tried again sooner."""
        entry, after, kind = revisit.entry, self.settings.revisit_after, revisit.listing or "sitemap"
        interval = revisit.interval
        retry = SitemapRead(entry, None, retry_interval(interval, after), interval, kind=kind)
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
            return SitemapRead(entry, None, interval, interval, validators=validators, kind=kind)
        if page is None or page.sitemap is None:
            self._counters.errors["unparsable"] += 1
            return retry
        return self.read(page, policy, revisit)
