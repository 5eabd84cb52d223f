"""`topicswarm demo` (`make demo`): crawl the bundled fixture web with one node and show what it found.

Serves the committed fixture web (`simnet.web`, real documentation sites on loopback addresses), crawls it
breadth-first from the generated hub page into a temporary data directory, and prints the crawl summary
and a few search results. Needs no network and no terminal; finishes in well under a minute.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
from pathlib import Path

import trio

from crawler.repository import Repository
from crawler.search import search
from crawler.settings import CrawlSettings
from node.cli.crawl import crawl, summary
from node.datadir import DataDir

DEMO_QUERIES = ("transaction isolation", "virtual host", "plot style", "sqlite index")


def demo_settings() -> CrawlSettings:
    """Loopback pages cost the server little: a short delay keeps the demo brisk yet spaced per host."""
    return dataclasses.replace(
        CrawlSettings(),
        download_delay=0.0,
        autothrottle_enabled=False,
        autothrottle_start_delay=0.0,
        concurrent_requests=16,
        concurrent_requests_per_domain=4,
        allowed_hosts=("127.0.0.0/8",),
    )


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("demo", help="crawl the bundled fixture web on loopback and show a summary")
    parser.add_argument("--web", default="fixture", help="the simulated web to crawl (default: fixture)")
    parser.add_argument("--max-pages", type=int, default=None, metavar="N", help="stop after N documents")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR", help="keep the data directory here")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.keep is not None:
        return _demo(DataDir(args.keep).ensure(), args)
    with tempfile.TemporaryDirectory(prefix="topicswarm-demo-") as tmp:
        return _demo(DataDir(Path(tmp)), args)


def _demo(data: DataDir, args: argparse.Namespace) -> int:
    from simnet.web import load_web, serve_web

    corpus = load_web(args.web)

    async def main():
        async with serve_web(corpus) as web:
            print(f"serving the {args.web!r} web: {len(corpus.sites)} sites, hub {web.hub_url}", flush=True)
            repo = Repository(data.repository)
            try:
                return await crawl(repo, demo_settings(), [web.hub_url], args.max_pages, sys.stderr)
            finally:
                repo.close()

    stats = trio.run(main)
    print(summary(stats))
    with Repository(data.repository) as repo:
        for query in DEMO_QUERIES:
            hits = search(repo, query, limit=3, syntax="plain")
            print(f'\nsearch "{query}": {len(hits)} shown')
            for hit in hits:
                print(f"  {hit.title or '(no title)'}\n    {hit.url}\n    {hit.snippet[:160]}")
    return 0
