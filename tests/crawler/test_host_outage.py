"""A host that stops answering for a while (or the node's own network, for a minute) loses no queued link:
the host turns bad, its links wait in the frontier, and it is tried again after `host_bad_retry_delay`,
also by a crawl restarted in between. Only a host that keeps failing is given up, its links dropped."""

from __future__ import annotations

import math
from dataclasses import replace

import httpx
import pytest
import trio

from crawler.engine import Crawler
from crawler.fetch import Fetcher
from crawler.repository import Repository
from crawler.repository_schema import DONE, FAILED, MIGRATIONS, QUEUED
from crawler.settings import CrawlSettings
from tests.mock_web import Calendar, page, streamed_response

SETTINGS = CrawlSettings(
    download_delay=0.0,
    autothrottle_enabled=False,
    concurrent_requests=1,
    retry_times=2,
    host_bad_after_failures=3,
    retry_backoff_base=0.01,
    host_bad_retry_delay=0.2,
    host_bad_retries=2,
)
DELAY = SETTINGS.host_bad_retry_delay
B_PAGES = [f"http://b.test/{i}" for i in range(5)]


class Web:
    """a.test's home links to five pages of b.test, which refuses connections while it is down."""

    def __init__(self, robots_down: bool = False) -> None:
        self.down = True
        self.robots_down = robots_down  # its robots.txt unreachable too: the first thing asked of it
        self.requests: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        url = str(request.url)
        if request.url.path == "/robots.txt":
            if request.url.host == "b.test" and self.down and self.robots_down:
                raise httpx.ConnectError("connection refused", request=request)
            return streamed_response(404, b"")
        self.requests.append(url)
        if request.url.host == "b.test" and self.down:
            raise httpx.ConnectError("connection refused", request=request)
        body = page("home", *B_PAGES) if url == "http://a.test/" else page(url)
        return streamed_response(200, body, {"content-type": "text/html"})

    def asked_b(self) -> int:
        return sum(1 for url in self.requests if url.startswith("http://b.test/"))


def crawler_for(
    web: Web, repo: Repository, calendar: Calendar, settings: CrawlSettings = SETTINGS
) -> Crawler:
    fetcher = Fetcher(settings, client=httpx.AsyncClient(transport=httpx.MockTransport(web)))
    return Crawler(repo, settings, fetcher, wall_clock=calendar)


def frontier_states(repo: Repository) -> dict[str, tuple[int, str | None]]:
    rows = repo.db.execute("SELECT url, state, error FROM frontier WHERE host = 'b.test:80'").fetchall()
    return {url: (state, error) for url, state, error in rows}


def stored_urls(repo: Repository) -> set[str]:
    return {doc["url"] for doc in repo.documents()}


async def crawl_first_time(web: Web, repo: Repository, calendar: Calendar) -> Crawler:
    crawler = crawler_for(web, repo, calendar)
    crawler.add_seeds(["http://a.test/"])
    stats = await crawler.run()
    assert stats.reason == "blocked"  # what is left waits for b.test's next try
    assert web.asked_b() == 3  # one link's three attempts turned it bad; the others were never sent
    return crawler


@pytest.mark.trio
async def test_a_host_that_was_down_has_its_links_crawled_once_it_answers(tmp_path):
    web, calendar = Web(), Calendar()
    repo = Repository(tmp_path / "repo.db")
    with trio.fail_after(30):
        crawler = await crawl_first_time(web, repo, calendar)
        assert frontier_states(repo) == {url: (QUEUED, None) for url in B_PAGES}
        host = repo.db.execute(
            "SELECT state, bad_spells, retry_at FROM hosts WHERE host = 'b.test:80'"
        ).fetchone()
        assert host[0] == "bad" and host[1] == 1 and 0 < host[2] - calendar.now <= DELAY
        assert 0 < crawler.next_ready_in() <= DELAY
        web.down = False
        await trio.sleep(crawler.next_ready_in())
        stats = await crawler.run()
    await crawler.aclose()
    assert stats.reason == "exhausted"
    assert {url for url, (state, _) in frontier_states(repo).items() if state == FAILED} == set()
    assert set(B_PAGES) <= stored_urls(repo)
    repo.close()


@pytest.mark.trio
async def test_links_that_find_their_host_bad_wait_without_counting_as_errors(tmp_path):
    web, calendar = Web(), Calendar()
    repo = Repository(tmp_path / "repo.db")
    # two of b.test's links in flight at once: the second finds the host bad without a request of its own
    parallel = replace(SETTINGS, concurrent_requests=4, concurrent_requests_per_domain=2)
    crawler = crawler_for(web, repo, calendar, parallel)
    crawler.add_seeds(["http://a.test/"])
    with trio.fail_after(30):
        stats = await crawler.run()
    await crawler.aclose()
    assert stats.reason == "blocked"
    assert frontier_states(repo) == {url: (QUEUED, None) for url in B_PAGES}
    assert set(stats.errors_by_kind) == {"connect"}  # what was asked and failed; the waiting links wait
    repo.close()


@pytest.mark.trio
async def test_links_held_back_by_an_unreachable_robots_txt_wait_for_their_host_too(tmp_path):
    web, calendar = Web(robots_down=True), Calendar()
    repo = Repository(tmp_path / "repo.db")
    crawler = crawler_for(web, repo, calendar)
    crawler.add_seeds(["http://a.test/"])
    # no answer at all turns the host bad at once: its links do not wait out robotstxt_defer_delay (60 s)
    with trio.fail_after(SETTINGS.robotstxt_defer_delay / 2):
        first = await crawler.run()
        assert first.reason == "blocked" and web.asked_b() == 0
        assert frontier_states(repo) == {url: (QUEUED, None) for url in B_PAGES}
        web.down = False
        await trio.sleep(crawler.next_ready_in())
        again = await crawler.run()
    await crawler.aclose()
    assert again.reason == "exhausted" and set(B_PAGES) <= stored_urls(repo)
    repo.close()


@pytest.mark.trio
async def test_a_restarted_crawl_keeps_a_bad_host_waiting_until_its_next_try(tmp_path):
    web, calendar = Web(), Calendar()
    repo = Repository(tmp_path / "repo.db")
    with trio.fail_after(30):
        first = await crawl_first_time(web, repo, calendar)
        await first.aclose()
        web.down = False
        restarted = crawler_for(web, repo, calendar)
        early = await restarted.run()
        assert early.reason == "blocked" and web.asked_b() == 3  # not asked again before its time
        calendar.now += DELAY
        await trio.sleep(DELAY)
        late = await restarted.run()
    await restarted.aclose()
    assert late.reason == "exhausted" and set(B_PAGES) <= stored_urls(repo)
    repo.close()


@pytest.mark.trio
async def test_a_host_that_stays_down_is_given_up_after_its_tries(tmp_path):
    web, calendar = Web(), Calendar()
    repo = Repository(tmp_path / "repo.db")
    with trio.fail_after(30):
        crawler = await crawl_first_time(web, repo, calendar)
        spells = []
        while crawler.next_ready_in() < math.inf:
            spells.append(crawler.politeness.record_of("b.test:80").bad_spells)
            await trio.sleep(crawler.next_ready_in())
            await crawler.run()
    await crawler.aclose()
    assert spells == [1, 2] and crawler.politeness.given_up("b.test:80")
    assert web.asked_b() == 3 + 2  # one request a try (a failure turns it bad again at once)
    states = frontier_states(repo)
    assert {state for state, _ in states.values()} == {FAILED}
    assert sum(error == "host_bad" for _, error in states.values()) >= 4
    repo.close()


@pytest.mark.trio
async def test_a_long_outage_tries_the_hosts_links_in_turn_so_none_spends_its_tries(tmp_path):
    web, calendar = Web(), Calendar()
    repo = Repository(tmp_path / "repo.db")
    patient = replace(SETTINGS, host_bad_retry_delay=0.02, host_bad_retries=8)
    crawler = crawler_for(web, repo, calendar, patient)
    for rank, url in enumerate(B_PAGES):  # the first the most wanted: every try would ask it
        crawler.add_seeds([url], priority=1.0 - rank / 10)
    tries = 5  # beyond HOST_FAILURE_TRIES (3)
    with trio.fail_after(30):
        for _ in range(tries):
            await trio.sleep(crawler.next_ready_in())
            assert (await crawler.run()).reason == "blocked"
        web.down = False
        await trio.sleep(crawler.next_ready_in())
        again = await crawler.run()
    await crawler.aclose()
    asked = [url for url in web.requests if url in B_PAGES][: 3 + tries - 1]
    # the first try's three attempts turned the host bad; each later try is one request, of another page
    assert asked[:3] == [B_PAGES[0]] * 3 and len(set(asked[3:])) == tries - 1
    assert again.reason == "exhausted" and set(B_PAGES) <= stored_urls(repo)
    assert {state for state, _ in frontier_states(repo).values()} == {DONE}
    repo.close()


@pytest.mark.trio
async def test_without_tries_a_bad_host_is_dropped_at_once(tmp_path):
    web, calendar = Web(), Calendar()
    repo = Repository(tmp_path / "repo.db")
    crawler = crawler_for(
        web, repo, calendar, CrawlSettings(**{**SETTINGS.__dict__, "host_bad_retry_delay": 0.0})
    )
    crawler.add_seeds(["http://a.test/"])
    with trio.fail_after(30):
        stats = await crawler.run()
    await crawler.aclose()
    assert stats.reason == "exhausted" and crawler.next_ready_in() == math.inf
    assert {state for state, _ in frontier_states(repo).values()} == {FAILED}
    repo.close()


def test_links_an_older_crawl_dropped_with_a_bad_host_are_queued_again(tmp_path):
    path = tmp_path / "repo.db"
    with Repository(path) as repo:
        repo.db.execute(
            "INSERT INTO frontier (url, host, priority, depth, state, error, updated_at) VALUES "
            f"('http://b.test/0', 'b.test:80', 1, 1, {FAILED}, 'host_bad', 0), "
            f"('http://b.test/1', 'b.test:80', 1, 1, {FAILED}, 'http_4xx', 0)"
        )
        repo.db.execute("INSERT INTO hosts (host, state) VALUES ('b.test:80', 'bad')")
        for column in ("bad_spells", "retry_at"):
            repo.db.execute(f"ALTER TABLE hosts DROP COLUMN {column}")
        repo.db.execute("UPDATE schema_versions SET version = 7 WHERE component = 'crawler'")
    with Repository(path) as repo:
        assert repo.schema_version("crawler") == len(MIGRATIONS)
        assert frontier_states(repo) == {
            "http://b.test/0": (QUEUED, None),
            "http://b.test/1": (FAILED, "http_4xx"),
        }
        assert repo.bad_hosts() == []  # tried afresh: an older crawl kept no time for its next try
