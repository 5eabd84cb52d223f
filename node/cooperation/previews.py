"""The previews of pooled results: the snippet of a page that peers see and search.

Functions here read the repository and are meant to run in a worker thread.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from crawler.preview import passages
from crawler.repository import Repository
from crawler.search import site_template
from crawler.urls import host_of

PREVIEW_LINE = 40  # characters a text line needs to count as content rather than navigation
PREVIEW_SCAN = 20_000  # characters of a page read for its preview: its lead is near the start


def preview(text: str, chars: int, skip_lines: Collection[str] = frozenset()) -> str:
    """The snippet peers see and search of a pooled result: the first `chars` characters of the page's
    sentences of running text, lines of its site's template (`skip_lines`) left out. The first lines of a
    page are mostly navigation ("Modules | Directives | FAQ", "Next: Fillsteps Up: Plotting styles"),
    which a cut of the first long lines sent as the preview of most devweb pages. A page without such
    sentences sends its lines of `PREVIEW_LINE` characters or more, else its text."""
    head = text[:PREVIEW_SCAN]
    sentences = [p.text for p in passages(head, skip_lines) if p.content]
    content = sentences or [line for line in head.splitlines() if len(line.strip()) >= PREVIEW_LINE]
    return " ".join(" ".join(content or [head]).split())[:chars]


def result_previews(repo: Repository, rows: Sequence[Mapping[str, Any]], chars: int) -> list[str]:
    """`preview` of each row's text (with its url), its host's template lines left out."""
    templates: dict[str, set[str]] = {}
    shown = []
    for row in rows:
        host = host_of(row["url"])
        if host not in templates:
            templates[host] = site_template(repo, host)
        shown.append(preview(row["text"] or "", chars, templates[host]))
    return shown
