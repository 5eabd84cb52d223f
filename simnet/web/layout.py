"""Where each site of a served web lives (loopback address and port), and the ground truth about URLs."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from functools import cached_property
from urllib.parse import unquote, urlsplit

from simnet.web.corpus import Site, WebCorpus
from simnet.web.crosslinks import plan_cross_links
from simnet.web.upstream import UpstreamMap

HUB_ADDRESS = "127.0.0.2"


def site_address(index: int) -> str:
    """127.0.0.10, 127.0.0.11, ... then 127.0.1.10, ...: one loopback address per site, none shared."""
    return f"127.0.{index // 240}.{10 + index % 240}"


@dataclass(frozen=True)
class RequestRecord:
    """One request as the server saw it; times from time.monotonic() (comparable across processes)."""

    start: float
    end: float
    host: str  # "127.0.0.N:PORT", as crawler.urls.host_of gives it
    path: str  # request target, query included
    status: int  # 0 when no status line was sent (connection reset)
    fault: str | None  # the fault kind applied, if any
    site: str | None = None  # None for the hub
    bytes_sent: int = 0


class WebLayout:
    """Addresses, URLs, labels and upstream mapping of a web served on one port."""

    def __init__(self, corpus: WebCorpus, port: int, cross_links: int = 0, seed: int = 0):
        self.corpus = corpus
        self.port = port
        self.cross_link_plan = plan_cross_links(corpus, cross_links, seed)
        self.addresses = {site.name: site_address(i) for i, site in enumerate(corpus.sites)}
        self._site_by_host = {f"{addr}:{port}": corpus.site(name) for name, addr in self.addresses.items()}
        self.hub_host = f"{HUB_ADDRESS}:{port}"

    @property
    def hub_url(self) -> str:
        return f"http://{self.hub_host}/"

    @property
    def sites(self) -> tuple[Site, ...]:
        return self.corpus.sites

    def _site(self, site: Site | str) -> Site:
        return self.corpus.site(site) if isinstance(site, str) else site

    def host_of_site(self, site: Site | str) -> str:
        return f"{self.addresses[self._site(site).name]}:{self.port}"

    def base_url(self, site: Site | str) -> str:
        return f"http://{self.host_of_site(site)}"

    def site_url(self, site: Site | str) -> str:
        """The URL of the site's entry page."""
        site = self._site(site)
        return f"{self.base_url(site)}/{site.entry}"

    def site_of_host(self, host: str) -> Site | None:
        """The site served on "127.0.0.N:PORT", None for the hub or an unknown host."""
        return self._site_by_host.get(host.lower())

    def site_of_url(self, url: str) -> Site | None:
        try:
            return self.site_of_host(urlsplit(url).netloc)
        except ValueError:
            return None

    def label_of(self, url: str) -> str | None:
        """Ground-truth group of a served URL: its site's, or the page's own on a web with page labels
        (None there for pages outside the labelled set)."""
        site = self.site_of_url(url)
        if site is None:
            return None
        labels = site.page_labels
        if labels:
            path = posixpath.normpath(unquote(urlsplit(url).path) or "/")
            path = path if not urlsplit(url).path.endswith("/") or path == "/" else path + "/"
            return labels.get(path) or labels.get(path.rstrip("/") + "/index.html")
        return site.group

    @property
    def cross_links(self) -> list[tuple[str, str]]:
        """The injected cross-topic links as (from URL, to URL)."""
        return [
            (
                self.base_url(link.source_site) + link.source_path,
                self.base_url(link.target_site) + link.target_path,
            )
            for link in self.cross_link_plan
        ]

    @cached_property
    def upstream(self) -> UpstreamMap:
        return UpstreamMap(self.corpus.sites, {s.name: self.base_url(s) for s in self.corpus.sites})

    def map_upstream(self, url: str) -> str | None:
        """The local URL serving a real upstream URL (e.g. from bookmarks), None when no site claims it."""
        return self.upstream.map_url(url)
