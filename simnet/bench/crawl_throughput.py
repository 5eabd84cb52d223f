"""Crawl throughput: topicswarm's full pipeline against Scrapy on the same served web, side by side.

The web is served by child processes (`serve_web_in_subprocess`), so the server never competes with a
crawler for the GIL. First a raw keep-alive load generator measures the server's own rate (the physical
limit of the set-up), then topicswarm (fetch, parse, dedup, store, index) and Scrapy (fetch, parse, dedup,
JSON-lines feed) each crawl breadth-first from the hub with the same concurrency and politeness settings.
Prints the figures, then one JSON line with `topicswarm_pages_per_s`, `scrapy_pages_per_s` and `ratio`.

    python -m simnet.bench.crawl_throughput --web devweb --pages 3000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import trio

from crawler.engine import Crawler
from crawler.repository import Repository
from crawler.settings import CrawlSettings
from simnet.bench.rawhttp import read_response
from simnet.web import load_web, serve_web_in_subprocess

ROOT = Path(__file__).resolve().parents[2]


def page_targets(web, corpus, per_site: int = 300) -> list[tuple[str, int, str]]:
    """(address, port, path) of real pages on every site, for the load generator."""
    targets = []
    for site in corpus.sites:
        host, port = web.host_of_site(site).rsplit(":", 1)
        files = sorted(p for p in site.root.rglob("*.html") if p.is_file())[:per_site]
        targets += [(host, int(port), "/" + str(f.relative_to(site.root))) for f in files]
    return targets


async def _load_worker(targets, index: int, stride: int, deadline: float, counts: list[int]) -> None:
    host, port, _ = targets[index]
    stream = await trio.open_tcp_stream(host, port)
    async with stream:
        buffer = b""
        i = index
        while trio.current_time() < deadline:
            t_host, _, path = targets[i % len(targets)]
            i += stride
            if t_host != host:
                continue
            await stream.send_all(f"GET {path} HTTP/1.1\r\nhost: {host}\r\n\r\n".encode())
            response = await read_response(stream, buffer)
            if response is None:
                return
            buffer = response[2]
            counts[0] += 1


async def server_max_rate(targets, connections: int, seconds: float) -> float:
    """Pages per second the server answers to raw keep-alive connections (a lower bound of its limit)."""
    counts = [0]
    deadline = trio.current_time() + seconds
    async with trio.open_nursery() as nursery:
        for index in range(connections):
            nursery.start_soon(
                _load_worker, targets, index * 97 % len(targets), connections, deadline, counts
            )
    return counts[0] / seconds


async def topicswarm_crawl(hub_url: str, settings: CrawlSettings, pages: int, data_dir: Path) -> dict:
    repo = Repository(data_dir / "bench.db")
    crawler = Crawler(repo, settings)
    try:
        crawler.add_seeds([hub_url])
        stats = await crawler.run(max_pages=pages)
    finally:
        await crawler.aclose()
        repo.close()
    return {"pages": stats.pages, "elapsed_s": stats.elapsed, "pages_per_s": stats.pages / stats.elapsed}


def scrapy_crawl(hub_url: str, hosts: list[str], settings: CrawlSettings, pages: int, data_dir: Path) -> dict:
    command = [
        sys.executable, "-m", "simnet.bench.scrapy_spider", "--start", hub_url, "--pages", str(pages),
        "--allowed", ",".join(hosts),
        "--out", str(data_dir / "scrapy.jsonl"), "--concurrency", str(settings.concurrent_requests),
        "--per-host", str(settings.concurrent_requests_per_domain), "--delay", str(settings.download_delay),
        "--timeout", str(settings.download_timeout), "--maxsize", str(settings.download_maxsize),
    ]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=3600, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"the Scrapy crawl failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return json.loads(lines[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--web", default="devweb", help="fixture, devweb, webkb or a web corpus folder")
    parser.add_argument("--pages", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=32, help="requests in flight, all hosts")
    parser.add_argument("--per-host", type=int, default=8, help="requests in flight per host")
    parser.add_argument("--delay", type=float, default=0.0, help="download_delay for both crawlers")
    parser.add_argument("--server-workers", type=int, default=1, help="server processes")
    parser.add_argument("--load-seconds", type=float, default=5.0, help="length of the server rate test")
    args = parser.parse_args(argv)
    settings = CrawlSettings(
        concurrent_requests=args.concurrency,
        concurrent_requests_per_domain=args.per_host,
        download_delay=args.delay,
        autothrottle_enabled=False,  # Scrapy's AutoThrottle is off by default; the same for both
        host_page_budget=args.pages,
        allowed_hosts=("127.0.0.0/8",),  # the served web only (its pages also link to the real Web)
    )
    corpus = load_web(args.web)
    with serve_web_in_subprocess(args.web, workers=args.server_workers) as web:
        targets = page_targets(web, corpus)
        server_rate = trio.run(server_max_rate, targets, args.concurrency, args.load_seconds)
        print(
            f"server max rate   {server_rate:8.1f} pages/s  (raw keep-alive client, {args.concurrency} conns)"
        )
        with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
            started = time.monotonic()
            ours = trio.run(topicswarm_crawl, web.hub_url, settings, args.pages, Path(tmp))
            print(f"topicswarm        {ours['pages_per_s']:8.1f} pages/s  ({ours['pages']} pages)")
            hosts = sorted({urlsplit(web.hub_url).hostname} | {t[0] for t in targets})
            theirs = scrapy_crawl(web.hub_url, hosts, settings, args.pages, Path(tmp))
            print(f"scrapy            {theirs['pages_per_s']:8.1f} pages/s  ({theirs['pages']} pages)")
            wall = time.monotonic() - started
    report = {
        "web": args.web,
        "pages": args.pages,
        "concurrency": args.concurrency,
        "per_host": args.per_host,
        "download_delay": args.delay,
        "server_max_pages_per_s": round(server_rate, 1),
        "topicswarm_pages": ours["pages"],
        "scrapy_pages": theirs["pages"],
        "topicswarm_pages_per_s": round(ours["pages_per_s"], 1),
        "scrapy_pages_per_s": round(theirs["pages_per_s"], 1),
        "ratio": round(ours["pages_per_s"] / theirs["pages_per_s"], 3),
        "wall_s": round(wall, 1),
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
