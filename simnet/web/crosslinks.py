"""Cross-topic links injected into a web: the controlled tunnels a focused crawler must find its way through.

Between the devweb's sites there are almost no links; tunnelling experiments need a known number of links
from pages of one group to pages of another. They are drawn deterministically from a seed, so a parent
process and the server processes it starts agree on them without talking.
"""

from __future__ import annotations

import html
import random
from dataclasses import dataclass

from simnet.web.corpus import Site, WebCorpus
from simnet.web.hub import page_title

HTML_SUFFIXES = (".html", ".htm")


@dataclass(frozen=True)
class CrossLink:
    source_site: str
    source_path: str  # "/dir/page.html"
    target_site: str
    target_path: str
    anchor: str


def html_pages(site: Site) -> list[str]:
    """The site's HTML files as sorted "/relative/paths"."""
    return sorted(
        "/" + path.relative_to(site.root).as_posix()
        for path in site.root.rglob("*")
        if path.suffix.lower() in HTML_SUFFIXES and path.is_file()
    )


def plan_cross_links(corpus: WebCorpus, count: int, seed: int = 0) -> tuple[CrossLink, ...]:
    """`count` links, each from a random page to a random page of a site in another group."""
    if count <= 0:
        return ()
    groups = {site.group for site in corpus.sites}
    if len(groups) < 2:
        return ()
    pages = {site.name: html_pages(site) for site in corpus.sites}
    sites = [site for site in corpus.sites if pages[site.name]]
    rng = random.Random(seed)
    links = []
    for _ in range(count):
        source = rng.choice(sites)
        target = rng.choice([site for site in sites if site.group != source.group])
        target_path = rng.choice(pages[target.name])
        anchor = page_title(target.root / target_path.lstrip("/"), target.name)
        links.append(CrossLink(source.name, rng.choice(pages[source.name]), target.name, target_path, anchor))
    return tuple(links)


def link_fragments(links: tuple[CrossLink, ...], base_url: dict[str, str]) -> dict[tuple[str, str], bytes]:
    """(site, path) -> the HTML to insert into that page, one paragraph per link."""
    fragments: dict[tuple[str, str], bytes] = {}
    for link in links:
        href = html.escape(base_url[link.target_site] + link.target_path)
        piece = f'<p class="see-also">See also: <a href="{href}">{html.escape(link.anchor)}</a></p>'.encode()
        key = (link.source_site, link.source_path)
        fragments[key] = fragments.get(key, b"") + piece
    return fragments
