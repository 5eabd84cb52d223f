"""Cut the committed fixture web (simnet/webs/fixture/) from the devweb, reproducibly.

    python -m simnet.webs.cut_fixture [--devweb DIR] [--out DIR]

Per site: breadth-first from the entry page over internal links (in document order), keeping pages no
larger than MAX_PAGE_BYTES until the site's page or byte budget is spent. Pages are copied verbatim, so
links to pages left out become realistic 404s and upstream absolute links stay for the server to rewrite.
Only permissively licensed sites are used.
"""

from __future__ import annotations

import argparse
import posixpath
import shutil
from collections import deque
from pathlib import Path
from urllib.parse import unquote, urlsplit

from selectolax.lexbor import LexborHTMLParser

# site -> (max pages, max bytes); licences: PSF, PostgreSQL, public domain, Apache-2.0, gnuplot (BSD-like)
BUDGETS = {
    "python": (60, 1_200_000),
    "postgresql": (100, 800_000),
    "sqlite": (80, 800_000),
    "apache": (70, 900_000),
    "gnuplot": (110, 500_000),
}
MAX_PAGE_BYTES = 40_000
OUT = Path(__file__).resolve().parent / "fixture"


def internal_links(html: bytes, page: str) -> list[str]:
    """Site-relative paths of the relative links of a page, in document order."""
    tree = LexborHTMLParser(html)
    found = []
    for node in tree.css("a[href]"):
        href = (node.attributes.get("href") or "").strip()
        parts = urlsplit(href)
        if parts.scheme or parts.netloc or not parts.path:
            continue
        path = posixpath.normpath(posixpath.join(posixpath.dirname(page), unquote(parts.path)))
        if parts.path.endswith("/"):
            path = posixpath.join(path, "index.html")
        if not path.startswith(".."):
            found.append(path.lstrip("/"))
    return found


def cut_site(source: Path, entry: str, max_pages: int, max_bytes: int) -> list[str]:
    chosen: list[str] = []
    seen = {entry}
    queue = deque([entry])
    total = 0
    while queue and len(chosen) < max_pages:
        page = queue.popleft()
        file = source / page
        if not file.is_file() or file.stat().st_size > MAX_PAGE_BYTES or not page.endswith(".html"):
            continue
        if total + file.stat().st_size > max_bytes:
            break
        chosen.append(page)
        total += file.stat().st_size
        for link in internal_links(file.read_bytes(), page):
            if link not in seen:
                seen.add(link)
                queue.append(link)
    return chosen


def main(argv: list[str] | None = None) -> int:
    from simnet.web.corpus import read_sites, unpacked_devweb

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devweb", type=Path, default=None, help="an unpacked devweb (default: the cache)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    source = args.devweb or unpacked_devweb()
    sites = {site.name: site for site in read_sites(source)}
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    rows = ["site\tgroup\tentry\tupstream_prefixes"]
    for name, (max_pages, max_bytes) in BUDGETS.items():
        site = sites[name]
        pages = cut_site(site.root, site.entry, max_pages, max_bytes)
        for page in pages:
            target = args.out / name / page
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(site.root / page, target)
        rows.append(f"{name}\t{site.group}\t{site.entry}\t{','.join(site.upstream_prefixes)}")
        print(f"{name}: {len(pages)} pages")
    (args.out / "sites.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
