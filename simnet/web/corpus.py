"""Web corpora: a folder of site folders plus `sites.tsv`, and the named webs the project knows.

`sites.tsv` columns: site, group, entry, upstream_prefixes (comma-separated, like `docs.python.org/3`), and an
optional fifth column `layout`: `flat` (default: an upstream prefix maps to the site's root) or `hosts` (the
site folder holds one folder per upstream host name, as the WebKB web does). A site folder may hold
`labels.tsv` (path, group) giving pages their own ground-truth group, overriding the site's.
"""

from __future__ import annotations

import csv
import os
import shutil
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from simnet.paths import PROJECT_ROOT, cache_dir, shared_file
from simnet.web.errors import CorpusError

FIXTURE_DIR = PROJECT_ROOT / "simnet" / "webs" / "fixture"
SITES_FILE = "sites.tsv"
LABELS_FILE = "labels.tsv"
LAYOUTS = ("flat", "hosts")


@dataclass(frozen=True)
class Site:
    name: str
    group: str
    entry: str  # path of the entry page relative to the site root, e.g. "index.html"
    upstream_prefixes: tuple[str, ...]  # "docs.python.org/3" (no scheme); host names for layout "hosts"
    root: Path
    layout: str = "flat"

    @cached_property
    def page_labels(self) -> dict[str, str]:
        """Per-page groups from the site's `labels.tsv` ("/path" -> group); empty for most webs."""
        path = self.root / LABELS_FILE
        if not path.exists():
            return {}
        with path.open(encoding="utf-8", newline="") as fh:
            return {
                "/" + row[0].lstrip("/"): row[1] for row in csv.reader(fh, delimiter="\t") if len(row) >= 2
            }


@dataclass(frozen=True)
class WebCorpus:
    name: str
    root: Path
    sites: tuple[Site, ...]

    @property
    def groups(self) -> list[str]:
        return sorted({site.group for site in self.sites})

    def site(self, name: str) -> Site:
        for site in self.sites:
            if site.name == name:
                return site
        raise KeyError(
            f"no site {name!r} in web {self.name!r}; sites: {', '.join(s.name for s in self.sites)}"
        )


def read_sites(root: Path) -> tuple[Site, ...]:
    """Parse `root/sites.tsv` and check that every site folder and entry page exists."""
    path = root / SITES_FILE
    if not path.exists():
        raise CorpusError(f"{path} is missing: a web corpus is a folder of site folders plus {SITES_FILE}")
    sites = []
    with path.open(encoding="utf-8", newline="") as fh:
        rows = [row for row in csv.reader(fh, delimiter="\t") if row and not row[0].startswith("#")]
    for lineno, row in enumerate(rows[1:], start=2):
        if len(row) < 3:
            raise CorpusError(f"{path}:{lineno}: expected site, group, entry, upstream_prefixes[, layout]")
        name, group, entry = row[0].strip(), row[1].strip(), row[2].strip()
        prefixes = tuple(p.strip() for p in (row[3] if len(row) > 3 else "").split(",") if p.strip())
        layout = row[4].strip() if len(row) > 4 and row[4].strip() else "flat"
        if layout not in LAYOUTS:
            raise CorpusError(f"{path}:{lineno}: layout must be one of {LAYOUTS}, not {layout!r}")
        site_root = root / name
        if not site_root.is_dir():
            raise CorpusError(f"{path}:{lineno}: site folder {site_root} is missing")
        sites.append(Site(name, group, entry.lstrip("/"), prefixes, site_root, layout))
    if not sites:
        raise CorpusError(f"{path} lists no sites")
    return tuple(sites)


def load_web(name_or_dir: str | Path) -> WebCorpus:
    """ "fixture", "devweb", "webkb" or a folder in the sites.tsv format."""
    if name_or_dir == "fixture":
        return WebCorpus("fixture", FIXTURE_DIR, read_sites(FIXTURE_DIR))
    if name_or_dir == "devweb":
        root = unpacked_devweb()
        return WebCorpus("devweb", root, read_sites(root))
    if name_or_dir == "webkb":
        from simnet.web.webkb import built_webkb

        root = built_webkb()
        return WebCorpus("webkb", root, read_sites(root))
    root = Path(name_or_dir).expanduser()
    if not root.is_dir():
        raise CorpusError(
            f"unknown web {str(name_or_dir)!r}: give fixture, devweb, webkb or a folder holding {SITES_FILE}"
        )
    return WebCorpus(root.name, root.resolve(), read_sites(root))


def unpacked_devweb() -> Path:
    """`../shared/data/web/devweb.tar.xz` unpacked once into the cache (raises SharedDataMissing)."""
    archive = shared_file("web/devweb.tar.xz")

    def unpack(folder: Path) -> None:
        with tarfile.open(archive, "r:xz") as tar:
            tar.extractall(folder, filter="data")

    return build_once(cache_dir() / "webs" / "devweb", unpack)


def build_once(target: Path, build: Callable[[Path], None]) -> Path:
    """Build a cached folder atomically: each builder fills its own folder, the first rename wins."""
    done = target / ".complete"
    if done.exists():
        return target
    partial = target.with_name(f"{target.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        build(partial)
        (partial / ".complete").touch()
        if target.exists() and not done.exists():
            shutil.rmtree(target, ignore_errors=True)  # a builder died half-way before
        try:
            partial.rename(target)
        except OSError:
            if not done.exists():
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return target
