"""Sitemap discovery: a focused crawl that reads the sitemaps of hosts it finds on-topic, against one that
does not, side by side on one web.

    python -m simnet.bench.sitemap_discovery --web devweb --bookmarks simnet/webs/devweb-bookmarks.html \
        --pages 1000

The web is served with a sitemap per site, named in its robots.txt (`serve_web_in_subprocess(sitemaps=
True)`). Both crawls are the harvest experiment's `focused_retrain` (same bookmarks, hub, focus settings),
one with `sitemaps_enabled` off and one with it on, each storing `--pages` pages. Per crawl, from the
repository and the web's ground truth: stored pages, relevant pages (whose group is a topic's target group),
harvest rate (relevant / stored), recall (relevant / the web's pages of target groups), and from the
server's request log: requests, sitemap requests, and
seconds. Prints the figures, then one JSON line with both crawls and the ratios (with / without).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from crawler.focus import FocusSettings
from crawler.repository import Repository
from crawler.taxonomy import read_taxonomy
from simnet.experiments.harvest import crawl_variant
from simnet.experiments.webrun import add_web_arguments, crawl_settings, prepare_training
from simnet.web import SubprocessWeb, load_web, serve_web_in_subprocess
from simnet.web.server import page_url, site_pages

SITEMAP_REQUEST = re.compile(r"/sitemap(-\d+)?\.xml")


def relevant_in_web(web: SubprocessWeb, targets: dict[str, str]) -> int:
    """Pages the web serves whose group is a topic's target group: what a crawl could find at most."""
    groups = set(targets.values())
    urls = (
        page_url(web.base_url(site), relative) for site in web.sites for relative, _ in site_pages(site.root)
    )
    return sum(1 for url in urls if url is not None and web.label_of(url) in groups)


def relevant_pages(repo: Repository, web: SubprocessWeb, targets: dict[str, str]) -> tuple[int, int]:
    """(stored pages, those whose group is a topic's target group)."""
    groups = set(targets.values())
    urls = [url for (url,) in repo.db.execute("SELECT final_url FROM documents")]
    return len(urls), sum(1 for url in urls if web.label_of(url) in groups)


async def one_crawl(
    web: SubprocessWeb,
    training: Any,
    targets: dict[str, str],
    args: argparse.Namespace,
    sitemaps: bool,
    findable: int,
) -> dict[str, Any]:
    focus = FocusSettings(learning_pages=args.pages // 5, retrain_every=max(args.pages // 6, 1))
    settings = dataclasses.replace(crawl_settings(), sitemaps_enabled=sitemaps)
    hub = None if args.no_hub else web.hub_url
    before = len(web.fetch_request_log())
    with tempfile.TemporaryDirectory(prefix="sitemap-bench-") as tmp:
        repo = Repository(Path(tmp) / "repository.db")
        try:
            started = time.perf_counter()
            await crawl_variant("focused_retrain", repo, training, hub, args.pages, focus, settings)
            seconds = time.perf_counter() - started
            stored, relevant = relevant_pages(repo, web, targets)
        finally:
            repo.close()
    requests = web.fetch_request_log()[before:]
    return {
        "stored": stored,
        "relevant": relevant,
        "harvest_rate": round(relevant / stored, 4) if stored else 0.0,
        "recall": round(relevant / findable, 4) if findable else 0.0,
        "requests": len(requests),
        "sitemap_requests": sum(1 for r in requests if SITEMAP_REQUEST.fullmatch(r.path.split("?")[0])),
        "seconds": round(seconds, 2),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    corpus = load_web(args.web)
    with serve_web_in_subprocess(corpus, sitemaps=True) as web:
        training, targets = await prepare_training(web, read_taxonomy(args.bookmarks))
        findable = relevant_in_web(web, targets)
        crawls = {
            name: await one_crawl(web, training, targets, args, sitemaps, findable)
            for name, sitemaps in (("without_sitemaps", False), ("with_sitemaps", True))
        }
    without, with_ = crawls["without_sitemaps"], crawls["with_sitemaps"]
    ratios = {
        key: round(with_[key] / without[key], 3) if without[key] else None
        for key in ("relevant", "harvest_rate", "requests", "seconds")
    }
    report = {"web": corpus.name, "pages": args.pages, "targets": targets, "relevant_in_web": findable}
    return {**report, **crawls, "ratio": ratios}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m simnet.bench.sitemap_discovery", description=__doc__.split("\n")[0]
    )
    add_web_arguments(parser, 1000, "pages each crawl stores (default 1000)")
    args = parser.parse_args(argv)
    report = trio.run(run, args)
    for name in ("without_sitemaps", "with_sitemaps"):
        figures = report[name]
        print(
            f"{name:>17}: {figures['stored']} stored, {figures['relevant']} relevant "
            f"(harvest {figures['harvest_rate']:.3f}, recall {figures['recall']:.3f} of "
            f"{report['relevant_in_web']}), {figures['requests']} requests "
            f"({figures['sitemap_requests']} sitemaps), {figures['seconds']} s",
            file=sys.stderr,
        )
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
