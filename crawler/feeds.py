"""Web feeds (RSS 0.9x, 1.0 and 2.0, Atom): the pages a site announces as new or changed, in words.

A page names its feeds in its head (`<link rel="alternate" type="application/atom+xml" href=...>`,
`feed_urls`); the crawler follows them as links of the page and reads a fetched feed as it reads a sitemap
(`crawler.sitemaps`): never stored, indexed or classified, read again when due (`crawler.revisits`), each
entry's link queued. Two things differ. A feed's entries carry words, their titles and summaries, which
become the links' anchor text and context, read by the apprentice (`crawler.apprentice`) as it reads the
words around a link on a page. And a feed may
list other hosts' pages: aggregators (a "planet" of a topic's blogs) are feeds of other sites' posts, and
are the hubs a focused crawler wants.

Parsed by feedparser, the long-kept parser of every RSS and Atom dialect, tolerant of the malformed feeds
common in the wild; always from bytes (given a string that looks like a URL it would fetch it). Bounds:
`MAX_BYTES` of XML, `MAX_ENTRIES` entries, `MAX_TEXT` characters of words per entry; a feed that declares
entities is refused before parsing (billion laughs, external entities).
"""

from __future__ import annotations

import calendar
import re
from io import BytesIO
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from crawler.sitemaps import XML_TYPES, Sitemap, SitemapEntry
from crawler.urls import normalize_url

FEED_TYPES = frozenset({"application/rss+xml", "application/atom+xml", "application/rdf+xml"})
MAX_BYTES = 10 * 1024 * 1024  # a feed is a page's size, not a sitemap's; 10 MB is far beyond any real one
MAX_ENTRIES = 1000
MAX_TEXT = 500  # characters of an entry's title and summary kept as its link's anchor text
MAX_DECLARED = 4  # feeds a page may name in its head that are followed
_ROOT = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?(rss|feed|RDF)[\s>/]")
_ENTITY = re.compile(rb"<!ENTITY", re.IGNORECASE)
_SNIFF = 4096


def is_feed_type(content_type: str) -> bool:
    """Whether a response may be a feed, by its type alone (before its body is read)."""
    return content_type in FEED_TYPES or content_type in XML_TYPES


def is_feed(content_type: str, body: bytes) -> bool:
    """A feed type, or generic XML whose root element is a feed's (`<rss>`, `<feed>`, `<rdf:RDF>`)."""
    if content_type in FEED_TYPES:
        return True
    return content_type in XML_TYPES and _ROOT.search(body[:_SNIFF]) is not None


def parse_feed(body: bytes, url: str, max_entries: int = MAX_ENTRIES) -> Sitemap:
    """Read a feed: kind "feed", its entries' links as normalised absolute URLs in document order (relative
    ones resolved against the feed, duplicates and entries without a usable link left out), each with its
    words and its updated (else published) time. Malformed or hostile input yields `error`, never an
    exception."""
    if len(body) > MAX_BYTES:
        return Sitemap("feed", error="too_large")
    root = _ROOT.search(body[:_SNIFF])
    if _ENTITY.search(body[: root.start() if root else _SNIFF]):
        return Sitemap("feed", error="unparsable: entity declarations")
    import feedparser  # loads when the first feed comes

    try:
        parsed = feedparser.parse(
            BytesIO(body),
            response_headers={"content-location": url, "content-type": "application/xml"},
            sanitize_html=False,
        )
        if not parsed.get("version") and not parsed.entries:
            return Sitemap("feed", error="unparsable: not a feed")
        return Sitemap("feed", tuple(_entries(parsed.entries, url, max_entries)))
    except Exception as exc:  # a third-party parser on hostile bytes: never crash a crawl
        return Sitemap("feed", error=f"unparsable: {type(exc).__name__}")


def _entries(entries: list[Any], url: str, max_entries: int) -> list[SitemapEntry]:
    found: list[SitemapEntry] = []
    seen: set[str] = set()
    for entry in entries:
        link = entry.get("link")
        target = normalize_url(link, base=url) if isinstance(link, str) and link.strip() else None
        if target is None or target in seen:
            continue
        seen.add(target)
        found.append(SitemapEntry(target, _moment(entry), entry_text(entry)))
        if len(found) >= max_entries:
            break
    return found


def _moment(entry: Any) -> float | None:
    moment = entry.get("updated_parsed") or entry.get("published_parsed")
    try:
        return float(calendar.timegm(moment)) if moment else None
    except (TypeError, ValueError, OverflowError):
        return None


def entry_text(entry: Any) -> str:
    """An entry's title and summary as plain words (markup removed), at most `MAX_TEXT` characters."""
    parts = []
    for key in ("title", "summary"):
        value = entry.get(key)
        if isinstance(value, str) and value.strip():
            parts.append(_plain(value) if "<" in value else value)
    return " ".join(" ".join(parts).split())[:MAX_TEXT]


def _plain(markup: str) -> str:
    body = LexborHTMLParser(markup).body
    return body.text(separator=" ") if body is not None else ""


def feed_urls(links: list[tuple[str, str, str]], base: str) -> tuple[str, ...]:
    """The feeds a page's head names: (rel, type, href) of its `<link>` elements, those that are
    `rel="alternate"` of a feed type, as normalised absolute URLs, at most `MAX_DECLARED`."""
    urls: list[str] = []
    for rel, kind, href in links:
        if "alternate" not in rel.lower().split() or kind.split(";")[0].strip().lower() not in FEED_TYPES:
            continue
        url = normalize_url(href.strip(), base=base)
        if url is not None and url not in urls:
            urls.append(url)
            if len(urls) >= MAX_DECLARED:
                break
    return tuple(urls)
