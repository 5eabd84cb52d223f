"""Freshness: how soon a crawl finds a page after it is published when it reads the sites' feeds, against one
that only revisits the pages it holds, side by side on one web that publishes.

The served web holds back each site's `--held` newest pages and publishes one per site every round
(`simnet.web.publishing`): until then they answer 404 and no page links to them. Two breadth-first crawlers
keep the web, one following and re-reading the feeds its pages name (`crawler.feeds`), one not; both revisit
their pages when due (`crawler.revisits`: the interval starts at `--revisit-rounds` rounds, halves when a
page changed and doubles when it did not). Each crawls the published web to its end first. Then every round
the web publishes, the crawlers' calendar moves one round on, and each crawler fetches what is due and what
it found, to the end. Both see the same web at every round.

Measured per crawler, from the server's log of its requests: of the pages published, how many it fetched
within `--rounds` rounds, the rounds from publication to the first fetch (0: in the round it appeared), and
its requests per round, the cost of keeping the web. Prints the figures, then one JSON line with both and
their ratios (feeds / links).

    python -m simnet.bench.freshness --web fixture --held 10 --rounds 40
    python -m simnet.bench.freshness --web devweb --sites git,sqlite,gnuplot --held 20 --rounds 60
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import trio

from crawler.engine import Crawler
from crawler.fetch import Fetcher
from crawler.repository import Repository
from crawler.settings import CrawlSettings
from simnet.bench.revisit_cost import Calendar  # the crawlers' and the web's clock: rounds pass at once
from simnet.web import load_web, serve_web
from simnet.web.corpus import WebCorpus
from simnet.web.layout import RequestRecord
from simnet.web.publishing import Publishing

ROUND_SECONDS = 3600.0  # a round of the calendar: an hour, the feeds' and the crawlers' time unit


@dataclasses.dataclass
class Keeper:
    """One crawler keeping the web: its repository, its fetcher (robots and politeness kept across rounds)
    and the requests it made in each round (round 0: the first crawl)."""

    name: str
    settings: CrawlSettings
    repo: Repository
    fetcher: Fetcher
    requests: list[list[RequestRecord]] = dataclasses.field(default_factory=list)

    async def crawl(self, web: Any, calendar: Calendar, seed: str | None = None) -> None:
        before = len(web.request_log)
        crawler = Crawler(self.repo, self.settings, self.fetcher, wall_clock=calendar)
        if seed is not None:
            crawler.add_seeds([seed])
        await crawler.run()
        self.requests.append(web.request_log[before:])


def keeper_settings(revisit_rounds: float, feeds: bool) -> CrawlSettings:
    """A crawler that keeps the whole web: no depth limit nor host budget (a served web is finite and has no
    traps, and a university's site of WebKB names more than the default budget's 5,000 URLs)."""
    return CrawlSettings(
        depth_limit=0,
        host_page_budget=0,
        download_delay=0.0,
        autothrottle_enabled=False,
        concurrent_requests=16,
        concurrent_requests_per_domain=4,
        allowed_hosts=("127.0.0.0/8",),
        revisit_after=revisit_rounds * ROUND_SECONDS,
        sitemaps_enabled=False,
        feeds_enabled=feeds,
    )


def request_key(host: str, path: str) -> tuple[str, str]:
    """A request's host and unquoted path, without its query, a folder's as its index.html's (the server
    answers both with that file): how a URL and a logged request are matched."""
    path = unquote(path.partition("?")[0])
    return host.lower(), path + "index.html" if path.endswith("/") else path


def first_answers(requests: list[list[RequestRecord]], status: int) -> dict[tuple[str, str], int]:
    """Each page's first round with an answer of `status`, from a crawler's requests by round."""
    first: dict[tuple[str, str], int] = {}
    for round_number, records in enumerate(requests):
        for record in records:
            if record.status == status:
                first.setdefault(request_key(record.host, record.path), round_number)
    return first


def freshness(
    published: dict[str, int], requests: list[list[RequestRecord]], rounds: int, settled: float
) -> dict[str, Any]:
    """Of the pages published (URL -> round), those fetched by the end and the rounds each waited; the
    mean also of those published after round `settled`, once the first revisits had happened; and how many
    the crawler asked for before they were published (a link the web left in place: answered 404, and a
    crawl does not ask for a URL twice)."""
    first, missing = first_answers(requests, 200), first_answers(requests, 404)
    waits, settled_waits, early = [], [], 0
    for url, round_published in published.items():
        parts = urlsplit(url)
        key = request_key(parts.netloc, parts.path)
        early += missing.get(key, round_published) < round_published
        fetched = first.get(key)
        if fetched is not None and fetched >= round_published:
            waits.append(fetched - round_published)
            if round_published > settled:
                settled_waits.append(fetched - round_published)
    later = requests[1:]
    return {
        "published": len(published),
        "fetched": len(waits),
        "median_wait": statistics.median(waits) if waits else None,
        "mean_wait": mean(waits),
        "max_wait": max(waits) if waits else None,
        "asked_before_published": early,
        "published_settled": sum(1 for r in published.values() if r > settled),
        "mean_wait_settled": mean(settled_waits),
        "first_crawl_requests": len(requests[0]),
        "requests_per_round": round(sum(map(len, later)) / rounds, 1) if rounds else 0.0,
        "feed_requests": sum(1 for records in later for r in records if r.path.endswith("/feed.xml")),
    }


async def run(corpus: WebCorpus, held: int, rounds: int, revisit_rounds: float, workdir: Path) -> dict:
    """Both crawlers over `rounds` rounds of a web publishing `held` pages per site; their figures."""
    calendar = Calendar()
    publishing = Publishing.newest(corpus, held, clock=calendar)
    keepers = []
    for name, feeds in (("feeds", True), ("links", False)):
        settings = keeper_settings(revisit_rounds, feeds)
        repo = Repository(workdir / f"{name}.db")
        keepers.append(Keeper(name, settings, repo, Fetcher(settings)))
    published: dict[str, int] = {}
    try:
        async with serve_web(corpus, feeds=True, publishing=publishing) as web:
            for keeper in keepers:
                await keeper.crawl(web, calendar, seed=web.hub_url)
            for round_number in range(1, rounds + 1):
                calendar.now += ROUND_SECONDS
                published.update(dict.fromkeys(web.publish_next(), round_number))
                for keeper in keepers:
                    await keeper.crawl(web, calendar)
    finally:
        for keeper in keepers:
            await keeper.fetcher.aclose()
            keeper.repo.close()
    return {keeper.name: freshness(published, keeper.requests, rounds, revisit_rounds) for keeper in keepers}


def mean(values: list[int]) -> float | None:
    return round(statistics.fmean(values), 2) if values else None


def subset(corpus: WebCorpus, names: str) -> WebCorpus:
    """The web with only the named sites (comma-separated); all of them for an empty string."""
    if not names:
        return corpus
    chosen = tuple(corpus.site(name.strip()) for name in names.split(",") if name.strip())
    return dataclasses.replace(corpus, sites=chosen)


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--web", default="fixture", help="a named web or a web folder (default: fixture)")
    parser.add_argument("--sites", default="", help="only these sites of the web, comma-separated")
    parser.add_argument("--held", type=int, default=10, help="pages each site publishes, one per round")
    parser.add_argument("--rounds", type=int, default=40, help="rounds the crawlers keep the web")
    parser.add_argument(
        "--revisit-rounds", type=float, default=8.0, help="a page's first revisit interval, in rounds"
    )
    args = parser.parse_args(argv)
    if args.held < 1 or args.rounds < 1 or args.revisit_rounds <= 0:
        parser.error("--held and --rounds must be at least 1 and --revisit-rounds positive")
    corpus = subset(load_web(args.web), args.sites)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="freshness-bench-") as tmp:
        figures = trio.run(run, corpus, args.held, args.rounds, args.revisit_rounds, Path(tmp))
    seconds = round(time.perf_counter() - started, 1)
    feeds, links = figures["feeds"], figures["links"]
    print(
        f"web {args.web} ({len(corpus.sites)} sites): {feeds['published']} pages published over "
        f"{args.rounds} rounds; revisits every {args.revisit_rounds:g} rounds at first"
    )
    for name, f in figures.items():
        print(
            f"{name}: fetched {f['fetched']} of {f['published']} published; rounds waited median "
            f"{f['median_wait']}, mean {f['mean_wait']} ({f['mean_wait_settled']} for the "
            f"{f['published_settled']} published after round {args.revisit_rounds:g}), max {f['max_wait']}; "
            f"{f['asked_before_published']} asked for before they were published; "
            "first crawl "
            f"{f['first_crawl_requests']} requests, then {f['requests_per_round']} per round "
            f"({f['feed_requests']} feed readings)"
        )
    ratios = {
        "fetched": ratio(feeds["fetched"], links["fetched"]),
        "mean_wait": ratio(feeds["mean_wait"], links["mean_wait"]),
        "mean_wait_settled": ratio(feeds["mean_wait_settled"], links["mean_wait_settled"]),
        "requests_per_round": ratio(feeds["requests_per_round"], links["requests_per_round"]),
    }
    print(f"feeds / links: {ratios}")
    print(
        json.dumps(
            {"web": args.web, "sites": len(corpus.sites), **figures, "ratios": ratios, "seconds": seconds}
        )
    )


if __name__ == "__main__":
    main()
