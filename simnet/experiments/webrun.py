"""What every crawl experiment on the simulated web shares: its options, crawl settings and training setup.

An experiment loads the web, serves it with `simnet.web.serve_web_in_subprocess(corpus)`, then calls
`prepare_training` to fetch the bookmarks' pages from the served web and find each topic's target group.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from crawler.fetch import Fetcher
from crawler.focus import in_subtree
from crawler.settings import CrawlSettings
from crawler.taxonomy import POSITIVE, Taxonomy, fetch_documents
from simnet.web import SubprocessWeb


def add_web_arguments(parser: argparse.ArgumentParser, pages: int, pages_help: str, hub: bool = True) -> None:
    """--web, --bookmarks, --pages (default `pages`) and, with `hub`, --no-hub."""
    parser.add_argument("--web", default="fixture", help="fixture, devweb, webkb or a folder with sites.tsv")
    parser.add_argument(
        "--bookmarks", type=Path, required=True, help="a bookmarks export or topic folder tree"
    )
    parser.add_argument("--pages", type=int, default=pages, help=pages_help)
    if hub:
        parser.add_argument("--no-hub", action="store_true", help="do not start from the web's hub page")


def crawl_settings() -> CrawlSettings:
    """Loopback pages are cheap: no delay, a few requests per host, loopback hosts only."""
    return dataclasses.replace(
        CrawlSettings(),
        download_delay=0.0,
        autothrottle_enabled=False,
        autothrottle_start_delay=0.0,
        concurrent_requests=16,
        concurrent_requests_per_domain=4,
        allowed_hosts=("127.0.0.0/8",),
        stats_interval=5.0,
    )


def sequential_settings() -> CrawlSettings:
    """One fetch at a time, for a `Crawler(..., lockstep=True)`: its fetch order then follows the seeds, the
    web and the policy alone, so two crawls that differ by one policy change differ only by it (with 16
    concurrent fetches, completion order alone moved a topic's irrelevant count by 30% between two identical
    crawls; one fetch at a time without lockstep, by 20%)."""
    return dataclasses.replace(crawl_settings(), concurrent_requests=1, concurrent_requests_per_domain=1)


def target_groups(taxonomy: Taxonomy, label_of: Callable[[str], str | None]) -> dict[str, str]:
    """Per topic, the majority ground-truth group of the bookmarks in its subtree."""
    targets = {}
    for topic in taxonomy.topics:
        groups = Counter(
            label_of(d.url)
            for d in taxonomy.documents
            if d.polarity == POSITIVE and d.url and in_subtree(d.topic, topic)
        )
        groups.pop(None, None)
        if groups:
            targets[topic] = groups.most_common(1)[0][0]
    return targets


async def fetch_training(taxonomy: Taxonomy, settings: CrawlSettings) -> Taxonomy:
    fetcher = Fetcher(settings)
    try:
        return await fetch_documents(taxonomy, fetcher)
    finally:
        await fetcher.aclose()


async def prepare_training(web: SubprocessWeb, taxonomy: Taxonomy) -> tuple[Taxonomy, dict[str, str]]:
    """The taxonomy with its bookmarks mapped to the served web and fetched, and each topic's target group.
    Bookmarks the web does not serve are named on stderr (they cannot train anything)."""
    mapped = taxonomy.map_urls(web.map_upstream)
    unmapped = [d.url for d in mapped.documents if d.url and web.label_of(d.url) is None]
    if unmapped:
        print(f"bookmarks the web does not serve (ignored): {', '.join(unmapped)}", file=sys.stderr)
    fetched = await fetch_training(mapped, crawl_settings())
    return fetched, target_groups(fetched, web.label_of)
