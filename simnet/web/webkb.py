"""The WebKB 4-universities pages as a web corpus: one site per university, pages labelled by class.

File names in the archive are the pages' URLs (`^` for `/`, U+F03A for `:`), and each file starts with the
HTTP headers it was fetched with. A site folder holds one folder per original host name (layout `hosts`),
so every original URL keeps a local address; root-relative links are made absolute upstream URLs, which the
server rewrites to the local hosts like any other upstream link. `labels.tsv` gives each page its class.
"""

from __future__ import annotations

import re
import tarfile
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from simnet.paths import cache_dir, shared_file
from simnet.web.corpus import LABELS_FILE, SITES_FILE, build_once
from simnet.web.upstream import upstream_host

ARCHIVE = "corpora/webkb-raw.tar.gz"
SITE_GROUP = "university"
HEADER_LINE = re.compile(rb"^(HTTP/\d|[A-Za-z][A-Za-z0-9-]*:)")
ROOT_RELATIVE = re.compile(rb"""((?:href|src|action)\s*=\s*["']?)/(?!/)""", re.IGNORECASE)


@dataclass(frozen=True)
class WebkbPage:
    university: str
    label: str
    host: str  # upstream host name, port only when not 80
    local_path: str  # "host/path/file.html" inside the site folder
    body: bytes


def url_of_member(name: str) -> str:
    return name.replace("^", "/").replace("\uf03a", ":")


def strip_headers(raw: bytes) -> bytes:
    """The page without the HTTP headers it was saved with."""
    if not HEADER_LINE.match(raw):
        return raw
    for separator in (b"\r\n\r\n", b"\n\n"):
        index = raw.find(separator)
        if index != -1:
            return raw[index + len(separator) :]
    return raw


def local_path_of(url: str) -> tuple[str, str] | None:
    """(host, local path) of an original URL; directories get index.html."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.netloc:
        return None
    host = upstream_host("http", parts.netloc)
    path = unquote(parts.path) or "/"
    if path.endswith("/"):
        path += "index.html"
    if "/../" in path or path.endswith("/.."):
        return None
    return host, f"{host}{path}"


def absolutize_root_links(body: bytes, host: str) -> bytes:
    """`href="/x"` -> `href="http://host/x"`, so a page's root-relative links keep pointing at its host."""
    return ROOT_RELATIVE.sub(lambda m: m.group(1) + f"http://{host}/".encode(), body)


def read_pages(archive: Path) -> list[WebkbPage]:
    pages = []
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar:
            parts = member.name.split("/")
            if not member.isfile() or len(parts) != 5:
                continue
            _, _, label, university, name = parts
            found = local_path_of(url_of_member(name))
            if found is None:
                continue
            raw = tar.extractfile(member).read()
            pages.append(WebkbPage(university, label, found[0], found[1], strip_headers(raw)))
    return pages


def write_webkb(folder: Path, pages: list[WebkbPage]) -> None:
    """Lay the pages out as a web corpus; a host seen under several universities goes to its majority one."""
    votes: dict[str, Counter] = defaultdict(Counter)
    for page in pages:
        votes[page.host][page.university] += 1
    owner = {host: counts.most_common(1)[0][0] for host, counts in votes.items()}
    labels: dict[str, list[str]] = defaultdict(list)
    hosts: dict[str, set[str]] = defaultdict(set)
    entries: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
    written: set[str] = set()
    for page in sorted(pages, key=lambda p: (p.local_path, p.label)):
        site = owner[page.host]
        key = f"{site}/{page.local_path}"
        if key in written:
            continue
        target = folder / site / page.local_path
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(absolutize_root_links(page.body, page.host))
        except OSError:  # a file name clashing with a folder of the same name: keep the first
            continue
        written.add(key)
        labels[site].append(f"{page.local_path}\t{page.label}")
        hosts[site].add(page.host)
        entries[site].append((page.label != "department", len(page.local_path), page.local_path))
    rows = ["site\tgroup\tentry\tupstream_prefixes\tlayout"]
    for site in sorted(labels):
        (folder / site / LABELS_FILE).write_text("\n".join(labels[site]) + "\n", encoding="utf-8")
        entry = min(entries[site])[2]
        rows.append(f"{site}\t{SITE_GROUP}\t{entry}\t{','.join(sorted(hosts[site]))}\thosts")
    (folder / SITES_FILE).write_text("\n".join(rows) + "\n", encoding="utf-8")


def built_webkb() -> Path:
    """The WebKB web corpus, built once into the cache from the shared archive (raises SharedDataMissing)."""
    archive = shared_file(ARCHIVE)
    return build_once(cache_dir() / "webs" / "webkb", lambda folder: write_webkb(folder, read_pages(archive)))
