"""Upstream URLs (the real web's addresses of a site's pages) mapped to the local hosts serving them."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit

from simnet.web.corpus import Site

# An absolute http(s) URL inside HTML: scheme, authority, then the rest up to a quote, space or bracket.
ABSOLUTE_URL = re.compile(rb"""(https?)://([A-Za-z0-9.\-]+(?::\d*)?)([^\s"'<>]*)""")
DEFAULT_PORTS = {"http": "80", "https": "443"}


def upstream_host(scheme: str, authority: str) -> str:
    """Lowercased host, with the port only when it is not the scheme's default."""
    host, _, port = authority.lower().partition(":")
    return host if not port or port == DEFAULT_PORTS.get(scheme) else f"{host}:{port}"


class UpstreamMap:
    """Resolves upstream URLs to (site, local path) using the sites' upstream prefixes.

    A `flat` site maps `prefix/rest` to `/rest`; a `hosts` site (WebKB) maps `http://host/rest` to
    `/host/rest`. The longest matching prefix wins.
    """

    def __init__(self, sites: Sequence[Site], base_urls: Mapping[str, str]):
        self._base_urls = dict(base_urls)  # site name -> "http://127.0.0.N:PORT"
        self._by_host: dict[str, list[tuple[str, Site]]] = {}
        for site in sites:
            for prefix in site.upstream_prefixes:
                host, slash, path = prefix.partition("/")
                key = upstream_host("http", host)
                path_prefix = "" if site.layout == "hosts" else (slash + path).rstrip("/")
                self._by_host.setdefault(key, []).append((path_prefix, site))
        for candidates in self._by_host.values():
            candidates.sort(key=lambda item: len(item[0]), reverse=True)

    def resolve(self, scheme: str, authority: str, path: str) -> tuple[Site, str] | None:
        """(site, local path) for an upstream URL split into parts; path excludes query and fragment."""
        host = upstream_host(scheme, authority)
        for path_prefix, site in self._by_host.get(host, ()):
            if path_prefix and not (path == path_prefix or path.startswith(path_prefix + "/")):
                continue
            rest = path[len(path_prefix) :] or "/"
            if site.layout == "hosts":
                rest = f"/{host}{rest}"
            return site, rest
        return None

    def map_url(self, url: str) -> str | None:
        """The local URL serving an upstream URL, or None when no site claims it."""
        try:
            parts = urlsplit(url.strip())
        except ValueError:
            return None
        if parts.scheme not in DEFAULT_PORTS or not parts.netloc:
            return None
        found = self.resolve(parts.scheme, parts.netloc, parts.path)
        if found is None:
            return None
        site, local_path = found
        query = f"?{parts.query}" if parts.query else ""
        fragment = f"#{parts.fragment}" if parts.fragment else ""
        return f"{self._base_urls[site.name]}{local_path}{query}{fragment}"

    def rewrite_html(self, body: bytes) -> bytes:
        """Every upstream absolute URL in the page replaced by its local URL; others left as they are."""
        if b"://" not in body:
            return body
        return ABSOLUTE_URL.sub(self._replace, body)

    def _replace(self, match: re.Match[bytes]) -> bytes:
        scheme = match.group(1).decode("ascii").lower()
        authority = match.group(2).decode("ascii")
        rest = match.group(3)
        cut = len(rest)
        for stop in (b"?", b"#"):
            index = rest.find(stop)
            if index != -1:
                cut = min(cut, index)
        path = rest[:cut].decode("latin-1")
        found = self.resolve(scheme, authority, path)
        if found is None:
            return match.group(0)
        site, local_path = found
        return self._base_urls[site.name].encode("ascii") + local_path.encode("latin-1") + rest[cut:]
