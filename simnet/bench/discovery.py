"""What the discovery benchmarks (`sitemap_discovery`, `feed_discovery`) share: one measured focused crawl
of a served web, and the relevant pages it could find."""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from crawler.focus import FocusSettings
from crawler.repository import Repository
from crawler.settings import CrawlSettings
from simnet.experiments.harvest import crawl_variant
from simnet.web import SubprocessWeb
from simnet.web.layout import RequestRecord
from simnet.web.server import page_url, site_pages


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


def bench_focus(pages: int, **options: Any) -> FocusSettings:
    """The benchmarks' focus for a crawl of `pages` pages: a fifth of it learning, six re-organisations."""
    return FocusSettings(learning_pages=pages // 5, retrain_every=max(pages // 6, 1), **options)


async def measured_crawl(
    web: SubprocessWeb,
    training: Any,
    targets: dict[str, str],
    args: argparse.Namespace,
    focus: FocusSettings,
    settings: CrawlSettings,
    findable: int,
    *,
    lockstep: bool = False,
    measure: Callable[[Repository], dict[str, Any]] | None = None,
) -> tuple[dict[str, Any], list[RequestRecord]]:
    """The harvest experiment's focused+retrain crawl of `args.pages` pages from the bookmarks (and the hub
    unless `args.no_hub`): stored and relevant pages, harvest rate, recall of `findable`, requests,
    seconds and what `measure` reads from the repository; with the crawl's requests from the server's log."""
    hub = None if args.no_hub else web.hub_url
    before = len(web.fetch_request_log())
    with tempfile.TemporaryDirectory(prefix="discovery-bench-") as tmp:
        repo = Repository(Path(tmp) / "repository.db")
        try:
            started = time.perf_counter()
            await crawl_variant(
                "focused_retrain", repo, training, hub, args.pages, focus, settings, lockstep=lockstep
            )
            seconds = time.perf_counter() - started
            stored, relevant = relevant_pages(repo, web, targets)
            extra = measure(repo) if measure is not None else {}
        finally:
            repo.close()
    requests = web.fetch_request_log()[before:]
    figures = {
        "stored": stored,
        "relevant": relevant,
        "harvest_rate": round(relevant / stored, 4) if stored else 0.0,
        "recall": round(relevant / findable, 4) if findable else 0.0,
        **extra,
        "requests": len(requests),
        "seconds": round(seconds, 2),
    }
    return figures, requests


def crawl_summary(figures: dict[str, Any], findable: int) -> str:
    """The start of a measured crawl's printed line: stored and relevant pages, harvest rate and recall."""
    return (
        f"{figures['stored']} stored, {figures['relevant']} relevant (harvest {figures['harvest_rate']:.3f}, "
        f"recall {figures['recall']:.3f} of {findable})"
    )


def ratios(figures: dict[str, Any], base: dict[str, Any]) -> dict[str, float | None]:
    """A measured crawl's figures over those of the crawl it is compared with."""
    keys = ("relevant", "harvest_rate", "requests", "seconds")
    return {key: round(figures[key] / base[key], 3) if base[key] else None for key in keys}
