"""Parse speed: `crawler.parse.parse_html` against a baseline revision of it, on the same pages in one run.

The baseline is `crawler/parse.py` as committed at `--baseline` (default: the per-node Python DOM walk
before the traversal-based walker), imported from a temporary copy. Every page is parsed by both and every
field of the results compared exactly, so the run is also the equivalence check over real pages. Prints
CPU ms/page of each (best of alternating passes), the ratio, lexbor's own parse time, then one JSON line.

    python -m simnet.bench.parse --web devweb --per-site 40 --rounds 3
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import importlib.util
import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from selectolax.lexbor import LexborHTMLParser

from crawler import parse as current
from simnet.web import load_web

ROOT = Path(__file__).resolve().parents[2]
BASELINE_REVISION = "6fa5bbc"  # last commit with the per-node Python DOM walk


def baseline_module(revision: str) -> ModuleType:
    """`crawler/parse.py` at `revision`, imported under its own name from a temporary file."""
    source = subprocess.run(
        ["git", "show", f"{revision}:crawler/parse.py"], cwd=ROOT, capture_output=True, check=True, text=True
    ).stdout
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "parse_baseline.py"
        path.write_text(source, encoding="utf-8")
        spec = importlib.util.spec_from_file_location("parse_baseline", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses resolve their module while being defined
        spec.loader.exec_module(module)
    return module


def sample_pages(web_name: str, per_site: int, seed: int = 0) -> list[tuple[str, bytes]]:
    """(url, body) of up to `per_site` seeded-random HTML pages of every site of the web."""
    corpus = load_web(web_name)
    pages = []
    for site in corpus.sites:
        files = sorted(p for p in site.root.rglob("*.htm*") if p.is_file())
        random.Random(seed).shuffle(files)
        for path in files[:per_site]:
            url = f"http://{site.name}.test/{path.relative_to(site.root).as_posix()}"
            pages.append((url, path.read_bytes()))
    return pages


def page_fields(page) -> dict:
    """Every field of a ParsedPage (links as plain tuples), comparable across the two modules' classes."""
    return dataclasses.asdict(page)


def mismatches(pages: list[tuple[str, bytes]], baseline: ModuleType) -> list[str]:
    """URL and differing fields of every page the two parsers disagree on, over the fields both have
    (fields added since the baseline have nothing to be compared with)."""
    out = []
    for url, body in pages:
        old, new = page_fields(baseline.parse_html(body, url)), page_fields(current.parse_html(body, url))
        differing = [name for name in old.keys() & new.keys() if old[name] != new[name]]
        if differing:
            out.append(f"{url}: {', '.join(sorted(differing))}")
    return out


def ms_per_page(parsers: dict[str, Callable[[bytes, str], object]], pages, rounds: int) -> dict[str, float]:
    """CPU ms/page of each parser, best of `rounds` passes taken in turn (the machine is shared: turns spread
    the disturbance over all parsers, and the minimum is the least disturbed pass)."""
    best = dict.fromkeys(parsers, float("inf"))
    for _ in range(rounds):
        for name, parse in parsers.items():
            gc.collect()  # no parser pays for the garbage of the one before it
            start = time.process_time()
            for url, body in pages:
                parse(body, url)
            best[name] = min(best[name], time.process_time() - start)
    return {name: seconds / len(pages) * 1000 for name, seconds in best.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--web", default="devweb", help="fixture, devweb, webkb or a web folder")
    parser.add_argument("--per-site", type=int, default=40, help="pages sampled from every site")
    parser.add_argument("--rounds", type=int, default=3, help="timed passes; the fastest counts")
    parser.add_argument("--baseline", default=BASELINE_REVISION, help="git revision of the baseline")
    args = parser.parse_args(argv)
    pages = sample_pages(args.web, args.per_site)
    baseline = baseline_module(args.baseline)
    differing = mismatches(pages, baseline)
    for line in differing[:20]:
        print("DIFFERS", line)
    parsers = {"lexbor": lambda body, url: LexborHTMLParser(body, encoding=True)}
    parsers |= {"baseline": baseline.parse_html, "current": current.parse_html}
    timings = ms_per_page(parsers, pages, args.rounds)
    lexbor, old, new = timings["lexbor"], timings["baseline"], timings["current"]
    kb = sum(len(body) for _, body in pages) / len(pages) / 1024
    print(f"{len(pages)} pages of {args.web} ({kb:.0f} KiB mean), best of {args.rounds} passes")
    print(f"identical output: {len(pages) - len(differing)}/{len(pages)} pages")
    print(f"lexbor parse only:              {lexbor:.3f} ms/page")
    print(f"parse_html baseline {args.baseline}: {old:.3f} ms/page")
    print(f"parse_html current:             {new:.3f} ms/page")
    print(f"speed-up: {old / new:.2f}x")
    summary = {"pages": len(pages), "identical": len(pages) - len(differing), "baseline_ms": round(old, 4)}
    summary |= {"current_ms": round(new, 4), "lexbor_ms": round(lexbor, 4), "ratio": round(old / new, 3)}
    print(json.dumps(summary))
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
