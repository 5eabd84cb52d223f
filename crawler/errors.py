"""The crawler's exceptions: one hierarchy, so callers can catch `CrawlerError` for everything.

Network and server faults never raise: `Fetcher.fetch` turns them into `FetchResult.error` kinds. These
exceptions are for states a caller must handle explicitly.
"""

from __future__ import annotations


class CrawlerError(Exception):
    """Base of every exception the crawler package raises."""


class HostBadError(CrawlerError):
    """The host failed too often and is excluded for the rest of the crawl; drop its queued URLs."""

    def __init__(self, host: str) -> None:
        super().__init__(f"host {host} is marked bad after repeated failures: skip its URLs")
        self.host = host


class InvalidUrlError(CrawlerError, ValueError):
    """A URL that cannot be crawled (not http(s), malformed, or over a length limit); drop it."""


class TaxonomyError(CrawlerError):
    """A bookmarks file or document folder that cannot be imported; the message names the place."""


class SearchError(CrawlerError, ValueError):
    """The query cannot be run (FTS5 syntax error, an empty query, a `site:` that names no host)."""


class ApprenticeError(CrawlerError):
    """The stored apprentice state is malformed or was written by a newer version."""


class RepositoryError(CrawlerError):
    """The repository file cannot be opened or has a schema this version does not know."""


class RepositoryBusy(RepositoryError):
    """Another connection held the write lock for longer than `busy_patience` (its log names it)."""


class RepositoryFull(RepositoryError):
    """The disk holding the repository is full: the transaction was rolled back, nothing of it is stored,
    and everything committed before is intact (SQLite's journal guarantees it)."""
