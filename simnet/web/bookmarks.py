"""A user's bookmarks file with many topics, generated from any web corpus: a nested taxonomy of N folders.

    python -m simnet.web.bookmarks --web devweb --topics 150 [--per-topic 4] [--seed 0] --out FILE

Real users' bookmarks have dozens to hundreds of nested folders; the hand-written ones under simnet/webs have
three to five. The folders here come from the web's own structure, as a user filing pages would: topic
groups of the web (when it has several), then sites, then each site's folders, then the first word of the page
names (`sql-select.html`, `sql-insert.html` -> "sql"), and a long run of pages nothing splits further is cut
into consecutive sections named after their first page's title (a manual's chapters). Folders are taken
largest first, so the tree grows where the web has the most pages, until it holds N topics (every folder
counts, parents too: that is how a node keys topics). Each folder gets up to `per_topic` bookmarks of its own
pages (those in none of its sub-folders), drawn at random with the seed; meta-refresh redirect stubs are no
page a user bookmarks and are left out.

URLs are the sites' upstream ones (https://www.postgresql.org/docs/...), as the hand-written files have them:
`topicswarm simweb serve --web WEB --bookmarks FILE --bookmarks-out OUT` (or `node.cli.demo.map_bookmarks`
with the served web's `map_upstream`) points them at the served hosts. A site without upstream prefixes
needs `base_url` (a served web's), which writes served URLs directly. Nothing here knows a particular web.
"""

from __future__ import annotations

import argparse
import heapq
import html
import random
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from crawler.taxonomy import POSITIVE, Taxonomy, TrainingDocument, netscape_html, topic_path_key
from simnet.web.corpus import Site, WebCorpus, load_web
from simnet.web.errors import CorpusError

PAGE_SUFFIXES = (".html", ".htm", ".xhtml")
HEAD_BYTES = 4096  # where a page's <title> and a meta refresh stand
MAX_SECTIONS = 8  # a run of pages is cut into at most this many sections
_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_REFRESH = re.compile(rb"http-equiv\s*=\s*[\"']?refresh", re.IGNORECASE)
_WORD = re.compile(r"[-_.\s]+")


@dataclass(frozen=True)
class Page:
    site: Site
    path: str  # relative to the site's root, "/"-separated


@dataclass
class Folder:
    """A candidate topic folder: its pages (its whole subtree's) and, once split, its sub-folders."""

    name: str
    pages: list[Page]
    children: dict[str, Folder] = field(default_factory=dict)
    depth: int = 0  # how many path segments of a page (folders, then the name's first word) are used up

    def split(self) -> list[Folder]:
        """Sub-folders, found when first asked: by the pages' next path segment, or cut into sections."""
        if not self.children:
            self.children = _split(self)
        return list(self.children.values())


def site_pages(site: Site) -> list[Page]:
    """The site's HTML pages, redirect stubs left out, in path order."""
    pages = []
    for path in sorted(p for p in site.root.rglob("*") if p.suffix.lower() in PAGE_SUFFIXES and p.is_file()):
        with path.open("rb") as fh:
            head = fh.read(HEAD_BYTES)
        if _REFRESH.search(head):
            continue
        pages.append(Page(site, path.relative_to(site.root).as_posix()))
    return pages


def page_title(page: Page) -> str:
    with (page.site.root / page.path).open("rb") as fh:
        found = _TITLE.search(fh.read(HEAD_BYTES))
    title = html.unescape(found.group(1).decode("utf-8", "replace")) if found else ""
    return " ".join(title.split())[:200] or page.path.rsplit("/", 1)[-1]


def _segments(page: Page) -> list[str]:
    """The page's folders, then the first word of its name ("sql-select.html" -> "sql")."""
    *dirs, name = page.path.split("/")
    stem = name.rsplit(".", 1)[0]
    word = _WORD.split(stem, maxsplit=1)[0] or stem
    return [*dirs, word]


def _split(folder: Folder) -> dict[str, Folder]:
    depth, deepest = folder.depth, max(len(_segments(p)) for p in folder.pages)
    while depth < deepest:
        groups: dict[str, list[Page]] = {}
        for page in folder.pages:
            segments = _segments(page)
            groups.setdefault(segments[depth] if depth < len(segments) else "", []).append(page)
        named = {k: v for k, v in groups.items() if k}
        if len(groups) >= 2:
            return {k: Folder(k, v, depth=depth + 1) for k, v in named.items()}
        depth += 1  # every page in one sub-folder: it adds nothing, look one level deeper
    return _sections(folder)


def _sections(folder: Folder) -> dict[str, Folder]:
    """Consecutive runs of the pages (path order keeps a manual's sections together), named after the
    title of each run's first page."""
    count = min(MAX_SECTIONS, len(folder.pages) // 2)
    if count < 2:
        return {}
    size = -(-len(folder.pages) // count)
    result: dict[str, Folder] = {}
    for start in range(0, len(folder.pages), size):
        run = folder.pages[start : start + size]
        name = unique_name(page_title(run[0])[:60], result)
        result[name] = Folder(name, run, depth=10**6)  # a section is not split by path again
    return result


def unique_name(name: str, taken: dict[str, Folder] | set[str]) -> str:
    name = " ".join(name.split()) or "pages"
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name} ({n})", n + 1
    return candidate


def _top_folders(corpus: WebCorpus) -> list[Folder]:
    """Topic groups holding their sites (a group of one site splits as that site; a web of one group
    starts at its sites)."""
    by_group: dict[str, list[Folder]] = {}
    for site in corpus.sites:
        pages = site_pages(site)
        if pages:
            by_group.setdefault(site.group, []).append(Folder(site.name, pages))
    if len(by_group) == 1:
        return next(iter(by_group.values()))
    groups = []
    for group, sites in by_group.items():
        folder = Folder(group.capitalize(), [p for s in sites for p in s.pages])
        if len(sites) > 1:
            folder.children = {s.name: s for s in sites}
        groups.append(folder)
    return groups


def generated_taxonomy(
    corpus: WebCorpus,
    topics: int,
    per_topic: int = 4,
    seed: int = 0,
    base_url: Callable[[Site], str] | None = None,
) -> Taxonomy:
    """A taxonomy of up to `topics` folders (fewer only when the web cannot be split that finely)."""
    if topics < 1 or per_topic < 1:
        raise ValueError("topics and per_topic must be at least 1")
    rng = random.Random(seed)
    order = 0
    heap: list[tuple[int, int, tuple[str, ...], Folder]] = []

    def push(path: tuple[str, ...], folder: Folder) -> None:
        nonlocal order
        heapq.heappush(heap, (-len(folder.pages), order, path, folder))
        order += 1

    taken: dict[tuple[str, ...], Folder] = {}
    for folder in _top_folders(corpus):
        push((folder.name,), folder)
    while heap and len(taken) < topics:
        _, _, path, folder = heapq.heappop(heap)
        taken[path] = folder
        for child in folder.split():
            push((*path, child.name), child)
    documents: list[TrainingDocument] = []
    for path, folder in taken.items():
        inner = {id(p) for child_path, child in taken.items() if child_path[:-1] == path for p in child.pages}
        own = [p for p in folder.pages if id(p) not in inner]
        for page in sorted(rng.sample(own, min(per_topic, len(own))), key=lambda p: p.path):
            url = page_url(page, base_url)
            documents.append(
                TrainingDocument(topic_path_key(path), POSITIVE, url=url, title=page_title(page))
            )
    keys = tuple(sorted(topic_path_key(path) for path in taken))
    return Taxonomy(keys, tuple(documents), f"{corpus.name}: {len(keys)} topics")


def page_url(page: Page, base_url: Callable[[Site], str] | None = None) -> str:
    """The page's upstream URL (a `hosts` site's first folder is the host), or its served one."""
    site = page.site
    if base_url is not None:
        return f"{base_url(site).rstrip('/')}/{page.path}"
    if site.layout == "hosts":
        return f"http://{page.path}"
    if not site.upstream_prefixes:
        raise CorpusError(f"site {site.name!r} has no upstream prefix: generate with a served web's URLs")
    return f"https://{site.upstream_prefixes[0].rstrip('/')}/{page.path}"


def generated_bookmarks(
    corpus: WebCorpus,
    topics: int,
    per_topic: int = 4,
    seed: int = 0,
    base_url: Callable[[Site], str] | None = None,
) -> str:
    """`generated_taxonomy` as a Netscape bookmarks file (what every browser exports)."""
    return netscape_html(generated_taxonomy(corpus, topics, per_topic, seed, base_url))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m simnet.web.bookmarks", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--web", required=True, help="fixture, devweb, webkb or a folder holding sites.tsv")
    parser.add_argument("--topics", type=int, required=True, help="topic folders, parents included")
    parser.add_argument("--per-topic", type=int, default=4, help="bookmarks per folder at most (4)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True, help="the bookmarks file to write")
    args = parser.parse_args(argv)
    try:
        taxonomy = generated_taxonomy(load_web(args.web), args.topics, args.per_topic, args.seed)
    except (CorpusError, ValueError) as exc:
        print(exc, file=sys.stderr)
        return 2
    args.out.write_text(netscape_html(taxonomy), encoding="utf-8")
    print(f"{args.out}: {len(taxonomy.topics)} topics, {len(taxonomy.documents)} bookmarks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
