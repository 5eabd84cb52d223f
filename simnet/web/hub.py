"""The generated hub page: a directory-style page listing each site's entry page by topic group."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from simnet.web.corpus import Site

TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


def page_title(file: Path, default: str) -> str:
    """A page's <title>, or `default` when it has none."""
    try:
        head = file.read_bytes()[:65536]
    except OSError:
        return default
    match = TITLE.search(head)
    if not match:
        return default
    title = " ".join(html.unescape(match.group(1).decode("utf-8", "replace")).split())
    return title or default


def entry_title(site: Site) -> str:
    return page_title(site.root / site.entry, site.name)


def hub_page(web_name: str, sites: Sequence[Site], entry_url: Callable[[Site], str]) -> bytes:
    """An Open Directory style category page: one section per group, one described link per site."""
    groups: dict[str, list[Site]] = {}
    for site in sites:
        groups.setdefault(site.group, []).append(site)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Directory of {html.escape(web_name)}</title></head><body>",
        f"<h1>Directory of {html.escape(web_name)}</h1>",
        '<ul class="categories">',
    ]
    parts += [
        f'<li><a href="#{html.escape(g)}">{html.escape(g.title())}</a> ({len(groups[g])})</li>'
        for g in sorted(groups)
    ]
    parts.append("</ul>")
    for group in sorted(groups):
        parts.append(f'<h2 id="{html.escape(group)}">{html.escape(group.title())}</h2><ul class="sites">')
        for site in sorted(groups[group], key=lambda s: s.name):
            title = html.escape(entry_title(site))
            parts.append(
                f'<li><a href="{html.escape(entry_url(site))}">{title}</a> - '
                f"the {html.escape(site.name)} site, listed under {html.escape(group)}</li>"
            )
        parts.append("</ul>")
    parts.append("</body></html>")
    return "\n".join(parts).encode("utf-8")
