"""Revisits: the node's crawl fetches its stored pages again, so its repository follows the Web's changes.

A page falls due `revisit_after` seconds after its fetch. Each revisit asks the server with the stored
version's validators (If-None-Match, If-Modified-Since), so an unchanged page costs a 304 without a body;
a server without validators sends the page, which is unchanged when its fingerprint is. The interval then
adapts to how often the page changes, as Heritrix's adaptive revisiting does (a cheap stand-in for Cho and
Garcia-Molina's change-rate estimates): doubled while the page stays the same, halved when it changed,
within an eighth and eight times `revisit_after`. A changed page replaces its stored version (text, links,
index entry; its new links join the frontier); a page its server says is gone (404, 410) leaves the
repository; any other failure tries again after a quarter of the interval, the stored version untouched.

Only the node's own accepted originals are revisited: off-topic pages are kept for their links, exact
duplicates follow their original, and peers' pooled results are their crawlers' to revisit.

The sitemaps and feeds the crawl read (`crawler.sitemaps`, `crawler.feeds`) are read again the same way:
asked with their last reading's validators, unchanged when the server answers 304 or sends the same bytes,
their interval adapting as a page's does. Read again with changes, they queue the pages added since, and a
stored page whose `<lastmod>` (a feed entry's updated time) is later than its fetch falls due at once,
rather than whenever its interval says. A URL whose fetch failed (a 404 for a page linked before it was
published, a page since gone, a server error) is tried again when a list dates it after the failure, up to
`LISTED_RETRIES` times: the crawl otherwise never asks for a URL twice.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from crawler.frontier import FrontierEntry
from crawler.repository import Repository
from crawler.repository_schema import FAILED
from crawler.urls import normalize_url

GROWTH = 2.0  # an unchanged page waits this much longer next time; a changed one this much less
BOUND = 8.0  # intervals stay within revisit_after / BOUND and revisit_after * BOUND
RETRY_SHARE = 0.25  # of its interval: when a revisit that failed for a passing reason is tried again
GONE_STATUSES = frozenset({404, 410})

LISTED_RETRIES = 3  # tries a failed URL gets from lists dating it later (a sitemap may date every URL now)
NEVER_RELISTED = ("robots_disallowed", "robots_deferred", "host_bad", "invalid_url")  # no new version helps
LISTINGS = ("sitemap", "feed")  # the kinds of link lists read again (the sitemaps table's kind)
_DUE = "origin IS NULL AND accepted = 1 AND duplicate_of IS NULL"  # the documents_revisit index's rows


@dataclass(frozen=True)
class Revisit:
    """A stored page due for a fetch, with what the fetch is compared with."""

    doc_id: int
    entry: FrontierEntry
    fingerprint: str
    etag: str | None
    last_modified: str | None
    interval: float | None  # None: revisit_after
    listing: str | None = None  # "sitemap" or "feed": links read again (doc_id 0; fingerprint of its bytes)

    def validators(self) -> dict[str, str]:
        """Conditional request headers asking for the page only if it changed. A value a request cannot
        carry (a server's non-ASCII ETag) is left out: the page's fingerprint still tells a change."""
        sent = {"if-none-match": self.etag, "if-modified-since": self.last_modified}
        return {
            name: value for name, value in sent.items() if value and value.isascii() and value.isprintable()
        }


def _outside(paused: Collection[str | None]) -> tuple[str, list[str]]:
    """SQL keeping the pages of topics the user paused out (they fall due when the topic resumes)."""
    named = [topic for topic in paused if topic is not None]
    sql = f" AND coalesce(topic, '') NOT IN ({', '.join('?' for _ in named)})" if named else ""
    if None in paused:
        sql += " AND topic IS NOT NULL"
    return sql, named


def _kinds(listings: Collection[str]) -> tuple[str, list[str]]:
    """SQL keeping the sitemaps table to the kinds of lists the crawl reads."""
    named = sorted(listings)
    return f" AND kind IN ({', '.join('?' for _ in named)})" if named else " AND 0", named


def due_revisits(
    repo: Repository, now: float, limit: int, paused: Collection[str | None] = ()
) -> list[Revisit]:
    """The pages due at `now`, longest overdue first."""
    outside, params = _outside(paused)
    rows = repo.db.execute(
        "SELECT id, url, host, topic, confidence, depth, fingerprint, etag, last_modified, revisit_interval "
        f"FROM documents WHERE {_DUE} AND revisit_at <= ?{outside} ORDER BY revisit_at LIMIT ?",
        [now, *params, limit],
    ).fetchall()
    return [
        Revisit(
            doc_id=doc_id,
            entry=FrontierEntry(
                url=url, host=host, priority=float(confidence or 0.0), depth=depth, topic=topic, origin=url
            ),
            fingerprint=fingerprint,
            etag=etag,
            last_modified=last_modified,
            interval=interval,
        )
        for doc_id, url, host, topic, confidence, depth, fingerprint, etag, last_modified, interval in rows
    ]


def next_revisit_at(
    repo: Repository, paused: Collection[str | None] = (), listings: Collection[str] = LISTINGS
) -> float | None:
    """When the earliest stored page, or sitemap or feed of the `listings` kinds read, falls due (None:
    none will)."""
    outside, params = _outside(paused)
    kinds, named = _kinds(listings)
    row = repo.db.execute(
        f"SELECT min(revisit_at) FROM documents WHERE {_DUE}{outside} "
        f"UNION ALL SELECT min(due_at) FROM sitemaps WHERE 1{kinds}{outside}",
        [*params, *named, *params],
    ).fetchall()
    times = [float(at) for (at,) in row if at is not None]
    return min(times) if times else None


def due_sitemaps(
    repo: Repository,
    now: float,
    limit: int,
    paused: Collection[str | None] = (),
    listings: Collection[str] = LISTINGS,
) -> list[Revisit]:
    """The sitemaps and feeds (of the `listings` kinds: those the crawl reads) due to be read again at
    `now`, longest overdue first, as the entries that first read them with what their last reading was."""
    outside, params = _outside(paused)
    kinds, named = _kinds(listings)
    rows = repo.db.execute(
        "SELECT url, host, priority, depth, topic, tunnel, source, origin, fingerprint, etag, last_modified, "
        f"interval, kind FROM sitemaps WHERE due_at <= ?{kinds}{outside} ORDER BY due_at LIMIT ?",
        [now, *named, *params, limit],
    ).fetchall()
    return [
        Revisit(0, FrontierEntry(*row[:8]), row[8] or "", row[9], row[10], row[11], listing=row[12])
        for row in rows
    ]


def mark_changed(repo: Repository, now: float, lastmods: Sequence[tuple[str, float]]) -> int:
    """Stored pages a sitemap says changed after their fetch (or after a revisit last found them as
    stored) fall due at `now`; returns how many did (call inside `transaction`)."""
    sql = (
        f"UPDATE documents SET revisit_at = ? WHERE url = ? AND {_DUE} "
        "AND max(fetched_at, coalesce(checked_at, fetched_at)) < ? AND revisit_at > ?"
    )
    return sum(repo.db.conn.execute(sql, [now, url, lastmod, now]).rowcount for url, lastmod in lastmods)


def relisted_failures(repo: Repository, lastmods: Sequence[tuple[str, float]]) -> list[FrontierEntry]:
    """Failed URLs a sitemap or feed dates after their failure, to be queued again: what failed then may
    answer now. Their rows' `retries` count the tries spent (call inside `transaction`)."""
    never = ", ".join("?" * len(NEVER_RELISTED))
    sql = (
        "SELECT url, host, priority, depth, topic, tunnel, source, origin, retries FROM frontier "
        f"WHERE url = ? AND state = {FAILED} AND updated_at < ? AND retries < ? "
        f"AND coalesce(error, '') NOT IN ({never})"
    )
    found: dict[str, FrontierEntry] = {}
    for url, lastmod in lastmods:
        row = repo.db.conn.execute(sql, [url, lastmod, LISTED_RETRIES, *NEVER_RELISTED]).fetchone()
        if row is not None:
            found[url] = FrontierEntry(*row)
    return list(found.values())


def mark_due(repo: Repository, now: float, urls: Sequence[str] | None = None) -> tuple[int, list[str]]:
    """Make pages due at `now` (every revisited page when `urls` is None): the user asks for fresh copies.
    Returns how many fell due, and the URLs that are not among the pages this node revisits (not stored,
    a peer's result, off-topic or a duplicate)."""
    with repo.transaction() as db:
        if urls is None:
            return db.execute(f"UPDATE documents SET revisit_at = ? WHERE {_DUE}", [now]).rowcount, []
        asked = list(dict.fromkeys(urls))
        sql = f"UPDATE documents SET revisit_at = ? WHERE url = ? AND {_DUE}"
        missing = [url for url in asked if not db.execute(sql, [now, normalize_url(url) or url]).rowcount]
    return len(asked) - len(missing), missing


def next_interval(interval: float | None, changed: bool, revisit_after: float) -> float:
    """The page's next interval: shorter after a change, longer after none, within the bounds."""
    current = revisit_after if interval is None else interval
    proposed = current / GROWTH if changed else current * GROWTH
    return min(max(proposed, revisit_after / BOUND), revisit_after * BOUND)


def retry_interval(interval: float | None, revisit_after: float) -> float:
    """How long a revisit that failed for a passing reason waits before the next try."""
    return (revisit_after if interval is None else interval) * RETRY_SHARE
