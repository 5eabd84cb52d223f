"""Revisit cost: fetching a crawled repository again with validators (ETag) against without, side by side.

A breadth-first crawl of a served web stores `--pages` pages; its repository is copied, the crawler's
calendar is moved past `revisit_after`, and each copy is revisited once: one asking with the stored ETags
(the web answers 304 without a body for an unchanged page), one without them (every page is sent and
compared by its fingerprint). Both find every page unchanged. With `--sitemaps` the web serves a sitemap
per site and the crawl reads them, so the revisits read the sitemaps again too (unchanged: 304 with their
ETag, the same bytes without). Prints the figures, then one JSON line with the bytes and seconds of both
revisits and their ratios (with / without).

    python -m simnet.bench.revisit_cost --web devweb --pages 1000 [--sitemaps]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from crawler.engine import Crawler
from crawler.fetch import Fetcher
from crawler.repository import Repository
from crawler.settings import CrawlSettings
from simnet.web import serve_web_in_subprocess


class Calendar:
    """The crawlers' wall clock: the revisits happen `revisit_after` later without waiting for it."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


class MeteredFetcher:
    """The real fetcher, counting the body bytes it received; `validators=False` never sends them."""

    def __init__(self, fetcher: Fetcher, validators: bool) -> None:
        self.fetcher = fetcher
        self.politeness = fetcher.politeness
        self.robots = fetcher.robots  # the crawler asks it for the sitemaps a host's robots.txt names
        self.validators = validators
        self.body_bytes = 0
        self.not_modified = 0

    async def fetch(self, url: str, validators: dict[str, str] | None = None) -> Any:
        result = await self.fetcher.fetch(url, validators=validators if self.validators else None)
        self.body_bytes += len(result.body)
        self.not_modified += result.not_modified
        return result

    async def aclose(self) -> None:
        await self.fetcher.aclose()


async def crawl(
    repo_path: Path, settings: CrawlSettings, calendar: Calendar, validators: bool, **run: Any
) -> dict:
    """One run of a crawler over the repository; its figures."""
    repo = Repository(repo_path)
    metered = MeteredFetcher(Fetcher(settings), validators)
    crawler = Crawler(repo, settings, metered, wall_clock=calendar)
    try:
        if "seed" in run:
            crawler.add_seeds([run.pop("seed")])
        started = time.perf_counter()
        stats = await crawler.run(**run)
        seconds = time.perf_counter() - started
    finally:
        await metered.aclose()  # the crawler closes only a fetcher it made itself
        repo.close()
    return {
        "pages": stats.pages,
        "revisits": stats.revisits,
        "changed": stats.changed,
        "gone": stats.gone,
        "sitemaps_read": stats.sitemaps,
        "sitemaps_unchanged": stats.sitemaps_unchanged,
        "not_modified": metered.not_modified,
        "body_bytes": metered.body_bytes,
        "seconds": round(seconds, 3),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--web", default="fixture", help="a named web or a web folder (default: fixture)")
    parser.add_argument("--pages", type=int, default=300, help="pages crawled, then revisited")
    parser.add_argument(
        "--sitemaps", action="store_true", help="the web serves sitemaps and the crawl reads them"
    )
    args = parser.parse_args(argv)
    settings = CrawlSettings(
        download_delay=0.0,
        autothrottle_enabled=False,
        concurrent_requests=16,
        concurrent_requests_per_domain=4,
        allowed_hosts=("127.0.0.0/8",),
    )
    calendar = Calendar()
    with (
        serve_web_in_subprocess(args.web, sitemaps=args.sitemaps) as web,
        tempfile.TemporaryDirectory() as tmp,
    ):
        first_path = Path(tmp) / "crawled.db"
        first = trio.run(
            lambda: crawl(first_path, settings, calendar, True, seed=web.hub_url, max_pages=args.pages)
        )
        calendar.now += settings.revisit_after
        runs = {}
        for name, validators in (("with_validators", True), ("without_validators", False)):
            copy = Path(tmp) / f"{name}.db"
            shutil.copyfile(first_path, copy)
            runs[name] = trio.run(
                lambda copy=copy, validators=validators: crawl(
                    copy, settings, calendar, validators, max_pages=args.pages
                )
            )
    with_v, without_v = runs["with_validators"], runs["without_validators"]
    megabytes = first["body_bytes"] / 1e6
    print(f"web {args.web}: crawled {first['pages']} pages, {megabytes:.1f} MB in {first['seconds']} s")
    for name, figures in runs.items():
        fetched = f"{figures['revisits']} pages"
        if args.sitemaps:
            sitemaps = figures["sitemaps_unchanged"] + figures["sitemaps_read"]
            fetched += f" and {sitemaps} sitemaps ({figures['sitemaps_unchanged']} unchanged)"
        outcome = (
            f"{figures['not_modified']} answered 304, {figures['changed']} changed, {figures['gone']} gone"
        )
        megabytes = figures["body_bytes"] / 1e6
        print(
            f"revisit {name.replace('_', ' ')}: {fetched}: {outcome}; "
            f"{megabytes:.2f} MB in {figures['seconds']} s"
        )
    result = {
        "web": args.web,
        "sitemaps": args.sitemaps,
        "crawled": first,
        **runs,
        "bytes_ratio": round(with_v["body_bytes"] / max(without_v["body_bytes"], 1), 4),
        "seconds_ratio": round(with_v["seconds"] / max(without_v["seconds"], 1e-9), 3),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
