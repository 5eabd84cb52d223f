"""The CPU work of a fetched batch: parsing, fingerprinting and classifying, safe to run in a worker thread
(`parse_in_thread`), so the event loop goes on dispatching fetches meanwhile."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from crawler.dedup import fingerprint, simhash
from crawler.feeds import is_feed, parse_feed
from crawler.frontier import FrontierEntry
from crawler.parse import ParsedPage, parse_page
from crawler.policy import NOT_JUDGED, CrawledPage, FocusPolicy, PageVerdict
from crawler.settings import CrawlSettings
from crawler.sitemaps import Sitemap, may_be_sitemap, parse_sitemap


def analyse(
    fetched: Sequence[tuple[FrontierEntry, Any]], settings: CrawlSettings, policy: FocusPolicy
) -> list[tuple[CrawledPage, PageVerdict]]:
    """CPU work of a batch (parsing, hashing, classifying): safe to run in a worker thread. Sitemaps are
    not classified: nothing in them speaks for a topic."""
    crawled = []
    for entry, result in fetched:
        sitemap = _as_sitemap(result, settings)
        if sitemap is not None:  # its fingerprint is of its bytes: unchanged bytes need no reading
            parsed = ParsedPage(url=result.final_url, base_url=result.final_url)
            prints = (hashlib.blake2b(result.body, digest_size=16).hexdigest(), 0)
        else:
            parsed = parse_page(result.body, result.final_url, result.content_type, result.headers)
            prints = (fingerprint(parsed.title + "\n" + parsed.text), simhash(parsed.text))
        crawled.append(
            CrawledPage(
                entry=entry,
                url=result.final_url,
                status=result.status,
                content_type=result.content_type,
                headers=result.headers,
                parsed=parsed,
                fingerprint=prints[0],
                simhash=prints[1],
                size=len(result.body),
                elapsed=result.elapsed,
                redirects=tuple(result.redirects),
                sitemap=sitemap,
            )
        )
    pages = [page for page in crawled if page.sitemap is None]
    verdicts = iter(policy.score_pages(pages) if pages else [])
    crawled = [_with_entry_verdicts(page, policy) for page in crawled]
    return [(page, NOT_JUDGED if page.sitemap else next(verdicts)) for page in crawled]


def _with_entry_verdicts(page: CrawledPage, policy: FocusPolicy) -> CrawledPage:
    """A feed with its entries judged by their words, when the policy judges them (`FocusPolicy`)."""
    score_entries = getattr(policy, "score_entries", None)
    feed = page.sitemap
    if score_entries is None or feed is None or feed.kind != "feed" or feed.error is not None:
        return page
    texts = [item.text for item in feed.entries]
    if not any(texts):
        return page
    return replace(page, entry_verdicts=tuple(score_entries(page, texts)))


def _as_sitemap(result: Any, settings: CrawlSettings) -> Sitemap | None:
    """The response read as a feed or a sitemap, if it may be one; None for a page. XML that is
    neither is a page only where `allowed_mime_types` admits it (else it fails as unparsable)."""
    s = settings
    if s.feeds_enabled and is_feed(result.content_type, result.body):
        listed = parse_feed(result.body, result.final_url)
    elif s.sitemaps_enabled and may_be_sitemap(result.content_type, urlsplit(result.final_url).path):
        listed = parse_sitemap(result.body, result.final_url)
    else:
        return None
    if listed.error is not None and result.content_type in s.allowed_mime_types:
        return None
    return listed
