"""A crawl into an endless link space (calendar trap) keeps its memory bounded."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from simnet.paths import PROJECT_ROOT

CRAWL = textwrap.dedent(
    """
    import json, tempfile, trio
    from pathlib import Path
    from crawler.engine import Crawler
    from crawler.repository import Repository
    from crawler.settings import CrawlSettings
    from simnet.measure import peak_rss_mb
    from simnet.web import Fault, FaultPlan, load_web, serve_web

    PAGES = {pages}

    async def main():
        corpus = load_web("fixture")
        site = sorted(corpus.sites, key=lambda s: s.name)[0]
        settings = CrawlSettings(
            download_delay=0.0, autothrottle_enabled=False, concurrent_requests_per_domain=8,
            depth_limit=0, host_page_budget=10 * PAGES, robotstxt_obey=True,
        )
        plan = FaultPlan([Fault("trap", host=site.name)])
        with tempfile.TemporaryDirectory() as tmp:
            async with serve_web(corpus, plan, 0) as web:
                repo = Repository(Path(tmp) / "trap.db")
                crawler = Crawler(repo, settings)
                crawler.add_seeds([web.base_url(site) + "/calendar/2024/01/"])
                try:
                    stats = await crawler.run(max_pages=PAGES)
                finally:
                    await crawler.aclose()
                    repo.close()
                trap_requests = sum(1 for r in web.request_log if r.fault == "trap")
        peak = peak_rss_mb()
        print(json.dumps({{"pages": stats.pages, "frontier": stats.frontier_size,
                          "trap_requests": trap_requests, "peak_rss_mb": peak}}))

    trio.run(main)
    """
)


@pytest.mark.slow
def test_trap_crawl_keeps_rss_under_300_mb():
    done = subprocess.run(
        [sys.executable, "-c", CRAWL.format(pages=3000)],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["trap_requests"] >= 2500  # the crawl really went deep into the endless space
    assert report["peak_rss_mb"] < 300, report
