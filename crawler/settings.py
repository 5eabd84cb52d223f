"""Every crawler knob and its default, in one place (as Scrapy's default_settings).

Names follow Scrapy where Scrapy has the setting. The node's `config.toml` overrides these under
`[crawler]`; the README's configuration table is checked against this module by a test.
"""

from __future__ import annotations

from dataclasses import dataclass, field


def doc(default: object, text: str) -> object:
    """A dataclass field with its documentation attached, so the README table can be generated."""
    return field(default=default, metadata={"doc": text})


@dataclass(frozen=True)
class CrawlSettings:
    user_agent: str = doc("topicswarm/0.1 (+focused crawler)", "User-Agent header and robots.txt agent name.")
    robotstxt_obey: bool = doc(True, "Fetch and obey robots.txt for every host.")
    download_delay: float = doc(0.25, "Minimum seconds between two requests to one host.")
    download_timeout: float = doc(15.0, "Seconds before a request is abandoned.")
    download_maxsize: int = doc(2_000_000, "Largest body in bytes (header and received bytes both checked).")
    concurrent_requests: int = doc(32, "Requests in flight at once, all hosts together.")
    concurrent_requests_per_domain: int = doc(2, "Requests in flight at once to one host.")
    crawl_delay_cap: float = doc(10.0, "Largest robots.txt Crawl-delay honoured, in seconds.")
    autothrottle_enabled: bool = doc(True, "Adapt each host's delay to its measured latency.")
    autothrottle_target_concurrency: float = doc(1.0, "Average parallel requests AutoThrottle aims at per host.")
    autothrottle_max_delay: float = doc(30.0, "Largest per-host delay AutoThrottle may set, in seconds.")
    redirect_max_times: int = doc(5, "Redirects followed for one request before it fails.")
    retry_times: int = doc(2, "Retries of a failed request (timeouts, resets, 5xx) with exponential back-off.")
    depth_limit: int = doc(20, "Largest link distance from a seed; 0 means no limit.")
    host_page_budget: int = doc(5000, "Most pages fetched from one host (a guard against traps).")
    url_max_length: int = doc(1000, "Longer URLs are dropped.")
    host_max_length: int = doc(255, "Longer host names are dropped.")
    frontier_max_size: int = doc(200_000, "Most queued URLs; the lowest priorities are evicted beyond it.")
    allowed_mime_types: tuple[str, ...] = doc(
        ("text/html", "application/xhtml+xml", "text/plain"), "Content types that are parsed and stored."
    )
