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
from typing import Any

import trio

from crawler.taxonomy import read_taxonomy
from simnet.bench.discovery import bench_focus, crawl_summary, measured_crawl, ratios, relevant_in_web
from simnet.experiments.webrun import add_web_arguments, crawl_settings, prepare_training
from simnet.web import SubprocessWeb, load_web, serve_web_in_subprocess

SITEMAP_REQUEST = re.compile(r"/sitemap(-\d+)?\.xml")


async def one_crawl(
    web: SubprocessWeb,
    training: Any,
    targets: dict[str, str],
    args: argparse.Namespace,
    sitemaps: bool,
    findable: int,
) -> dict[str, Any]:
    settings = dataclasses.replace(crawl_settings(), sitemaps_enabled=sitemaps)
    figures, requests = await measured_crawl(
        web, training, targets, args, bench_focus(args.pages), settings, findable
    )
    listed = sum(1 for r in requests if SITEMAP_REQUEST.fullmatch(r.path.split("?")[0]))
    return {**figures, "sitemap_requests": listed}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    corpus = load_web(args.web)
    with serve_web_in_subprocess(corpus, sitemaps=True) as web:
        training, targets = await prepare_training(web, read_taxonomy(args.bookmarks))
        findable = relevant_in_web(web, targets)
        crawls = {
            name: await one_crawl(web, training, targets, args, sitemaps, findable)
            for name, sitemaps in (("without_sitemaps", False), ("with_sitemaps", True))
        }
    report = {"web": corpus.name, "pages": args.pages, "targets": targets, "relevant_in_web": findable}
    return {**report, **crawls, "ratio": ratios(crawls["with_sitemaps"], crawls["without_sitemaps"])}


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
            f"{name:>17}: {crawl_summary(figures, report['relevant_in_web'])}, "
            f"{figures['requests']} requests ({figures['sitemap_requests']} sitemaps), "
            f"{figures['seconds']} s",
            file=sys.stderr,
        )
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
