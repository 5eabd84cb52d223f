"""The crawl's queue of revisits: the stored pages, sitemaps and feeds due to be fetched again
(`crawler.revisits`), and what each fetch found, written with its batch.

Due revisits are taken from the repository a batch at a time, and only once the last batch is done, so a
crawl serves them before new links without asking the repository at every dispatch. A revisit stays due in
the repository until its outcome is written: one abandoned, or lost with a batch the disk had no room for,
is taken again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from typing import NamedTuple

from crawler.frontier import Frontier, FrontierEntry, ReadyAt
from crawler.repository import Repository, StoredPage
from crawler.revisits import Revisit, due_revisits, due_sitemaps, next_revisit_at

REVISIT_BATCH = 64  # due pages taken from the repository at a time


class RevisitOutcome(NamedTuple):
    """A revisit's outcome, written with its batch: "checked" (`due_at`, `interval` and validators;
    `checked_at` when the page was found as stored), or "changed" (the new version's `page`), or "gone"."""

    kind: str
    doc_id: int
    page: StoredPage | None = None
    due_at: float = 0.0
    interval: float | None = None
    etag: str | None = None
    last_modified: str | None = None
    checked_at: float | None = None

    @classmethod
    def checked(
        cls,
        revisit: Revisit,
        now: float,
        wait: float,
        interval: float | None,
        headers: dict[str, str] | None = None,
    ) -> RevisitOutcome:
        """`headers`: of a response that found the page as stored (None: the revisit could not tell)."""
        return cls(
            "checked",
            revisit.doc_id,
            due_at=now + wait,
            interval=interval,
            etag=(headers or {}).get("etag"),
            last_modified=(headers or {}).get("last-modified"),
            checked_at=None if headers is None else now,
        )

    def write(self, repo: Repository, now: float) -> None:
        """Its rows (inside the batch's transaction)."""
        if self.kind == "gone":
            repo.remove_document(self.doc_id, now)
        elif self.page is not None:
            repo.replace_page(self.doc_id, self.page)
        else:
            repo.record_revisit(
                self.doc_id, self.due_at, self.interval, self.etag, self.last_modified, self.checked_at
            )


class RevisitQueue:
    """The revisits due and not yet dispatched (`waiting`), and those dispatched and not yet written
    (`in_flight`, by URL)."""

    def __init__(
        self,
        repo: Repository,
        frontier: Frontier,
        wall_clock: Callable[[], float],
        listings: Collection[str],
        enabled: bool,
    ) -> None:
        self.repo = repo
        self.frontier = frontier  # its paused topics' pages are not revisited
        self._wall = wall_clock  # due times are the calendar's
        self.listings = listings  # the kinds of link lists the crawl reads again
        self.enabled = enabled
        self.waiting: list[Revisit] = []  # due, not yet dispatched
        self.in_flight: dict[str, Revisit] = {}  # dispatched, by URL
        self._next_check = -math.inf  # wall time before which no stored page is due

    def due_in(self) -> float:
        """Seconds until a stored page falls due for a revisit (0: one is due; inf: none will be)."""
        if not self.enabled:
            return math.inf
        if self.waiting:
            return 0.0
        due = next_revisit_at(self.repo, self.frontier.paused_topics, self.listings)
        if due is None:
            return math.inf
        self._next_check = min(self._next_check, due)  # rows changed by other writers
        return max(0.0, due - self._wall())

    def look_again(self) -> None:
        """Pages may have fallen due sooner than expected: look at the next chance."""
        self._next_check = -math.inf

    def expect_due(self, at: float) -> None:
        """A page falls due at `at` (wall time): look for due pages no later."""
        self._next_check = min(self._next_check, at)

    def clear(self) -> None:
        """Forget the revisits taken: they are due still in the repository, and taken again."""
        self.waiting.clear()
        self._next_check = -math.inf

    def take_due(self) -> None:
        """Take the stored pages now due, once the last ones taken are done (`crawler.revisits`)."""
        if not self.enabled or self.waiting or self.in_flight:
            return
        now = self._wall()
        if now < self._next_check:
            return
        paused = self.frontier.paused_topics
        self.waiting = due_revisits(self.repo, now, REVISIT_BATCH, paused)
        self.waiting.extend(due_sitemaps(self.repo, now, REVISIT_BATCH, paused, self.listings))
        if not self.waiting:
            due = next_revisit_at(self.repo, paused, self.listings)
            self._next_check = math.inf if due is None else due

    def pop(self, ready_at: ReadyAt, now: float, is_bad: Callable[[str], bool]) -> FrontierEntry | None:
        """The longest overdue page whose host may be contacted now, its revisit marked in flight. Pages of
        topics paused since they were taken leave the queue: they are due still when the topic resumes."""
        paused = self.frontier.paused_topics
        self.waiting = [r for r in self.waiting if r.entry.topic not in paused]
        for index, revisit in enumerate(self.waiting):
            host = revisit.entry.host
            # a bad host's fetch fails at once (host_bad), and the page is tried again later
            if ready_at(host) <= now or is_bad(host):
                del self.waiting[index]
                self.in_flight[revisit.entry.url] = revisit
                return revisit.entry
        return None

    def abandoned(self, url: str) -> bool:
        """A fetch of `url` was cancelled: a revisit's (True) is taken again with the pages due."""
        if self.in_flight.pop(url, None) is None:
            return False
        self.look_again()
        return True
