"""The focus-policy contract: how the crawl engine asks a focus loop to judge pages and rank their links.

A policy judges a batch of fetched pages at once (`score_pages`, in a worker thread) and gives each link of a
page a priority (`link_priority`, on the event loop). The default accepts every page and gives links
breadth-first priorities (1 / depth, thesis 2.7 strategy 1); per-page callables plug in through
`hooks_policy`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from crawler.frontier import FrontierEntry
from crawler.parse import Link, ParsedPage
from crawler.sitemaps import Sitemap


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

ScorePage = Callable[[CrawledPage], tuple[str | None, float, bool]]
LinkPriority = Callable[[CrawledPage, Link, PageVerdict], float | None]


class BreadthFirst:
    """Accept every page; a link found at depth L gets priority 1/(L+1) (seeds at depth 0 come first)."""

    def score_pages(self, pages: Sequence[CrawledPage]) -> list[PageVerdict]:
        return [PageVerdict(None, 1.0, True) for _ in pages]

    def link_priority(self, page: CrawledPage, link: Link, verdict: PageVerdict) -> float | None:
        return 1.0 / (page.depth + 2)


class _CallablePolicy:
    """Adapts the contract's per-page hooks to a batch policy."""

    def __init__(self, score_page: ScorePage | None, link_priority: LinkPriority | None) -> None:
        default = BreadthFirst()
        self._score = score_page
        self._priority = link_priority or default.link_priority

    def score_pages(self, pages: Sequence[CrawledPage]) -> list[PageVerdict]:
        if self._score is None:
            return [PageVerdict(None, 1.0, True) for _ in pages]
        return [PageVerdict(*self._score(page)) for page in pages]

    def link_priority(self, page: CrawledPage, link: Link, verdict: PageVerdict) -> float | None:
        return self._priority(page, link, verdict)


def hooks_policy(score_page: ScorePage | None, link_priority: LinkPriority | None) -> FocusPolicy:
    """The policy of the per-page hooks given (breadth-first for what neither says)."""
    if score_page or link_priority:
        return _CallablePolicy(score_page, link_priority)
    return BreadthFirst()
