"""The Scrapy side of `crawl_throughput`: a breadth-first spider that stores what a user would keep.

Run in its own process (Twisted's reactor and trio do not share a process):

    python -m simnet.bench.scrapy_spider --start URL --pages N --out FILE [--concurrency C ...]

Each page becomes an item (URL, title, visible text) written to a JSON-lines feed; links are followed
breadth-first. Prints one JSON line: pages stored, elapsed seconds, pages per second.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.linkextractors import LinkExtractor


class BreadthFirstSpider(scrapy.Spider):
    name = "bfs"

    def __init__(self, start: str, allowed: list[str], **kwargs) -> None:
        super().__init__(**kwargs)
        self.start_urls = [start]
        self.allowed_domains = allowed  # the served web only, as topicswarm's allowed_hosts
        self.links = LinkExtractor()

    def parse(self, response):
        if not isinstance(response, scrapy.http.TextResponse):
            return
        yield {
            "url": response.url,
            "title": response.css("title::text").get(default=""),
            "text": " ".join(t.strip() for t in response.xpath("//body//text()").getall() if t.strip()),
        }
        for link in self.links.extract_links(response):
            yield response.follow(link.url, callback=self.parse)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--start", required=True)
    parser.add_argument("--pages", type=int, required=True)
    parser.add_argument("--out", required=True, help="JSON-lines file for the items")
    parser.add_argument("--allowed", required=True, help="comma-separated host names or addresses to crawl")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--per-host", type=int, default=8)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--timeout", type=float, default=15.0)
    parser.add_argument("--maxsize", type=int, default=2_000_000)
    args = parser.parse_args(argv)
    process = CrawlerProcess(
        settings={
            "CONCURRENT_REQUESTS": args.concurrency,
            "CONCURRENT_REQUESTS_PER_DOMAIN": args.per_host,
            "DOWNLOAD_DELAY": args.delay,
            "RANDOMIZE_DOWNLOAD_DELAY": False,
            "AUTOTHROTTLE_ENABLED": False,
            "ROBOTSTXT_OBEY": True,
            "DOWNLOAD_TIMEOUT": args.timeout,
            "DOWNLOAD_MAXSIZE": args.maxsize,
            "RETRY_TIMES": 2,
            "REDIRECT_MAX_TIMES": 5,
            "DEPTH_PRIORITY": 1,  # breadth-first, as Scrapy's FAQ sets it
            "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
            "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
            "CLOSESPIDER_ITEMCOUNT": args.pages,
            "FEEDS": {args.out: {"format": "jsonlines", "overwrite": True}},
            "LOG_LEVEL": "ERROR",
            "TELNETCONSOLE_ENABLED": False,
            "USER_AGENT": "topicswarm-bench-scrapy",
        }
    )
    crawler = process.create_crawler(BreadthFirstSpider)
    started = time.monotonic()
    process.crawl(crawler, start=args.start, allowed=args.allowed.split(","))
    process.start()
    elapsed = time.monotonic() - started
    stats = crawler.stats.get_stats()
    pages = int(stats.get("item_scraped_count", 0))
    spider_elapsed = float(stats.get("elapsed_time_seconds", elapsed))
    print(json.dumps({"pages": pages, "elapsed_s": spider_elapsed, "pages_per_s": pages / spider_elapsed}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
