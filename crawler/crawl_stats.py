"""Crawl statistics: what a running crawl reports to its listeners and writes to the stats history.

A node runs one crawler many times (each frontier edit ends a run), so the counters are kept since the
crawler was built, and a `RunMeter` takes this run's share of them for a snapshot.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

RATE_WINDOW = 5.0  # seconds over which the current pages/s is measured


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

    def history_row(self) -> dict[str, Any]:
        """The row of the repository's stats history (`Repository.record_stats`)."""
        return {
            "at": time.time(),
            "pages": self.total_pages,
            "pages_per_s": self.recent_pages_per_s,
            "bytes": self.bytes,
            "frontier_size": self.frontier_size,
            "in_flight": self.in_flight,
            "duplicates": self.duplicates,
            "errors": self.errors,
            "errors_by_kind": self.errors_by_kind,
        }


@dataclass
class CrawlCounters:
    """What the crawler did since it was built, across its runs."""

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

    def count_revisits(self, kinds: Iterable[str]) -> None:
        """Count written revisits by their outcomes' kinds ("checked", "changed", "gone")."""
        for kind in kinds:
            self.revisits += 1
            self.changed += kind == "changed"
            self.gone += kind == "gone"


class RunMeter:
    """This run's share of the crawler's counters, and its recent pace."""

    def __init__(self, counters: CrawlCounters) -> None:
        self.counters = counters
        self._started = 0.0
        self._before_run = (0, 0)  # the counters' (pages, fetches) when this run began
        self._rate_marks: list[tuple[float, int]] = []

    def begin(self, now: float) -> None:
        self._started = now
        self._before_run = (self.counters.pages, self.counters.fetches)

    def mark(self, now: float) -> None:
        """Note the pages stored so far (after each batch): the recent rate is measured between marks."""
        self._rate_marks.append((now, self.counters.pages))

    def snapshot(
        self, now: float, *, total_pages: int, frontier_size: int, in_flight: int, finished: bool, reason: str
    ) -> CrawlStats:
        """The counters as this run's statistics; `reason` is reported only once the run has `finished`."""
        elapsed = max(now - self._started, 1e-9)
        c = self.counters
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
            total_pages=total_pages,
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
            frontier_size=frontier_size,
            in_flight=in_flight,
            elapsed=elapsed,
            pages_per_s=pages / elapsed,
            recent_pages_per_s=recent,
            finished=finished,
            reason=reason if finished else "",
        )
