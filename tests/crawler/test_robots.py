from __future__ import annotations

import pytest

from crawler.robots import UNANSWERED_WAIT, RobotsCache, RobotsResponse
from crawler.settings import CrawlSettings


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Server:
    def __init__(self, *answers: RobotsResponse) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []

    async def __call__(self, url: str) -> RobotsResponse:
        self.asked.append(url)
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


RULES = RobotsResponse(200, b"User-agent: *\nDisallow: /private/\nCrawl-delay: 30\n")


@pytest.mark.trio
async def test_rules_fetched_once_per_host_and_obeyed():
    server = Server(RULES)
    robots = RobotsCache(CrawlSettings(), server, clock=FakeClock())
    assert (await robots.check("http://a.com/x")).verdict == "allow"
    assert (await robots.check("http://a.com/private/y")).verdict == "disallow"
    assert (await robots.check("http://b.com/private/y")).verdict == "disallow"
    assert server.asked == ["http://a.com/robots.txt", "http://b.com/robots.txt"]


@pytest.mark.trio
async def test_a_byte_order_mark_before_the_first_group_does_not_hide_its_rules():
    server = Server(RobotsResponse(200, b"\xef\xbb\xbfUser-agent: *\nDisallow: /private/\n"))
    robots = RobotsCache(CrawlSettings(), server, clock=FakeClock())
    assert (await robots.check("http://a.com/private/y")).verdict == "disallow"


@pytest.mark.trio
async def test_crawl_delay_reported_capped():
    delays = {}
    robots = RobotsCache(
        CrawlSettings(crawl_delay_cap=10.0),
        Server(RULES),
        on_crawl_delay=delays.__setitem__,
        clock=FakeClock(),
    )
    await robots.check("http://a.com:8080/")
    assert delays == {"a.com:8080": 10.0}


@pytest.mark.trio
@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        (b"User-agent: *\nRequest-rate: 1/5\n", 5.0),  # one request per 5 seconds
        (b"User-agent: *\nRequest-rate: 3/1m\nCrawl-delay: 4\n", 20.0),  # the longer gap holds
        (b"User-agent: *\nRequest-rate: 10/1s\nCrawl-delay: 2\n", 2.0),
        (b"User-agent: *\nRequest-rate: 0/5\n", None),  # no rate at all: not a reason to stop
    ],
)
async def test_a_request_rate_spaces_requests_as_a_crawl_delay_does(rules, expected):
    delays = {}
    robots = RobotsCache(
        CrawlSettings(crawl_delay_cap=60.0),
        Server(RobotsResponse(200, rules)),
        on_crawl_delay=delays.__setitem__,
        clock=FakeClock(),
    )
    await robots.check("http://a.com/")
    assert delays.get("a.com:80") == expected


@pytest.mark.trio
async def test_deferral_doubles_while_robots_keeps_failing():
    clock = FakeClock()
    server = Server(RobotsResponse(503), RobotsResponse(0, error="timeout"), RobotsResponse(429), RULES)
    robots = RobotsCache(CrawlSettings(robotstxt_defer_delay=10.0), server, clock=clock)
    retry_times = []
    for _ in range(3):
        decision = await robots.check("http://a.com/x")
        assert decision.verdict == "defer"
        retry_times.append(decision.retry_at - clock.now)
        clock.now = decision.retry_at
    # no answer at all (a timeout) leaves the wait to the host's state, which turns bad on it (politeness)
    assert retry_times == [10.0, UNANSWERED_WAIT, 40.0]
    assert (await robots.check("http://a.com/private/x")).verdict == "disallow"


@pytest.mark.trio
async def test_rules_refetched_after_ttl():
    clock = FakeClock()
    server = Server(RULES, RobotsResponse(404))
    robots = RobotsCache(CrawlSettings(robotstxt_cache_ttl=100.0), server, clock=clock)
    assert (await robots.check("http://a.com/private/x")).verdict == "disallow"
    clock.now = 101.0
    assert (await robots.check("http://a.com/private/x")).verdict == "allow"
    assert len(server.asked) == 2


@pytest.mark.trio
async def test_cache_bounded_by_host_count():
    server = Server(RULES)
    robots = RobotsCache(CrawlSettings(), server, clock=FakeClock(), max_hosts=2)
    for host in ("a", "b", "c", "a"):
        await robots.check(f"http://{host}.com/")
    assert server.asked.count("http://a.com/robots.txt") == 2


@pytest.mark.trio
async def test_nothing_fetched_when_not_obeying():
    server = Server(RULES)
    robots = RobotsCache(CrawlSettings(robotstxt_obey=False), server, clock=FakeClock())
    assert (await robots.check("http://a.com/private/x")).verdict == "allow"
    assert server.asked == []
