"""Feed discovery: a focused crawl that reads the feeds pages name, with their entries tunnelled or judged by
their words, against one that does not read feeds, side by side on one web.

    python -m simnet.bench.feed_discovery --web devweb --bookmarks simnet/webs/devweb-bookmarks.html \
        --pages 1000

The web is served with a feed per site, named in the head of its pages (`serve_web_in_subprocess(feeds=
True)`, `simnet.web.feeds`). Three crawls, each the harvest experiment's `focused_retrain` (same bookmarks,
hub and focus settings) storing `--pages` pages, one fetch at a time in lockstep (so the crawls differ by
the feeds alone, not by the order concurrent fetches complete in): `without_feeds` (`feeds_enabled` off),
`feeds_tunnelled` (feeds read, every entry tunnelled through its feed: `judge_feed_entries` off) and
`feeds_judged` (each entry's title and summary classified, the accepted ones queued as links of accepted
pages, or raised to that priority where already queued). Per crawl, from
the repository and the web's ground truth: stored and relevant pages (whose group is a topic's target
group), harvest rate and recall (of the web's relevant pages); `via_feeds`, the stored pages first found
through a feed entry, and how many of them are relevant; from the server's log, requests and feed
requests. Prints the figures, then one JSON line with the crawls and the ratios of each feed crawl to the
crawl without feeds.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

import trio

from crawler.repository import Repository
from crawler.taxonomy import read_taxonomy
from simnet.bench.discovery import bench_focus, crawl_summary, measured_crawl, ratios, relevant_in_web
from simnet.experiments.webrun import add_web_arguments, prepare_training, sequential_settings
from simnet.web import SubprocessWeb, load_web, serve_web_in_subprocess
from simnet.web.feeds import FEED_PATH

CRAWLS = {  # name: (feeds_enabled, judge_feed_entries)
    "without_feeds": (False, False),
    "feeds_tunnelled": (True, False),
    "feeds_judged": (True, True),
}
_VIA_FEEDS = (
    "SELECT d.final_url FROM documents d JOIN frontier f ON f.url = d.url "
    "JOIN sitemaps s ON s.url = f.source WHERE s.kind = 'feed'"
)


def found_via_feeds(repo: Repository, web: SubprocessWeb, targets: dict[str, str]) -> tuple[int, int]:
    """(stored pages whose first link was a feed's entry, those of them whose group is a target group)."""
    groups = set(targets.values())
    urls = [url for (url,) in repo.db.execute(_VIA_FEEDS)]
    return len(urls), sum(1 for url in urls if web.label_of(url) in groups)


async def one_crawl(
    web: SubprocessWeb,
    training: Any,
    targets: dict[str, str],
    args: argparse.Namespace,
    feeds: bool,
    judged: bool,
    findable: int,
) -> dict[str, Any]:
    settings = dataclasses.replace(sequential_settings(), feeds_enabled=feeds)
    focus = bench_focus(args.pages, judge_feed_entries=judged)

    def via_feeds(repo: Repository) -> dict[str, int]:
        via, relevant = found_via_feeds(repo, web, targets)
        return {"via_feeds": via, "via_feeds_relevant": relevant}

    figures, requests = await measured_crawl(
        web, training, targets, args, focus, settings, findable, lockstep=True, measure=via_feeds
    )
    return {**figures, "feed_requests": sum(1 for r in requests if r.path.split("?")[0] == FEED_PATH)}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    corpus = load_web(args.web)
    with serve_web_in_subprocess(corpus, feeds=True) as web:
        training, targets = await prepare_training(web, read_taxonomy(args.bookmarks))
        findable = relevant_in_web(web, targets)
        crawls = {
            name: await one_crawl(web, training, targets, args, feeds, judged, findable)
            for name, (feeds, judged) in CRAWLS.items()
        }
    base = crawls["without_feeds"]
    to_base = {name: ratios(crawls[name], base) for name in CRAWLS if name != "without_feeds"}
    report = {"web": corpus.name, "pages": args.pages, "targets": targets, "relevant_in_web": findable}
    return {**report, **crawls, "ratio": to_base}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m simnet.bench.feed_discovery", description=__doc__.split("\n")[0]
    )
    add_web_arguments(parser, 1000, "pages each crawl stores (default 1000)")
    args = parser.parse_args(argv)
    report = trio.run(run, args)
    for name in CRAWLS:
        figures = report[name]
        print(
            f"{name:>15}: {crawl_summary(figures, report['relevant_in_web'])}; "
            f"{figures['via_feeds']} found through feeds, "
            f"{figures['via_feeds_relevant']} relevant; {figures['requests']} requests "
            f"({figures['feed_requests']} feeds), {figures['seconds']} s",
            file=sys.stderr,
        )
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
