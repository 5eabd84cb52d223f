"""The apprentice (`crawler.apprentice`) in a crawl: the focus policy it wraps stays the critic and decides
which links to follow; the apprentice learns from every page the critic judges and, once it ranks better,
sets the priorities of those links.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from crawler.apprentice import (
    NO_TOPIC,
    Apprentice,
    ApprenticeSettings,
    PendingLink,
    ensure_schema,
    is_relevant,
    stored_in_links,
)
from crawler.link_features import cocitation_features
from crawler.parse import CONTEXT_RADIUS, Link, offset_context
from crawler.policy import CrawledPage, PageVerdict
from crawler.repository import Repository

# -- the focus policy wrapper -------------------------------------------------------------------------------


class ApprenticeFocus:
    """Wraps a focus policy (crawler.focus.TopicFocus, or any with `score_pages` / `link_priority`): the
    wrapped policy stays the critic and decides which links to follow at all; the apprentice sets or
    blends their priorities. Everything else (`seeds`, `record_stats`, `model`, ...) is the base's."""

    def __init__(self, base: Any, settings: ApprenticeSettings | None = None) -> None:
        self.base = base
        self.apprentice = Apprentice(settings)
        self.crawler: Any = None
        self.repo: Repository | None = None
        self._since_refit = 0
        self._rescore_due = False
        self.rescored_entries = 0
        self.rebuilt = 0
        self._regions_of = ""  # the page whose links were last added to the apprentice's regions
        self._siblings_due: set[str] = set()  # queued URLs whose cocitation features changed
        self._page_counts: dict[tuple[str, str], tuple[int, int]] = {}  # region counts of that page

    def __getattr__(self, name: str) -> Any:
        base = self.__dict__.get("base")
        if base is None:
            raise AttributeError(name)
        return getattr(base, name)

    def attach(self, crawler: Any) -> None:
        """Attach the base policy too, and restore the stored apprentice (resume)."""
        attach = getattr(self.base, "attach", None)
        if attach is not None:
            attach(crawler)
        self.crawler = crawler
        self.repo = crawler.repo
        ensure_schema(crawler.repo)
        if self.apprentice.load(crawler.repo):
            self._rescore_due = True

    # -- the engine's hooks -------------------------------------------------------------------------------
    def score_pages(self, pages: Sequence[CrawledPage]) -> list[PageVerdict]:
        verdicts = self.base.score_pages(pages)
        s = self.apprentice.settings
        for page, verdict in zip(pages, verdicts, strict=True):
            entry = page.entry
            queue = entry.topic or NO_TOPIC
            relevant = is_relevant(verdict, queue, s.label_threshold)
            queued = self.apprentice.pending.pop(entry.url, None)
            stored = (
                stored_in_links(self.repo, self.apprentice, (entry.url, page.url), queue)
                if self.repo is not None
                else []
            )
            if s.in_links == 0:
                stored = (
                    [link for link in stored if link.source == entry.source][:1] if queued is None else []
                )
            if queued is None:
                self.rebuilt += any(link.source == entry.source for link in stored)
            else:  # the queuing link in place of its stored copy: it knows the base priority (for the blend)
                stored = [link for link in stored if link.source != queued.source] + [queued]
            for link in stored:
                self.apprentice.learn(link, relevant)
            self._judge_siblings(queue, (entry.url, page.url), relevant, stored)
        self.apprentice.judged += len(pages)
        self._since_refit += len(pages)
        if self._since_refit >= s.retrain_every and self.apprentice.buffer:
            self.apprentice.refit()
            self._since_refit = 0
            self._rescore_due = True
            self.save_state()
        return verdicts

    def link_priority(self, page: CrawledPage, link: Link, verdict: PageVerdict) -> float | None:
        base = self.base.link_priority(page, link, verdict)
        if self._rescore_due:
            self._rescore_frontier()
        elif self._siblings_due:
            self._rescore_siblings()
        if base is None:
            return None
        link_topic = getattr(self.base, "link_topic", None)
        topic = link_topic(page, verdict) if link_topic is not None else verdict.topic
        s = self.apprentice.settings
        if page.url != self._regions_of:  # the page's regions, before its first link is scored
            self._regions_of = page.url
            self._page_counts = {}
            self.apprentice.add_region_links(page.url, [(x.url, x.dom_path) for x in page.parsed.links])
        context = offset_context(page.parsed, link, s.radius) if s.radius > CONTEXT_RADIUS else link.context
        indices = self.apprentice.features(link, context, page.url, verdict)
        self.apprentice.remember(link.url, topic, indices, float(base), page.url, link.dom_path)
        full = self.apprentice.full_indices(self.apprentice.pending[link.url], self._page_counts)
        return self.apprentice.priority(topic, full, float(base))

    # -- helpers --------------------------------------------------------------------------------------------
    def _judge_siblings(
        self, queue: str, urls: Sequence[str], relevant: bool, in_links: Sequence[PendingLink]
    ) -> None:
        """Record a judged page for cocitation; once the topic's apprentice is switched in, the queued
        siblings of the regions whose cocitation features this changes are rescored at the next link."""
        app = self.apprentice
        if not app.settings.cocitation:
            return
        regions = {(link.source, link.dom_path) for link in in_links if link.source}
        before = {key: cocitation_features(*app.region_counts(*key)) for key in regions}
        app.judge(urls, relevant)
        if queue not in app.switched_in:
            return
        for key in regions:
            if cocitation_features(*app.region_counts(*key)) != before[key]:
                self._siblings_due.update(app.regions.get(key, ()))

    def _rescore_frontier(self) -> None:
        self._rescore_due = False
        self._siblings_due = set()
        if self.crawler is None:
            return
        self.rescored_entries += rescore_entries(self.crawler.frontier, self.apprentice.rescored)

    def _rescore_siblings(self) -> None:
        due, self._siblings_due = self._siblings_due, set()
        if self.crawler is None:
            return

        def rescored(entries: Iterable[tuple[str, str | None, float]]) -> dict[str, float]:
            return self.apprentice.rescored(e for e in entries if e[0] in due)

        self.rescored_entries += rescore_entries(self.crawler.frontier, rescored)

    def save_state(self) -> None:
        """Store the apprentice's counts and buffer (call off concurrent repository writes)."""
        if self.repo is not None:
            self.apprentice.save(self.repo, time.time())

    def record_stats(self) -> None:
        record = getattr(self.base, "record_stats", None)
        if record is not None:
            record()
        self.save_state()

    def progress_text(self) -> str:
        text = getattr(self.base, "progress_text", None)
        base = text() if text is not None else ""
        r = self.apprentice.resolved
        mine = f"apprentice: {r[1]}+/{r[0]}- links, {self.apprentice.refits} refits"
        return f"{base}  {mine}" if base else mine


def rescore_entries(frontier: Any, rescore: Any) -> int:
    """Give queued entries the priorities `rescore([(url, topic, priority)]) -> {url: priority}` returns,
    through the frontier's own re-scoring; returns how many entries changed."""
    return frontier.rescore(lambda entries: rescore([(e.url, e.topic, e.priority) for e in entries]))
