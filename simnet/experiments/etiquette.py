"""Crawler etiquette under faults: a breadth-first crawl from the hub, judged from the server's request log.

Every fault kind the simulated web offers is injected: robots.txt faults and the trap host-wide on their own
sites, page faults on pages linked from the other sites' entry pages (so a breadth-first crawl meets them
early). The server runs in a child process, so its timestamps are not delayed by the crawler's event loop.

Printed last, one JSON object: `fetched`, `politeness_violations` (two requests to one host closer together
than allowed, or more in flight than allowed, from the server's log, within `tolerance_s` of clock jitter
between the processes), `robots_violations`, `errors_by_kind` (the engine's fetch errors plus the frontier's
trap guards `host_budget` and `depth_limit`), `faults` (per injected fault: the error kind it must cause and
the kinds the crawler actually reported for the faulted URLs), `missing_faults`, `peak_rss_mb`, `finished`.

    python -m simnet.experiments.etiquette --web devweb --pages 3000
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import trio

from crawler.engine import Crawler
from crawler.fetch import Fetcher, FetchResult
from crawler.parse import parse_html
from crawler.repository import Repository
from crawler.settings import CrawlSettings
from simnet.measure import peak_rss_mb
from simnet.web import Fault, FaultPlan, RequestRecord, Site, load_web, serve_web_in_subprocess
from simnet.web.manners import by_host

# fault kind -> the error kind(s) a correct crawler reports for it
EXPECTED_ERRORS: dict[str, tuple[str, ...]] = {
    "slow": ("timeout",),
    "server_error": ("http_5xx",),
    "reset": ("reset",),
    "truncated": ("truncated",),
    "huge": ("too_large",),
    "gzip_bomb": ("too_large",),
    "redirect_loop": ("redirect_loop",),
    "trap": ("host_budget", "depth_limit"),
    "wrong_type": ("bad_mime",),
    "binary_as_html": ("binary",),
    "robots": ("robots_disallowed",),
    "robots_5xx": ("robots_deferred",),
    "robots_429": ("robots_deferred",),
}
HOST_WIDE = ("robots_5xx", "robots_429", "robots", "trap")
# Page faults that count as host failures go to different sites, so no site is failed for them alone.
PAGE_FAULTS = ("slow", "server_error", "reset", "truncated", "huge", "gzip_bomb", "redirect_loop",
               "wrong_type", "binary_as_html")  # fmt: skip
CRAWL_DELAY = 1.0
SLOW_DELAY = 3.0


def experiment_settings(pages: int) -> CrawlSettings:
    """Defaults, except: a timeout below the slow fault's delay; quicker robots.txt retries; a host budget
    that lets the trap guard act within the crawl; and, since faults here are per page, one failing page
    (tried 1 + retry_times times) alone does not condemn its host."""
    defaults = CrawlSettings()
    return CrawlSettings(
        download_timeout=SLOW_DELAY - 1.0,
        robotstxt_defer_delay=2.0,
        host_page_budget=max(50, pages // 5),
        host_bad_after_failures=defaults.retry_times + 2,
    )


def linked_paths(site: Site, count: int) -> list[str]:
    """Paths of distinct pages linked from the site's entry page, nearest the start of a BFS."""
    entry_path = "/" + site.entry
    try:
        body = (site.root / site.entry).read_bytes()
    except OSError:
        return []
    root = site.root.resolve()
    base = "http://site.invalid" + entry_path
    paths: list[str] = []
    for link in parse_html(body, base).links:
        parts = urlsplit(link.url)
        if parts.netloc != "site.invalid" or parts.query or parts.path in (entry_path, "/"):
            continue
        file = (root / parts.path.lstrip("/")).resolve()
        if file.is_dir():
            file = file / "index.html"
        if not file.is_file() or root not in file.parents:
            continue
        if parts.path.endswith((".html", ".htm", "/")) and parts.path not in paths:
            paths.append(parts.path)
        if len(paths) >= count:
            break
    return paths


def plan_faults(sites: Sequence[Site]) -> list[Fault]:
    """One host-wide fault per site for the first four sites, page faults spread over the rest."""
    ordered = sorted(sites, key=lambda s: s.name)
    if len(ordered) < 5:
        raise SystemExit(f"the etiquette experiment needs at least 5 sites, the web has {len(ordered)}")
    faults: list[Fault] = []
    robots_site, trap_site = ordered[2], ordered[3]
    page_sites = ordered[2:]
    pages_wanted: dict[str, int] = Counter()
    for i, _ in enumerate(PAGE_FAULTS):
        pages_wanted[page_sites[i % len(page_sites)].name] += 1
    pages_wanted[robots_site.name] += 1  # one more page for the Disallow rule
    free = {s.name: linked_paths(s, pages_wanted[s.name]) for s in page_sites}
    disallow = free[robots_site.name].pop() if free[robots_site.name] else "/"
    disallow = disallow.rsplit("/", 1)[0] + "/" if disallow.count("/") > 1 else disallow
    faults += [
        Fault("robots_5xx", host=ordered[0].name),
        Fault("robots_429", host=ordered[1].name),
        Fault("robots", host=robots_site.name, path_prefix=disallow, crawl_delay=CRAWL_DELAY),
        Fault("trap", host=trap_site.name),
    ]
    for i, kind in enumerate(PAGE_FAULTS):
        site = page_sites[i % len(page_sites)]
        candidates = [p for p in free[site.name] if not p.startswith(disallow) or site is not robots_site]
        if not candidates:
            raise SystemExit(f"site {site.name} links too few pages from its entry page to place faults")
        path = candidates[0]
        free[site.name].remove(path)
        extra = {"delay": SLOW_DELAY} if kind == "slow" else {}
        if kind in ("huge", "gzip_bomb"):
            extra = {"size": 64 * 1024 * 1024}
        faults.append(Fault(kind, host=site.name, path_prefix=path, **extra))
    return faults


class RecordingFetcher:
    """The real fetcher, with every result kept for the fault table."""

    def __init__(self, fetcher: Fetcher) -> None:
        self._fetcher = fetcher
        self.politeness = fetcher.politeness
        self.results: list[FetchResult] = []

    async def fetch(self, url: str) -> FetchResult:
        result = await self._fetcher.fetch(url)
        self.results.append(result)
        return result

    async def aclose(self) -> None:
        await self._fetcher.aclose()


@dataclass
class Judgement:
    politeness_violations: int = 0
    spacing_violations: int = 0
    concurrency_violations: int = 0
    robots_violations: int = 0
    smallest_gap_ratio: float | None = None  # smallest gap / allowed gap over all hosts
    peak_in_flight: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)  # the first few violations, for diagnosis


def judge(
    log: Sequence[RequestRecord],
    web_hosts: dict[str, str],
    faults: Sequence[Fault],
    settings: CrawlSettings,
    tolerance: float,
) -> Judgement:
    """Check the crawler's manners from the server's side only."""
    verdict = Judgement()
    crawl_delay = {f.host: min(f.crawl_delay, settings.crawl_delay_cap) for f in faults if f.crawl_delay}
    disallowed = {f.host: f.disallowed for f in faults if f.kind == "robots"}
    blocked = {f.host for f in faults if f.kind in ("robots_5xx", "robots_429")}
    ratios = []
    for host, records in by_host(log).items():
        site = web_hosts.get(host)
        allowed = max(settings.download_delay, crawl_delay.get(site, 0.0))
        for before, after in itertools.pairwise(records):
            gap = after.start - before.start
            if allowed > 0:
                ratios.append(gap / allowed)
            if gap < allowed - tolerance:
                verdict.spacing_violations += 1
                if len(verdict.examples) < 5:
                    verdict.examples.append(
                        f"{host} {before.path} -> {after.path}: {gap:.3f}s apart, {allowed:.3f}s allowed"
                    )
        events = sorted([(r.start, 1) for r in records] + [(r.end - tolerance, -1) for r in records])
        level = peak = 0
        for _, step in events:
            level += step
            if level > settings.concurrent_requests_per_domain:
                verdict.concurrency_violations += 1
            peak = max(peak, level)
        verdict.peak_in_flight[host] = peak
        for record in records:
            path = record.path.split("?", 1)[0]
            if path == "/robots.txt":
                continue
            if site in blocked or (site in disallowed and path.startswith(disallowed[site])):
                verdict.robots_violations += 1
    verdict.politeness_violations = verdict.spacing_violations + verdict.concurrency_violations
    verdict.smallest_gap_ratio = round(min(ratios), 3) if ratios else None
    return verdict


def fault_table(
    faults: Sequence[Fault], results: Sequence[FetchResult], site_of_host: dict[str, str], errors: Counter
) -> dict[str, dict]:
    """Per injected fault: the error kinds the crawler reported for URLs the fault covers."""
    table: dict[str, dict] = {}
    for fault in faults:
        seen: Counter = Counter()
        if fault.kind == "trap":  # the frontier's guards act before any fetch
            seen.update({k: errors[k] for k in EXPECTED_ERRORS["trap"] if errors[k]})
        for result in results:
            if result.error is None:
                continue
            for url in (result.url, result.final_url):
                parts = urlsplit(url)
                if site_of_host.get(parts.netloc) != fault.host:
                    continue
                prefix = fault.path_prefix
                if fault.kind == "trap":
                    prefix = fault.trap_prefix
                elif fault.kind in HOST_WIDE and fault.kind != "robots":
                    prefix = None
                if prefix is None or parts.path.startswith(prefix):
                    seen[result.error] += 1
                    break
        expected = EXPECTED_ERRORS[fault.kind]
        table[f"{fault.kind}@{fault.host}{fault.path_prefix or ''}"] = {
            "expected": list(expected),
            "seen": dict(seen),
            "ok": any(seen[k] for k in expected),
        }
    return table


async def crawl(web, settings: CrawlSettings, pages: int, max_seconds: float, data_dir: Path):
    repo = Repository(data_dir / "etiquette.db")
    fetcher = RecordingFetcher(Fetcher(settings))
    crawler = Crawler(repo, settings, fetcher)
    try:
        crawler.add_seeds([web.hub_url])
        with trio.move_on_after(max_seconds) as guard:
            stats = await crawler.run(max_pages=pages)
        if guard.cancelled_caught:
            stats = crawler.stats
        return stats, fetcher.results, dict(crawler.frontier.rejected), not guard.cancelled_caught
    finally:
        await crawler.aclose()
        await fetcher.aclose()  # the crawler closes only a fetcher it made itself
        repo.close()


def run(web_name: str, pages: int, tolerance: float, max_seconds: float, server_workers: int = 2) -> dict:
    corpus = load_web(web_name)
    faults = plan_faults(corpus.sites)
    settings = experiment_settings(pages)
    with (
        tempfile.TemporaryDirectory(prefix="etiquette-") as tmp,
        serve_web_in_subprocess(web_name, FaultPlan(faults), workers=server_workers) as web,
    ):
        site_of_host = {web.host_of_site(site): site.name for site in corpus.sites}
        stats, results, rejected, finished = trio.run(crawl, web, settings, pages, max_seconds, Path(tmp))
        log = web.fetch_request_log()
    errors = Counter(stats.errors_by_kind)
    errors["host_budget"] += rejected.get("budget", 0)
    errors["depth_limit"] += rejected.get("depth", 0)
    errors = Counter({k: v for k, v in errors.items() if v})
    verdict = judge(log, site_of_host, faults, settings, tolerance)
    table = fault_table(faults, results, site_of_host, errors)
    server_faults = Counter(r.fault for r in log if r.fault)
    return {
        "web": web_name,
        "fetched": stats.pages,
        "fetch_attempts": len(results),
        "requests_served": len(log),
        "politeness_violations": verdict.politeness_violations,
        "spacing_violations": verdict.spacing_violations,
        "concurrency_violations": verdict.concurrency_violations,
        "smallest_gap_ratio": verdict.smallest_gap_ratio,
        "tolerance_s": tolerance,
        "robots_violations": verdict.robots_violations,
        "violation_examples": verdict.examples,
        "errors_by_kind": dict(sorted(errors.items())),
        "server_faults_served": dict(sorted(server_faults.items())),
        "faults": table,
        "missing_faults": [name for name, row in table.items() if not row["ok"]],
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "elapsed_s": round(stats.elapsed, 1),
        "finished": finished,
        "reason": stats.reason,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--web", default="devweb", help="fixture, devweb, webkb or a web corpus folder")
    parser.add_argument("--pages", type=int, default=3000, help="pages to store before the crawl ends")
    parser.add_argument(
        "--tolerance",
        type=float,
        default=0.025,
        help="seconds of arrival jitter allowed in the server's stamps (~30 ms late on a loaded machine)",
    )
    parser.add_argument(
        "--server-workers", type=int, default=2, help="server processes (a busy server stamps arrivals late)"
    )
    parser.add_argument("--max-seconds", type=float, default=1800.0, help="hang guard for the whole crawl")
    args = parser.parse_args(argv)
    report = run(args.web, args.pages, args.tolerance, args.max_seconds, args.server_workers)
    for name, row in report["faults"].items():
        mark = "ok " if row["ok"] else "MISSING"
        print(
            f"{mark:8}{name:50} expected {'/'.join(row['expected']):28} seen {row['seen']}", file=sys.stderr
        )
    print(json.dumps(report))
    ok = (
        report["politeness_violations"] == 0
        and report["robots_violations"] == 0
        and not report["missing_faults"]
        and report["finished"]
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
