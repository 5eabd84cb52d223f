"""Sitemaps (sitemaps.org protocol 0.9): the list of pages a host offers crawlers, named in its robots.txt.

A focused crawler has no reason to enumerate every host it meets, but once one of a host's pages is
accepted the host has shown it holds the topic, and its sitemap finds pages no crawled link leads to yet
(documentation sites are shallow in links and deep in pages). The engine queues a host's sitemaps when it
accepts the host's first page; the URLs a sitemap lists are queued as links tunnelled through a page that
was not judged on-topic (`crawler.focus`), since nothing but their host speaks for them. A sitemap is not
a document: it is never stored, indexed or classified; the repository keeps where it came from, and it is
read again when due (`crawler.revisits`), for the pages added since and the `<lastmod>` of those stored.

Bounds, as the protocol sets them: at most `MAX_URLS` entries per file and `MAX_BYTES` of XML (after gzip);
a sitemap lists only pages of its own host or of the host whose robots.txt named it, so a hostile host
cannot queue another's pages. XML is parsed with defusedxml: entity declarations (billion laughs, external
entities) are refused, and the document is read as a stream.
"""

from __future__ import annotations

import codecs
import re
import zlib
from datetime import UTC, datetime
from io import BytesIO
from typing import NamedTuple
from xml.etree.ElementTree import ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import iterparse

from crawler.urls import host_of, normalize_url

MAX_URLS = 50_000  # entries per sitemap file (the protocol's limit)
MAX_BYTES = 50 * 1024 * 1024  # uncompressed bytes per sitemap file (the protocol's limit)
XML_TYPES = frozenset({"application/xml", "text/xml"})
GZIP_TYPES = frozenset({"application/gzip", "application/x-gzip", "application/octet-stream", ""})
_BARE_AMPERSAND = re.compile(rb"&(?!(?:[A-Za-z][A-Za-z0-9._-]*|#[0-9]+|#[xX][0-9A-Fa-f]+);)")
_ROOT = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?(urlset|sitemapindex)[\s>/]")
_SNIFF = 4096


class SitemapEntry(NamedTuple):
    """A `<loc>` and its `<lastmod>` (seconds since the epoch; None when absent or unreadable); a feed
    entry's `text` is its title and summary (`crawler.feeds`)."""

    url: str
    lastmod: float | None = None
    text: str = ""


class Sitemap(NamedTuple):
    """A parsed list of links: a sitemap, "urlset" (pages) or "index" (further sitemaps), or a "feed"
    (`crawler.feeds`); `error` set when unusable."""

    kind: str
    entries: tuple[SitemapEntry, ...] = ()
    error: str | None = None


def may_be_sitemap(content_type: str, path: str) -> bool:
    """Whether a response is worth reading as a sitemap: XML, or gzip named `*.xml.gz` as the protocol's
    compressed files are (servers label those every which way)."""
    return content_type in XML_TYPES or (path.endswith(".xml.gz") and content_type in GZIP_TYPES)


def is_gzip(body: bytes) -> bool:
    return body[:2] == b"\x1f\x8b"


def parse_sitemap(body: bytes, url: str, max_urls: int = MAX_URLS) -> Sitemap:
    """Read a sitemap (gzipped or not); entries are normalised absolute URLs in document order, duplicates
    and unusable ones left out. Malformed or hostile input yields `error`, never an exception."""
    if is_gzip(body):
        try:
            body = _gunzip(body, MAX_BYTES)
        except (zlib.error, ValueError) as exc:
            return Sitemap("urlset", error=f"unparsable: {exc}")
    body = _xml_start(body)
    match = _ROOT.search(body[:_SNIFF])
    if match is None:
        return Sitemap("urlset", error="unparsable: not a sitemap")
    if len(body) > MAX_BYTES:
        return Sitemap("urlset", error="too_large")
    kind = "index" if match.group(1) == b"sitemapindex" else "urlset"
    try:
        try:
            entries = _entries(body, url, max_urls)
        except ParseError:
            # The commonest malformed sitemap lists URLs with their query's "&" unescaped, which is never
            # valid XML: read it again with those escaped rather than lose every URL it lists
            repaired = _BARE_AMPERSAND.sub(b"&amp;", body)
            if repaired == body:
                raise
            entries = _entries(repaired, url, max_urls)
    except (ParseError, DefusedXmlException) as exc:
        return Sitemap(kind, error=f"unparsable: {type(exc).__name__}")
    return Sitemap(kind, tuple(entries))


def _xml_start(body: bytes) -> bytes:
    """The body from its first markup on: sitemaps that generators print after a blank line or a
    byte-order mark and a newline (a PHP file's stray line break) are common, and an XML parser refuses
    an XML declaration that does not open the document."""
    if body.startswith(codecs.BOM_UTF8):
        body = body[len(codecs.BOM_UTF8) :]
    return body.lstrip(b" \t\r\n")


def _gunzip(body: bytes, limit: int) -> bytes:
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    data = inflater.decompress(body, limit + 1)
    if len(data) > limit:
        raise ValueError(f"more than {limit} bytes uncompressed")
    if not inflater.eof:
        raise ValueError("truncated gzip data")
    return data


def _entries(body: bytes, url: str, max_urls: int) -> list[SitemapEntry]:
    entries: list[SitemapEntry] = []
    seen: set[str] = set()
    loc: str | None = None
    lastmod: float | None = None
    for _event, element in iterparse(BytesIO(body), events=("end",), forbid_dtd=True):
        name = element.tag.rsplit("}", 1)[-1]
        if name == "loc":
            loc = (element.text or "").strip()
        elif name == "lastmod":
            lastmod = parse_lastmod(element.text or "")
        elif name in ("url", "sitemap"):
            target = normalize_url(loc, base=url) if loc else None
            if target is not None and target not in seen:
                seen.add(target)
                entries.append(SitemapEntry(target, lastmod))
                if len(entries) >= max_urls:
                    break
            loc, lastmod = None, None
            element.clear()
    return entries


def parse_lastmod(text: str) -> float | None:
    """A W3C datetime (YYYY, YYYY-MM, YYYY-MM-DD, or with a time and zone) as epoch seconds; a time
    without a zone counts as UTC."""
    text = text.strip()
    if re.fullmatch(r"\d{4}", text):
        text += "-01-01"
    elif re.fullmatch(r"\d{4}-\d{2}", text):
        text += "-01"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def declared_sitemaps(robots_url: str, lines: list[str]) -> list[str]:
    """The robots.txt `Sitemap:` values as normalised absolute URLs (relative ones resolved against the
    robots.txt itself)."""
    urls = []
    for line in lines:
        url = normalize_url(line.strip(), base=robots_url)
        if url is not None and url not in urls:
            urls.append(url)
    return urls


def listed_hosts(sitemap_url: str, named_by: str | None) -> frozenset[str]:
    """Hosts whose pages a sitemap may list: its own, and that of the robots.txt or page that named it."""
    return frozenset({host_of(sitemap_url), *([host_of(named_by)] if named_by else [])})
