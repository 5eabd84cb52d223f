"""Freshness: how soon a crawl finds a page after it is published when it reads the sites' feeds, against one
that only revisits the pages it holds, side by side on one web that publishes.

The served web holds back each site's `--held` newest pages and publishes one per site every round
(`simnet.web.publishing`): until then they answer 404 and no page links to them. The crawlers keep the web,
one following and re-reading the feeds its pages name (`crawler.feeds`), one not; all revisit their pages
when due (`crawler.revisits`: the interval starts at `--revisit-rounds` rounds, halves when a page changed
and doubles when it did not). Then every round the web publishes, the crawlers' calendar moves one round
on, and each crawler fetches what is due and what it found. All see the same web at every round.

- Without `--bookmarks`: two breadth-first crawlers (`feeds`, `links`), each crawling the published web to
  its end first and every round fetching all it found.
- With `--bookmarks FILE`: three focused crawlers (the harvest experiment's focused+retrain crawl from the
  bookmarks and the hub, one fetch at a time in lockstep): `feeds_judged` (feed entries classified by their
  words, `focus.judge_feed_entries`), `feeds_tunnelled` (entries tunnelled through their feed) and `links`.
  Each stores `--pages` pages first, then at most `--round-pages` new pages a round (its revisits apart):
  a node's bandwidth, which a new page on its topics competes for with what its frontier still holds. The
  waits are those of the published pages of the topics' target groups; `other_fetched` counts the other
  published pages each fetched.

Measured per crawler, from the server's log of its requests: of the pages published, how many it fetched
within `--rounds` rounds, the rounds from publication to the first fetch (0: in the round it appeared), and
its requests per round, the cost of keeping the web. Prints the figures, then one JSON line with them and
each feed crawler's ratios to `links`.

    python -m simnet.bench.freshness --web fixture --held 10 --rounds 40
    python -m simnet.bench.freshness --web devweb --sites git,sqlite,gnuplot --held 20 --rounds 60
    python -m simnet.bench.freshness --web devweb --bookmarks simnet/webs/devweb-bookmarks.html --held 20 \
        --rounds 40
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import trio

from crawler.engine import Crawler
from crawler.fetch import Fetcher
from crawler.focus import SEED_PRIORITY, TopicFocus
from crawler.repository import Repository
from crawler.settings import CrawlSettings
from crawler.taxonomy import read_taxonomy
from simnet.bench.discovery import bench_focus
from simnet.bench.revisit_cost import Calendar  # the crawlers' and the web's clock: rounds pass at once
from simnet.experiments.webrun import prepare_training
from simnet.web import load_web, serve_web
from simnet.web.corpus import WebCorpus
from simnet.web.layout import RequestRecord
from simnet.web.publishing import Publishing

ROUND_SECONDS = 3600.0  # a round of the calendar: an hour, the feeds' and the crawlers' time unit
FOCUSED = {  # name: (feeds_enabled, judge_feed_entries)
    "feeds_judged": (True, True),
    "feeds_tunnelled": (True, False),
    "links": (False, False),
}


@dataclasses.dataclass
class Keeper:
    """One crawler keeping the web: its repository, its fetcher (robots and politeness kept across rounds),
    its focus (None: breadth-first) and the requests it made in each round (round 0: the first crawl)."""

    name: str
    settings: CrawlSettings
    repo: Repository
    fetcher: Fetcher
    policy: TopicFocus | None = None
    requests: list[list[RequestRecord]] = dataclasses.field(default_factory=list)
    stored: int = 0

    async def crawl(
        self,
        web: Any,
        calendar: Calendar,
        seeds: Mapping[str | None, list[str]] | None = None,
        pages: int | None = None,
    ) -> None:
        """Fetch what is due and what the crawl found, storing at most `pages` new pages (None: no limit)."""
        before = len(web.request_log)
        focused = self.policy is not None
        crawler = Crawler(
            self.repo, self.settings, self.fetcher, policy=self.policy, wall_clock=calendar, lockstep=focused
        )
        if self.policy is not None:
            self.policy.attach(crawler)
        for topic, urls in (seeds or {}).items():
            crawler.add_seeds(urls, topic=topic, priority=SEED_PRIORITY if focused else 1.0)
        stats = await crawler.run(None if pages is None else self.stored + pages)
        self.stored = stats.total_pages
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
    the crawler asked for before they were published (a link the web left in place: answered 404, asked
    again only once a feed dates it after the 404)."""
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


async def run(args: argparse.Namespace, corpus: WebCorpus, workdir: Path) -> dict[str, Any]:
    """Every crawler over `args.rounds` rounds of a web publishing `args.held` pages per site; their figures
    (with `args.bookmarks`, of the pages of the topics' target groups)."""
    calendar = Calendar()
    publishing = Publishing.newest(corpus, args.held, clock=calendar)
    published: dict[str, int] = {}
    async with serve_web(corpus, feeds=True, publishing=publishing) as web:
        if args.bookmarks is None:
            keepers, seeds, groups = breadth_first_keepers(args, workdir), {None: [web.hub_url]}, None
        else:
            training, targets = await prepare_training(web, read_taxonomy(args.bookmarks))
            keepers = focused_keepers(args, training, workdir)
            seeds, groups = {**keepers[0].policy.seeds(), None: [web.hub_url]}, set(targets.values())
        first, budget = (None, None) if groups is None else (args.pages, args.round_pages)
        try:
            for keeper in keepers:
                await keeper.crawl(web, calendar, seeds, first)
            for round_number in range(1, args.rounds + 1):
                calendar.now += ROUND_SECONDS
                published.update(dict.fromkeys(web.publish_next(), round_number))
                for keeper in keepers:
                    await keeper.crawl(web, calendar, pages=budget)
        finally:
            for keeper in keepers:
                await keeper.fetcher.aclose()
                keeper.repo.close()
        on_topic = {url for url in published if groups is not None and web.label_of(url) in groups}
    return {
        keeper.name: keeper_figures(keeper, published, on_topic, groups is not None, args)
        for keeper in keepers
    }


def keeper_figures(
    keeper: Keeper, published: dict[str, int], on_topic: set[str], focused: bool, args: argparse.Namespace
) -> dict[str, Any]:
    """A crawler's freshness figures: of every published page, or, for a focused crawler, of the `on_topic`
    ones, with how many of the others it fetched."""

    def measured(pages: dict[str, int]) -> dict[str, Any]:
        return freshness(pages, keeper.requests, args.rounds, args.revisit_rounds)

    if not focused:
        return measured(published)
    others = {url: r for url, r in published.items() if url not in on_topic}
    return {
        **measured({url: r for url, r in published.items() if url in on_topic}),
        "other_published": len(others),
        "other_fetched": measured(others)["fetched"],
        "stored": keeper.stored,
    }


def breadth_first_keepers(args: argparse.Namespace, workdir: Path) -> list[Keeper]:
    keepers = []
    for name, feeds in (("feeds", True), ("links", False)):
        settings = keeper_settings(args.revisit_rounds, feeds)
        keepers.append(Keeper(name, settings, Repository(workdir / f"{name}.db"), Fetcher(settings)))
    return keepers


def focused_keepers(args: argparse.Namespace, training: Any, workdir: Path) -> list[Keeper]:
    """The three focused crawlers, one fetch at a time (their order then depends on the policy alone)."""
    keepers = []
    for name, (feeds, judged) in FOCUSED.items():
        settings = dataclasses.replace(
            keeper_settings(args.revisit_rounds, feeds),
            concurrent_requests=1,
            concurrent_requests_per_domain=1,
        )
        policy = TopicFocus(training, bench_focus(args.pages, judge_feed_entries=judged))
        repo = Repository(workdir / f"{name}.db")
        keepers.append(Keeper(name, settings, repo, Fetcher(settings), policy))
    return keepers


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
    parser.add_argument("--bookmarks", type=Path, help="focused crawlers from these bookmarks' topics")
    parser.add_argument("--pages", type=int, default=1000, help="with --bookmarks: pages of the first crawl")
    parser.add_argument(
        "--round-pages", type=int, default=10, help="with --bookmarks: new pages a crawler stores a round"
    )
    args = parser.parse_args(argv)
    if min(args.held, args.rounds, args.pages, args.round_pages) < 1 or args.revisit_rounds <= 0:
        parser.error(
            "--held, --rounds, --pages and --round-pages must be at least 1, --revisit-rounds positive"
        )
    corpus = subset(load_web(args.web), args.sites)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="freshness-bench-") as tmp:
        figures = trio.run(run, args, corpus, Path(tmp))
    seconds = round(time.perf_counter() - started, 1)
    first = next(iter(figures.values()))
    which = "pages" if args.bookmarks is None else "pages of the topics' target groups"
    print(
        f"web {args.web} ({len(corpus.sites)} sites): {first['published']} {which} published over "
        f"{args.rounds} rounds; revisits every {args.revisit_rounds:g} rounds at first"
    )
    for name, f in figures.items():
        other = (
            f"; {f['other_fetched']} of the {f['other_published']} other published pages fetched, "
            f"{f['stored']} pages stored"
            if "other_fetched" in f
            else ""
        )
        print(
            f"{name}: fetched {f['fetched']} of {f['published']} published; rounds waited median "
            f"{f['median_wait']}, mean {f['mean_wait']} ({f['mean_wait_settled']} for the "
            f"{f['published_settled']} published after round {args.revisit_rounds:g}), max {f['max_wait']}; "
            f"{f['asked_before_published']} asked for before they were published; "
            "first crawl "
            f"{f['first_crawl_requests']} requests, then {f['requests_per_round']} per round "
            f"({f['feed_requests']} feed readings){other}"
        )
    base = figures["links"]
    ratios = {name: ratios_to(f, base) for name, f in figures.items() if name != "links"}
    for name, r in ratios.items():
        print(f"{name} / links: {r}")
    print(
        json.dumps(
            {"web": args.web, "sites": len(corpus.sites), **figures, "ratios": ratios, "seconds": seconds}
        )
    )


def ratios_to(figures: dict[str, Any], base: dict[str, Any]) -> dict[str, float | None]:
    keys = ("fetched", "mean_wait", "mean_wait_settled", "requests_per_round")
    return {key: ratio(figures[key], base[key]) for key in keys}


if __name__ == "__main__":
    main()
