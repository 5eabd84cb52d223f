"""A site's web feed on a simulated web: /feed.xml (Atom 1.0), named in the head of every HTML page.

A real site's feed announces its newest pages in words (a title and a summary each), which is what a focused
crawler can read before it fetches them (`crawler.feeds`). A simulated site's files carry no publication
dates worth the name (an unpacked archive's pages share one mtime), so its pages are published in an order
drawn from their paths (a hash, the same on every run), newest first after the files' own mtimes, and the
feed lists the newest `FEED_ENTRIES` HTML pages: a sample of the site, deep pages among them.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from pathlib import Path
from xml.sax.saxutils import escape

FEED_PATH = "/feed.xml"
FEED_TYPE = "application/atom+xml"
FEED_ENTRIES = 20  # what blogs' and projects' feeds commonly list
SUMMARY_CHARS = 300
FEED_LINK = f'<link rel="alternate" type="{FEED_TYPE}" href="{FEED_PATH}">'.encode()
_HEAD_END = re.compile(rb"</head\s*>", re.IGNORECASE)
_BODY_START = re.compile(rb"<body[^>]*>", re.IGNORECASE)


def with_feed_link(body: bytes) -> bytes:
    """An HTML page whose head names the site's feed (at the start of its body when it has no head)."""
    for place, before in ((_HEAD_END, True), (_BODY_START, False)):
        match = place.search(body)
        if match is not None:
            at = match.start() if before else match.end()
            return body[:at] + FEED_LINK + body[at:]
    return FEED_LINK + body


def published_order(site: str, pages: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """The pages newest first: by mtime, then by a hash of the site and path (a fixed, unbiased order)."""

    def drawn(relative: str) -> bytes:
        return hashlib.blake2b(f"{site}/{relative}".encode(), digest_size=8).digest()

    return sorted(pages, key=lambda page: (-page[1], drawn(page[0])))


def entry_words(body: bytes, url: str) -> tuple[str, str]:
    """A page's title and the start of its text, as a feed's entry gives them."""
    from crawler.parse import parse_html

    parsed = parse_html(body, url)
    text = " ".join(parsed.text.split())
    return parsed.title.strip() or url, text[:SUMMARY_CHARS]


def feed_document(site: str, base_url: str, entries: list[tuple[str, str, str, float]]) -> bytes:
    """Atom 1.0 of (url, title, summary, mtime) entries."""
    updated = max((mtime for *_, mtime in entries), default=0.0)
    parts = [
        '<?xml version="1.0" encoding="utf-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom">\n',
        f"<title>{escape(site)}</title><id>{escape(base_url)}/</id><updated>{_iso(updated)}</updated>\n",
        f'<link rel="self" href="{escape(base_url + FEED_PATH)}"/>\n',
    ]
    for url, title, summary, mtime in entries:
        parts.append(
            f'<entry><title>{escape(title)}</title><link rel="alternate" href="{escape(url)}"/>'
            f"<id>{escape(url)}</id><updated>{_iso(mtime)}</updated>"
            f"<summary>{escape(summary)}</summary></entry>\n"
        )
    parts.append("</feed>\n")
    return "".join(parts).encode("utf-8")


def site_feed(site: str, root: Path, base_url: str, pages: list[tuple[str, float]]) -> bytes:
    """The site's feed: its newest `FEED_ENTRIES` HTML pages with their words, of the (path, mtime) `pages`
    it lists (`server.site_pages`, or those published: `simnet.web.publishing`). Reads files: call off the
    event loop."""
    from simnet.web.server import HTML_TYPES, page_type, page_url

    entries = []
    for relative, mtime in published_order(site, pages):
        url = page_url(base_url, relative)
        if url is None or page_type(root / relative) not in HTML_TYPES:
            continue
        try:
            body = (root / relative).read_bytes()
        except OSError:
            continue
        title, summary = entry_words(body, url)
        entries.append((url, title, summary, mtime))
        if len(entries) == FEED_ENTRIES:
            break
    return feed_document(site, base_url, entries)


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds")
