"""Crawl speed by topic count: one crawler's focused crawl of the same served web from a few-topic and a
many-topic bookmarks file, side by side in one run, and where each crawl's time goes.

    python -m simnet.bench.topic_crawl --web devweb --topics 150 --pages 400 [--rounds 2]
    python -m simnet.bench.topic_crawl --web WEB --bookmarks FEW.html --bookmarks MANY.html

The first file is the baseline: the web's own bookmarks (simnet/webs/WEB-bookmarks.html, upstream URLs
mapped to the served hosts; 3 generated topics for a web without one) unless --bookmarks names files; with
--topics N a file of N nested topics is generated from the web (`simnet.web.bookmarks`). Each crawl starts
from a fresh repository in this process (no node, no peers: the crawl alone): the bookmarks fetched, the
focus trained (`crawler.focus.TopicFocus`), then `Crawler.run(--pages)` with the community scenario's
crawler settings (`--settings node`, those of `simnet.bench.many_topics`' nodes) or the defaults
(`--settings default`: every host followed, links out of the web included). The files take turns for
--rounds rounds, so a busy machine slows them alike; figures are the rounds' medians.

Per crawl: pages/s; the event loop's time waiting for I/O (trio's io wait) against computing, and what each
wait waited for at its start: a batch being parsed, classified or written in a worker thread
(`processing`), fetches to hosts that answered before (`fetch_live`), fetches only to hosts that never
answered an HTTP request (`fetch_unanswered`: dead hosts, and a new host's first request), or nothing in
flight while the frontier's hosts were not ready (`politeness`); the mean fetches in flight to each kind of
host; seconds of fetch slots by outcome; the worker thread's seconds (classifying pages, the focus's
re-organisations with their retraining, the rest of the analysis, the batches' writes); the frontier's
size and queues at the end; how many topics' queues fetched a page (`topics_served`) and had one accepted
(`topics_accepting`), and the accepted share of the queues' pages (`harvest`). Prints a table with the
many / few ratios, then one JSON line.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio

import crawler.engine as engine
from crawler.engine import Crawler
from crawler.focus import SEED_PRIORITY, TopicFocus
from crawler.repository import Repository
from crawler.settings import CrawlSettings
from crawler.taxonomy import bookmarks_html, parse_bookmarks
from crawler.urls import host_of
from node.cli.demo import demo_crawler_settings, map_bookmarks
from simnet.experiments.webrun import prepare_training
from simnet.web.bookmarks import generated_bookmarks

ROOT = Path(__file__).resolve().parents[2]
WAITS = ("processing", "fetch_live", "fetch_unanswered", "politeness", "other")


class Probe(trio.abc.Instrument):
    """Times the loop's I/O waits and names what each one waited for; times fetches and worker-thread work."""

    def __init__(self, crawler: Crawler, policy: TopicFocus) -> None:
        self.crawler = crawler
        self.policy = policy
        self.wait_s = dict.fromkeys(WAITS, 0.0)
        self.in_flight_s = {"live": 0.0, "unanswered": 0.0}  # fetches in flight x seconds, during waits
        self.fetch_s: Counter[str] = Counter()  # slot seconds by outcome
        self.fetches: Counter[str] = Counter()
        self.thread_s: Counter[str] = Counter()
        self.answered: set[str] = set()  # hosts that sent an HTTP status
        self.unanswered: set[str] = set()  # hosts that failed without one
        self.processing = 0
        self._wait_started = 0.0
        self._waiting_for = "other"
        self._live = self._unanswered = 0
        self._wrap()

    def _wrap(self) -> None:
        fetcher, policy, probe = self.crawler.fetcher, self.policy, self
        fetch, score, reorganise = fetcher.fetch, policy.score_pages, policy.reorganise

        async def timed_fetch(url: str, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            result = await fetch(url, *args, **kwargs)
            outcome = result.error or "ok"
            probe.fetch_s[outcome] += time.perf_counter() - started
            probe.fetches[outcome] += 1
            (probe.answered if result.status else probe.unanswered).add(host_of(url))
            return result

        def timed(name: str, call: Any) -> Any:
            def run(*args: Any, **kwargs: Any) -> Any:
                started = time.perf_counter()
                try:
                    return call(*args, **kwargs)
                finally:
                    probe.thread_s[name] += time.perf_counter() - started

            return run

        def classify(pages: Any) -> Any:  # the re-organisation it may start is timed on its own
            before = probe.thread_s["reorganise_s"]
            started = time.perf_counter()
            try:
                return score(pages)
            finally:
                spent = time.perf_counter() - started - (probe.thread_s["reorganise_s"] - before)
                probe.thread_s["classify_s"] += spent

        fetcher.fetch = timed_fetch
        policy.score_pages = classify
        policy.reorganise = timed("reorganise_s", reorganise)

    def busy(self, name: str, call: Any) -> Any:
        """`call` marked as worker-thread processing while it runs (the loop waits for it)."""

        def run(*args: Any, **kwargs: Any) -> Any:
            self.processing += 1
            started = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                self.thread_s[name] += time.perf_counter() - started
                self.processing -= 1

        return run

    def before_io_wait(self, timeout: float) -> None:
        self._wait_started = time.perf_counter()
        hosts = [entry.host for entry, _ in self.crawler._fetching.values()]
        self._live = sum(1 for host in hosts if host in self.answered)
        self._unanswered = len(hosts) - self._live
        if self.processing:
            self._waiting_for = "processing"
        elif self._live:
            self._waiting_for = "fetch_live"
        elif self._unanswered:
            self._waiting_for = "fetch_unanswered"
        elif len(self.crawler.frontier):
            self._waiting_for = "politeness"
        else:
            self._waiting_for = "other"

    def after_io_wait(self, timeout: float) -> None:
        waited = time.perf_counter() - self._wait_started
        self.wait_s[self._waiting_for] += waited
        self.in_flight_s["live"] += self._live * waited
        self.in_flight_s["unanswered"] += self._unanswered * waited


def crawl_settings(kind: str) -> CrawlSettings:
    """The community scenario's crawler settings (a bench node's), or the defaults."""
    if kind == "default":
        return CrawlSettings()
    node = {k: tuple(v) if isinstance(v, list) else v for k, v in demo_crawler_settings().items()}
    return dataclasses.replace(CrawlSettings(), **node)


async def crawl_once(
    web: Any, html: str, settings: CrawlSettings, pages: int, folder: Path
) -> dict[str, Any]:
    """One crawl of `pages` pages from the bookmarks in `html`, from a fresh repository, with its figures."""
    taxonomy, _ = await prepare_training(web, parse_bookmarks(html))
    started = time.perf_counter()
    policy = TopicFocus(taxonomy)
    focus_train_s = time.perf_counter() - started
    repo = Repository(folder / "repository.db")
    crawler = Crawler(repo, settings, policy=policy)
    probe = Probe(crawler, policy)
    analyse, write = engine.analyse, crawler._write
    engine.analyse = probe.busy("analyse_s", analyse)
    crawler._write = probe.busy("write_s", write)
    try:
        policy.attach(crawler)
        for topic, urls in policy.seeds().items():
            crawler.add_seeds(urls, topic=topic, priority=SEED_PRIORITY)
        trio.lowlevel.add_instrument(probe)
        started_cpu, started = time.process_time(), time.perf_counter()
        stats = await crawler.run(pages)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - started_cpu
        trio.lowlevel.remove_instrument(probe)
        waits = crawler.waiting_hosts()
        queued = crawler.frontier.queued_per_host()
    finally:
        engine.analyse = analyse
        await crawler.aclose()
        repo.close()
    waited = sum(probe.wait_s.values())
    figures: dict[str, Any] = {
        "topics": len(taxonomy.topics),
        "pages": stats.pages,
        "fetches": sum(probe.fetches.values()),
        "pages_per_s": stats.pages / elapsed,
        "elapsed_s": elapsed,
        "cpu_s": cpu,
        "loop_wait_s": waited,
        "loop_busy_s": elapsed - waited,
        "focus_train_s": focus_train_s,
    }
    figures.update({f"wait_{name}_s": probe.wait_s[name] for name in WAITS})
    figures.update({f"in_flight_{k}": v / waited if waited else 0.0 for k, v in probe.in_flight_s.items()})
    figures.update({f"thread_{k}": v for k, v in sorted(probe.thread_s.items())})
    figures.update({f"fetch_{k}_s": v for k, v in sorted(probe.fetch_s.items())})
    figures.update({f"fetches_{k}": v for k, v in sorted(probe.fetches.items())})
    queues = [counter for topic, counter in policy.counters.items() if topic is not None]
    figures.update(
        topics_served=sum(1 for counter in queues if counter.fetched),
        topics_accepting=sum(1 for counter in queues if counter.accepted),
        harvest=sum(c.accepted for c in queues) / max(1, sum(c.fetched for c in queues)),
        reorganisations=policy.reorganisations,
        hosts_answered=len(probe.answered),
        hosts_unanswered=len(probe.unanswered - probe.answered),
        frontier_left=sum(queued.values()),
        frontier_hosts=len(queued),
        bad_hosts_waiting=waits["hosts"],
        bad_links_waiting=waits["links"],
        reason=stats.reason,
    )
    return figures


def medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's median over the rounds (numbers; else the first run's value); absent counts as 0."""
    keys = list(dict.fromkeys(k for run in runs for k in run))
    merged: dict[str, Any] = {}
    for key in keys:
        values = [run.get(key, 0) for run in runs]
        numeric = all(isinstance(v, int | float) for v in values)
        merged[key] = statistics.median(values) if numeric else values[0]
    return merged


def table(labels: Sequence[str], results: Sequence[dict[str, Any]]) -> str:
    base = results[0]
    head = ["metric", *labels, *(f"{label}/{labels[0]}" for label in labels[1:])]
    keys = list(dict.fromkeys(k for result in results for k in result))
    lines = ["  ".join(f"{h:>22}" for h in head)]
    for key in keys:
        values = [result.get(key, 0) for result in results]
        cells = [key, *(_fmt(v) for v in values)]
        for value in values[1:]:
            b = base.get(key, 0)
            ratio = isinstance(value, int | float) and isinstance(b, int | float) and b
            cells.append(f"{value / b:.2f}x" if ratio else "-")
        lines.append("  ".join(f"{c:>22}" for c in cells))
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def bookmark_files(web: Any, args: argparse.Namespace) -> list[tuple[str, str]]:
    """(label, bookmarks HTML with served URLs) of each file to crawl from, the baseline first."""
    if args.bookmarks:
        return [(path.stem, map_bookmarks(bookmarks_html(path), web.map_upstream)) for path in args.bookmarks]
    baseline = ROOT / "simnet" / "webs" / f"{web.corpus.name}-bookmarks.html"
    if baseline.is_file():
        files = [(baseline.stem, map_bookmarks(bookmarks_html(baseline), web.map_upstream))]
    else:
        files = [("3", generated_bookmarks(web.corpus, 3, args.per_topic, base_url=web.base_url))]
    sizes = [int(n) for n in args.topics.split(",") if n.strip()]
    return files + [
        (str(n), generated_bookmarks(web.corpus, n, args.per_topic, base_url=web.base_url)) for n in sizes
    ]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m simnet.bench.topic_crawl", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--web", default="devweb", help="fixture, devweb, webkb or a folder holding sites.tsv"
    )
    parser.add_argument(
        "--bookmarks", type=Path, action="append", default=[], help="a bookmarks file (repeat; first: base)"
    )
    parser.add_argument("--topics", default="150", help="topic counts to generate, comma-separated (150)")
    parser.add_argument("--per-topic", type=int, default=4, help="bookmarks per generated folder (4)")
    parser.add_argument("--pages", type=int, default=400, help="pages each crawl stores (400)")
    parser.add_argument("--rounds", type=int, default=2, help="crawls of each file, taking turns (2)")
    parser.add_argument(
        "--settings", choices=("node", "default"), default="node", help="crawler settings (node)"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    from simnet.web import serve_web_in_subprocess

    args = parse_args(argv)
    settings = crawl_settings(args.settings)
    with serve_web_in_subprocess(args.web) as web:
        files = bookmark_files(web, args)
        runs: dict[str, list[dict[str, Any]]] = {label: [] for label, _ in files}
        for round_ in range(args.rounds):
            for label, html in files:
                with tempfile.TemporaryDirectory(prefix="topic-crawl-") as tmp:
                    figures = trio.run(crawl_once, web, html, settings, args.pages, Path(tmp))
                print(f"round {round_ + 1} {label}: {json.dumps(figures)}", file=sys.stderr, flush=True)
                runs[label].append(figures)
    labels = list(runs)
    results = [medians(runs[label]) for label in labels]
    print(table(labels, results))
    print(json.dumps({"web": args.web, "settings": args.settings, "pages": args.pages, "runs": runs}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
