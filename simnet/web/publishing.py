"""Publishing on a simulated web: pages that appear while a crawl runs.

A static web cannot show what reading a site's feed is for: learning of a page soon after it appears. Here a
site holds back its newest pages (in the feed's order, `simnet.web.feeds.published_order`; never its entry
page) and publishes them one at a time, oldest first, when asked (`Publishing.publish_next`), so that at the
end its feed lists them as a static web's would. Until then a held page answers 404 and the links to it are
taken out of the pages that have them, words and all. Publishing a page puts those links back (the linking
pages change, and their ETags with them) and the page first in the feed, dated when it was published; the
sitemaps list it from then on, with that date. The caller decides when: the freshness benchmark publishes
between its crawl rounds, on its crawlers' calendar.
"""

from __future__ import annotations

import html
import posixpath
import re
import time
from collections.abc import Callable, Mapping, Sequence
from urllib.parse import unquote, urljoin, urlsplit

from simnet.web.corpus import WebCorpus
from simnet.web.feeds import published_order

# An anchor with its words up to its end tag, or its start tag alone where another anchor starts (or the page
# ends) first: old HTML leaves anchors open, and an HTML parser closes one where the next one opens.
_ANCHOR = re.compile(rb"<a\b([^>]*)>(?:(?:(?!<a\b).)*?</a\s*>)?", re.IGNORECASE | re.DOTALL)
_HREF = re.compile(rb"""\bhref\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)""", re.IGNORECASE)
_META = re.compile(rb"<meta\b[^>]*>", re.IGNORECASE)
_REFRESH = re.compile(rb"""\bhttp-equiv\s*=\s*["']?refresh\b""", re.IGNORECASE)
_REFRESH_URL = re.compile(rb"""\burl\s*=\s*['"]?([^"'>\s]+)""", re.IGNORECASE)


class Publishing:
    """Which pages each site still holds back, in the order they will be published, and when the others
    were; `clock` gives the publication times (the crawlers' calendar in a benchmark)."""

    def __init__(self, held: Mapping[str, Sequence[str]], clock: Callable[[], float] = time.time):
        self._queues = {site: list(paths) for site, paths in held.items() if paths}
        self._held = {(site, path) for site, paths in self._queues.items() for path in paths}
        self._clock = clock
        self.published: dict[tuple[str, str], float] = {}  # (site, path relative to its root) -> when

    @classmethod
    def newest(cls, corpus: WebCorpus, per_site: int, clock: Callable[[], float] = time.time) -> Publishing:
        """Each site holds back its `per_site` newest HTML pages (its entry page never), to be published
        oldest first."""
        from simnet.web.server import HTML_TYPES, page_type, site_pages

        held = {}
        for site in corpus.sites:
            newest = [
                relative
                for relative, _ in published_order(site.name, site_pages(site.root))
                if relative != site.entry and page_type(site.root / relative) in HTML_TYPES
            ]
            held[site.name] = list(reversed(newest[:per_site]))
        return cls(held, clock)

    @property
    def waiting(self) -> int:
        """Pages still held back, over all sites."""
        return len(self._held)

    def is_held(self, site: str, relative: str) -> bool:
        return (site, relative) in self._held

    def publish_next(self) -> list[tuple[str, str]]:
        """Publish the next held page of every site that has one; (site, path) of each."""
        if not self._held:
            return []
        now = self._clock()
        done = []
        for site, queue in self._queues.items():
            if queue:
                relative = queue.pop(0)
                self._held.discard((site, relative))
                self.published[(site, relative)] = now
                done.append((site, relative))
        return done

    def listed(self, site: str, pages: list[tuple[str, float]]) -> list[tuple[str, float]]:
        """A site's (path, mtime) pages as its sitemaps and feed list them: held ones left out, published
        ones dated when they were published."""
        return [
            (relative, self.published.get((site, relative), mtime))
            for relative, mtime in pages
            if (site, relative) not in self._held
        ]

    def without_held_links(self, body: bytes, page: str, site_of_url: Callable[[str], str | None]) -> bytes:
        """The HTML page at URL `page` without its links to held pages, their words included: a site adds
        the link and its words when it publishes the page (and a crawler that compares a page's text,
        as `crawler.revisits` does, sees it changed); of an anchor left open, its start tag; a meta refresh
        to a held page, whole. A URL is read as a parser reads it, character references decoded.
        `site_of_url` names the site serving a URL."""
        if not self._held:
            return body

        def held(written: bytes) -> bool:
            url = written.strip(b"\"'").decode("utf-8", "replace")
            return self._held_target(urljoin(page, html.unescape(url)), site_of_url)  # git-web&#45;browse

        def unlinked(anchor: re.Match[bytes]) -> bytes:
            href = _HREF.search(anchor.group(1))
            return b"" if href is not None and held(href.group(1)) else anchor.group(0)

        def unrefreshed(meta: re.Match[bytes]) -> bytes:
            tag = meta.group(0)
            target = _REFRESH_URL.search(tag)
            return b"" if _REFRESH.search(tag) and target is not None and held(target.group(1)) else tag

        return _META.sub(unrefreshed, _ANCHOR.sub(unlinked, body))

    def _held_target(self, url: str, site_of_url: Callable[[str], str | None]) -> bool:
        site = site_of_url(url)
        if site is None:
            return False
        path = unquote(urlsplit(url).path) or "/"
        relative = posixpath.normpath(path).lstrip("/")
        if path.endswith("/") or relative in ("", "."):
            relative = posixpath.join("" if relative in ("", ".") else relative, "index.html")
        # a folder named without its slash is redirected to it, and so to its index.html
        return (site, relative) in self._held or (site, posixpath.join(relative, "index.html")) in self._held
