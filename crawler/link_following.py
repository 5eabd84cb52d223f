"""Link following: a stored page's links as the repository's link rows, and those worth following as
frontier entries, under this crawl's URL settings and `allowed_hosts`.

The engine and its sitemap reading (`crawler.sitemap_following`) queue links through one `LinkFollower`,
so a link from a page, a sitemap or a feed is judged by the same rules. The focus policy is passed with
each call: a node swaps its crawler's policy between runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace

from crawler.dedup import DedupVerdict
from crawler.frontier import Frontier, FrontierEntry
from crawler.parse import Link
from crawler.policy import CrawledPage, FocusPolicy, PageVerdict
from crawler.repository import LinkRecord
from crawler.settings import CrawlSettings
from crawler.urls import host_filter, host_of, looks_like_trap, normalize_url, strip_params

META_REFRESH_MAX_DELAY = 10.0  # a slower refresh is a page in its own right, not a redirect
# One encoder for every link's context: json.dumps with options builds a new encoder per call.
_encode_context = json.JSONEncoder(ensure_ascii=False).encode


class LinkFollower:
    """Turns links into link rows and frontier entries for one crawl's settings and frontier."""

    def __init__(self, settings: CrawlSettings, frontier: Frontier) -> None:
        self.settings = settings
        self.frontier = frontier
        self._allowed = host_filter(settings.allowed_hosts) if settings.allowed_hosts else None
        defaults = CrawlSettings()
        self._default_url_settings = all(  # links as the parser normalised them are final (`_as_configured`)
            getattr(settings, name) == getattr(defaults, name)
            for name in ("url_sort_query", "url_max_length", "host_max_length")
        )

    def allows(self, url: str) -> bool:
        """Whether the `allowed_hosts` setting lets the crawl follow `url` (every URL when it is empty)."""
        return self._allowed is None or self._allowed(url)

    def link_rows(
        self, page: CrawledPage, verdict: PageVerdict, dedup: DedupVerdict, policy: FocusPolicy
    ) -> tuple[LinkRecord, ...]:
        """The page's link rows; its redirect hops count as seen, and an original's links are followed."""
        for hop in page.redirects:
            self.frontier.mark_seen(hop, host_of(hop))
        links: list[LinkRecord] = [LinkRecord(hop, host_of(hop), kind="redirect") for hop in page.redirects]
        if not dedup.is_duplicate:
            links.extend(self._follow(page, verdict, policy))
        return tuple(links)

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

    def _follow(self, page: CrawledPage, verdict: PageVerdict, policy: FocusPolicy) -> list[LinkRecord]:
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
        self.enqueue(page, verdict, candidates, policy)
        return records

    def enqueue(
        self,
        page: CrawledPage,
        verdict: PageVerdict,
        candidates: Iterable[tuple[Link, str, int]],
        policy: FocusPolicy,
    ) -> int:
        """Queue the (link, its host, depth) candidates worth following from `page`; returns how many were."""
        entry = page.entry
        tunnel = 0 if verdict.accepted else entry.tunnel + 1
        origin = entry.origin or entry.url
        link_topic = getattr(policy, "link_topic", None)  # optional: the queue a page's links join
        topic = link_topic(page, verdict) if link_topic is not None else verdict.topic
        queued = 0
        for link, host, depth in candidates:
            if self.frontier.seen(link.url) or looks_like_trap(link.url, self.settings):
                continue
            if not self.allows(link.url):
                continue
            priority = policy.link_priority(page, link, verdict)
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
