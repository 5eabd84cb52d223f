"""Every crawler knob and its default, in one place (as Scrapy's default_settings).

Names follow Scrapy where Scrapy has the setting. The node's `config.toml` overrides these under
`[crawler]`; the README's configuration table is checked against this module by a test.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crawler.proxies import check_proxy


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
    download_maxsize_pdf: int = doc(
        20_000_000, "Largest body in bytes of a response declared application/pdf (papers run larger)."
    )
    scraper_slot_max_active_size: int = doc(
        5_000_000,
        "Bytes of fetched bodies waiting to be parsed above which no new request starts (a soft limit, as "
        "Scrapy's: large PDFs cannot pile up in memory while parsing lags).",
    )
    concurrent_requests: int = doc(32, "Requests in flight at once, all hosts together.")
    concurrent_requests_per_domain: int = doc(2, "Requests in flight at once to one host.")
    unanswered_hosts_share: float = doc(
        0.25,
        "Share of concurrent_requests (at least one) that requests to hosts which never answered yet may "
        "hold at once: new hosts, and hosts that do not answer (DNS, connect and robots.txt failures) and "
        "would otherwise hold most slots through their timeouts and retries while hosts that answer wait.",
    )
    crawl_delay_cap: float = doc(
        10.0, "Largest robots.txt Crawl-delay (or gap a Request-rate implies) honoured, in seconds."
    )
    autothrottle_enabled: bool = doc(True, "Adapt each host's delay to its measured latency.")
    autothrottle_target_concurrency: float = doc(
        1.0, "Average parallel requests AutoThrottle aims at per host."
    )
    autothrottle_max_delay: float = doc(30.0, "Largest per-host delay AutoThrottle may set, in seconds.")
    redirect_max_times: int = doc(5, "Redirects followed for one request before it fails.")
    retry_times: int = doc(
        2, "Retries of a failed request (timeouts, resets, 5xx) with exponential back-off."
    )
    depth_limit: int = doc(20, "Largest link distance from a seed; 0 means no limit.")
    host_page_budget: int = doc(5000, "Most pages fetched from one host (a guard against traps).")
    url_max_length: int = doc(
        1000, "Longer URLs are dropped (links found in pages above 1,000 also when this is larger)."
    )
    host_max_length: int = doc(255, "Longer host names are dropped (255 is the longest a DNS name can be).")
    frontier_max_size: int = doc(200_000, "Most queued URLs; the lowest priorities are evicted beyond it.")
    autothrottle_start_delay: float = doc(
        1.0, "Per-host delay AutoThrottle starts from, in seconds (never below download_delay)."
    )
    url_sort_query: bool = doc(
        False, "Sort query parameters when normalising URLs (merges reordered duplicates)."
    )
    url_strip_params: tuple[str, ...] = doc(
        (
            "jsessionid",
            "phpsessid",
            "aspsessionid*",
            "sessionid",
            "cfid",
            "cftoken",
            "utm_*",
            "fbclid",
            "gclid",
            "msclkid",
        ),
        "Query (and ;path) parameters dropped when normalising URLs, case-insensitive, a trailing * matching "
        "a prefix: session ids and click trackers make one page endless URLs.",
    )
    url_max_repeated_segments: int = doc(
        3, "Most times one path segment may repeat in a URL before it counts as a trap."
    )
    url_max_query_length: int = doc(500, "Longest query string before a URL counts as a trap.")
    retry_backoff_base: float = doc(
        1.0, "First back-off after a failed request to a host, in seconds; doubles per failure."
    )
    retry_backoff_max: float = doc(60.0, "Longest back-off after failed requests to a host, in seconds.")
    host_bad_after_failures: int = doc(
        3, "Consecutive failures after which a host is marked bad and skipped (thesis 2.3.8)."
    )
    host_bad_retry_delay: float = doc(
        600.0,
        "Seconds a bad host is skipped before one request tries it again (its queued links wait); doubles "
        "at each failed try. 0: bad for the rest of the crawl, its queued links dropped.",
    )
    host_bad_retries: int = doc(
        6, "Tries of a bad host before its queued links are dropped (about 10 hours at the default delay)."
    )
    robotstxt_defer_delay: float = doc(
        60.0, "Wait before asking again for a robots.txt that answered 5xx/429; doubles per try."
    )
    robotstxt_cache_ttl: float = doc(86400.0, "Seconds a fetched robots.txt stays valid.")
    robotstxt_maxsize: int = doc(
        500_000, "Bytes of robots.txt read; the rest is ignored (RFC 9309 asks for at least 500 KiB)."
    )
    allowed_mime_types: tuple[str, ...] = doc(
        ("text/html", "application/xhtml+xml", "text/plain", "application/pdf"),
        "Content types that are parsed and stored (PDFs as their text and link annotations).",
    )
    dedup_index_size: int = doc(200_000, "Most documents the duplicate detector remembers (oldest go first).")
    near_duplicate_distance: int = doc(3, "Largest SimHash Hamming distance (0-3) for a near duplicate.")
    write_batch_size: int = doc(64, "Most fetched pages parsed and committed together in one transaction.")
    parse_in_thread: bool = doc(True, "Parse and classify batches in a worker thread, off the event loop.")
    stats_interval: float = doc(1.0, "Seconds between two crawl statistics events (and progress lines).")
    apprentice_enabled: bool = doc(
        False,
        "Learn link priorities online from the DOM around each link (crawler.apprentice, seed 002) in "
        "focused crawls.",
    )
    revisit_enabled: bool = doc(
        True, "Fetch stored pages again when due, to keep the repository true to the Web (crawler.revisits)."
    )
    revisit_after: float = doc(
        604_800.0,
        "Seconds from a page's fetch to its first revisit (a week). Each later interval doubles while the "
        "page stays the same and halves when it changed, within an eighth and eight times this.",
    )
    sitemaps_enabled: bool = doc(
        True,
        "Read the sitemaps a host's robots.txt names once one of its pages is accepted, and queue the pages "
        "they list (crawler.sitemaps).",
    )
    feeds_enabled: bool = doc(
        True,
        "Follow the RSS and Atom feeds pages name in their heads, queue the pages their entries link to "
        "(ranked by the entries' titles and summaries), and read them again when due (crawler.feeds).",
    )
    proxy: str = doc(
        "",
        "Proxy for web requests (http://host:port, or socks5h://host:port for SOCKS such as Tor's); empty: "
        "the environment's HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and NO_PROXY; 'direct': none. Loopback hosts "
        "always go direct.",
    )
    allowed_hosts: tuple[str, ...] = doc(
        (),
        "Follow links only to these hosts: a name, '.example.org' for subdomains, or a network such as "
        "'127.0.0.0/8'; empty allows every host.",
    )

    def __post_init__(self) -> None:
        check_proxy(self.proxy)
        if not self.host_bad_retry_delay >= 0 or self.host_bad_retries < 0:
            raise ValueError(
                "host_bad_retry_delay and host_bad_retries must be 0 or more, not "
                f"{self.host_bad_retry_delay!r} and {self.host_bad_retries!r}"
            )
        if not 0 < self.unanswered_hosts_share <= 1:
            raise ValueError(
                f"unanswered_hosts_share must be above 0 and at most 1, not {self.unanswered_hosts_share!r}"
            )
        if not self.revisit_after > 0:
            raise ValueError(
                f"revisit_after must be a positive number of seconds, not {self.revisit_after!r}"
            )
