"""The crawl engine against an in-memory web: pipeline, limits, hooks, errors, stop and resume."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import pytest
import trio

from crawler import engine as engine_module
from crawler.crawl_stats import CrawlStats
from crawler.engine import Crawler
from crawler.frontier import FrontierEntry
from crawler.policy import PageVerdict
from crawler.politeness import HostRecord, HostState
from crawler.repository import Repository, StoredPage
from crawler.repository_schema import DONE, FAILED, QUEUED
from crawler.search import search, text_document
from crawler.settings import CrawlSettings
from crawler.urls import host_of


@dataclass(frozen=True)
class FakeResult:
    url: str
    final_url: str
    status: int
    content_type: str
    headers: dict
    body: bytes
    elapsed: float
    error: str | None
    redirects: tuple = ()
    retry_at: float | None = None


class FakePoliteness:
    def __init__(self) -> None:
        self.bad: set[str] = set()

    def ready_at(self, host: str) -> float:
        return math.inf if host in self.bad else 0.0

    def state(self, host: str) -> str:
        return "bad" if host in self.bad else "ok"

    def answered(self, host: str) -> bool:
        return True  # no host holds back another's fetches

    def given_up(self, host: str) -> bool:
        return host in self.bad  # bad for the rest of the crawl, as with host_bad_retry_delay = 0

    def record_of(self, host: str) -> HostRecord:
        if host in self.bad:
            return HostRecord(HostState.BAD, retry_in=math.inf)
        return HostRecord(HostState.OK)


class FakeFetcher:
    """Serves a dict of url -> html; other URLs answer 404. Records every fetch."""

    def __init__(self, pages: dict[str, str], errors: dict[str, str] | None = None) -> None:
        self.pages = pages
        self.errors = errors or {}
        self.politeness = FakePoliteness()
        self.fetched: list[str] = []

    async def fetch(self, url: str) -> FakeResult:
        self.fetched.append(url)
        await trio.sleep(0)
        if url in self.errors:
            return FakeResult(url, url, 0, "", {}, b"", 0.0, self.errors[url])
        if url not in self.pages:
            return FakeResult(url, url, 404, "text/html", {}, b"", 0.0, "http_4xx")
        return FakeResult(url, url, 200, "text/html", {}, self.pages[url].encode(), 0.01, None)

    async def aclose(self) -> None:
        pass


def site(n: int = 20) -> dict[str, str]:
    """A chain-and-star site: the home page links to every page, each page to the next and to a 404."""
    home = "http://a.test/"
    pages = {home: "<title>home</title>" + "".join(f'<a href="/p{i}">page {i}</a>' for i in range(n))}
    for i in range(n):
        words = " ".join(f"word{i}x{j}" for j in range(30))
        pages[f"http://a.test/p{i}"] = (
            f'<title>page {i}</title><p>topic{i % 3} {words}</p><a href="/p{(i + 1) % n}">next</a>'
            f'<a href="/missing{i}">gone</a>'
        )
    return pages


def make(tmp_path, fetcher, **settings) -> tuple[Crawler, Repository]:
    repo = Repository(tmp_path / "repo.db")
    crawler = Crawler(repo, CrawlSettings(**settings), fetcher=fetcher, politeness=fetcher.politeness)
    return crawler, repo


@pytest.mark.trio
async def test_crawl_stores_every_reachable_page_and_counts_errors(tmp_path):
    fetcher = FakeFetcher(site(20))
    crawler, repo = make(tmp_path, fetcher)
    crawler.add_seeds(["http://a.test/"])
    stats = await crawler.run()
    assert stats.pages == 21 and repo.document_count() == 21
    assert stats.errors_by_kind == {"http_4xx": 20}
    assert stats.reason == "exhausted" and stats.frontier_size == 0
    assert len(fetcher.fetched) == len(set(fetcher.fetched)) == 41
    assert search(repo, "word7x3")[0].url == "http://a.test/p7"
    home = repo.document_by_url("http://a.test/")
    assert len(repo.links_of(home["id"])) == 20
    states = dict(repo.db.execute("SELECT state, count(*) FROM frontier GROUP BY state").fetchall())
    assert states == {DONE: 21, FAILED: 20}
    repo.close()


@pytest.mark.trio
async def test_max_pages_counts_the_repository_and_a_rerun_resumes(tmp_path):
    fetcher = FakeFetcher(site(20))
    crawler, repo = make(tmp_path, fetcher)
    crawler.add_seeds(["http://a.test/"])
    stats = await crawler.run(max_pages=8)
    assert stats.reason == "max_pages" and repo.document_count() == 8
    first_run = set(fetcher.fetched)
    repo.close()

    fetcher2 = FakeFetcher(site(20))
    crawler2, repo2 = make(tmp_path, fetcher2)
    crawler2.add_seeds(["http://a.test/"])  # already seen: ignored
    await crawler2.run()
    assert repo2.document_count() == 21
    stored_first = {u for u in first_run if u in site(20)}
    assert not stored_first & set(fetcher2.fetched)
    repo2.close()


@pytest.mark.trio
async def test_max_pages_counts_own_documents_and_not_pooled_ones(tmp_path):
    repo = Repository(tmp_path / "repo.db")
    with repo.transaction():
        for i in range(5):
            repo.insert_page(
                StoredPage(text_document(f"http://b.test/pooled{i}", "", f"pooled {i}", origin="peer"))
            )
    repo.close()
    fetcher = FakeFetcher(site(20))
    crawler, repo = make(tmp_path, fetcher)
    assert crawler.stats.total_pages == 0
    crawler.add_seeds(["http://a.test/"])
    stats = await crawler.run(max_pages=8)
    own = repo.db.execute("SELECT count(*) FROM documents WHERE origin IS NULL").fetchone()[0]
    assert stats.reason == "max_pages" and stats.total_pages == own == 8
    assert repo.document_count() == 13
    repo.close()


@pytest.mark.trio
async def test_a_second_run_reports_its_own_pages_and_fetches(tmp_path):
    fetcher = FakeFetcher(site(20))
    crawler, repo = make(tmp_path, fetcher)
    crawler.add_seeds(["http://a.test/"])
    first = await crawler.run(max_pages=5)
    second = await crawler.run(max_pages=8)
    assert (first.pages, second.pages, second.total_pages) == (5, 3, 8) == (5, 3, repo.document_count())
    assert first.fetches + second.fetches == len(fetcher.fetched)
    assert second.pages_per_s == pytest.approx(3 / second.elapsed)
    repo.close()


@pytest.mark.trio
async def test_exact_duplicates_are_stored_without_text_and_their_links_not_followed(tmp_path):
    pages = {
        "http://a.test/": '<a href="/x">x</a><a href="/y">y</a>',
        "http://a.test/x": '<p>same content here</p><a href="/from-x">f</a>',
        "http://a.test/y": '<p>Same  content   here</p><a href="/from-y">f</a>',
    }
    fetcher = FakeFetcher(pages)
    crawler, repo = make(tmp_path, fetcher, concurrent_requests=1)
    crawler.add_seeds(["http://a.test/"])
    stats = await crawler.run()
    assert stats.duplicates == 1
    x, y = repo.document_by_url("http://a.test/x"), repo.document_by_url("http://a.test/y")
    assert y["duplicate_of"] == x["id"] and y["text"] == ""
    assert "http://a.test/from-x" in fetcher.fetched and "http://a.test/from-y" not in fetcher.fetched
    repo.close()


@pytest.mark.trio
async def test_policy_hooks_set_topic_confidence_and_priorities(tmp_path):
    pages = {"http://a.test/": '<a href="/low">low</a><a href="/high">high</a><a href="/drop">drop</a>'}
    pages |= {f"http://a.test/{name}": f"<p>{name}</p>" for name in ("low", "high", "drop")}

    def score(page):
        return ("Science/Math", 0.75, True)

    def priority(page, link, verdict):
        assert isinstance(verdict, PageVerdict) and verdict.topic == "Science/Math"
        return {"high": 2.0, "low": 1.0}.get(link.anchor_text)

    fetcher = FakeFetcher(pages)
    repo = Repository(tmp_path / "repo.db")
    crawler = Crawler(
        repo,
        CrawlSettings(concurrent_requests=1),
        fetcher=fetcher,
        politeness=fetcher.politeness,
        score_page=score,
        link_priority=priority,
    )
    crawler.add_seeds(["http://a.test/"])
    await crawler.run()
    assert fetcher.fetched == ["http://a.test/", "http://a.test/high", "http://a.test/low"]
    row = repo.document_by_url("http://a.test/high")
    assert (row["topic"], row["confidence"], row["accepted"]) == ("Science/Math", 0.75, True)
    queued = repo.db.execute("SELECT topic FROM frontier WHERE url = 'http://a.test/high'").fetchone()
    assert queued == ("Science/Math",)
    repo.close()


@pytest.mark.trio
async def test_depth_limit_and_allowed_hosts_bound_the_crawl(tmp_path):
    pages = {
        "http://a.test/": '<a href="/1">1</a><a href="http://elsewhere.test/">out</a>',
        "http://a.test/1": '<a href="/2">2</a>',
        "http://a.test/2": '<a href="/3">3</a>',
    }
    fetcher = FakeFetcher(pages)
    crawler, repo = make(tmp_path, fetcher, depth_limit=1, allowed_hosts=(".a.test",))
    crawler.add_seeds(["http://a.test/"])
    await crawler.run()
    assert fetcher.fetched == ["http://a.test/", "http://a.test/1"]
    repo.close()


@pytest.mark.trio
async def test_a_paused_topic_is_not_fetched_while_others_are_and_resumes(tmp_path):
    pages = {"http://a.test/": "<title>a</title>", "http://b.test/": '<a href="/more">more</a>'}
    pages["http://b.test/more"] = "<title>more</title>"
    fetcher = FakeFetcher(pages)
    crawler, repo = make(tmp_path, fetcher)
    crawler.add_seeds(["http://a.test/"], topic="A")
    crawler.add_seeds(["http://b.test/"], topic="B")
    crawler.frontier.set_paused_topics({"A"})
    stats = await crawler.run()
    assert stats.reason == "paused" and stats.frontier_size == 1
    assert fetcher.fetched == ["http://b.test/", "http://b.test/more"]
    crawler.frontier.set_paused_topics(())
    assert (await crawler.run()).reason == "exhausted"
    assert fetcher.fetched[-1] == "http://a.test/"
    repo.close()


class HoldsBackOtherHosts:
    """A policy that keeps links to other hosts back until the engine says nothing is left to serve."""

    def __init__(self) -> None:
        self.held: list[str] = []
        self.crawler: Crawler | None = None
        self.dry_calls = 0

    def score_pages(self, pages):
        return [PageVerdict(None, 1.0, True) for _ in pages]

    def link_priority(self, page, link, verdict):
        if not link.url.startswith("http://a.test/"):
            self.held.append(link.url)
            return None
        return 1.0

    def frontier_dry(self) -> bool:
        self.dry_calls += 1
        held, self.held = self.held, []
        return (
            sum(self.crawler.frontier.add(FrontierEntry(url=u, host=host_of(u), priority=1.0)) for u in held)
            > 0
        )


@pytest.mark.trio
async def test_a_dry_frontier_lets_the_policy_queue_what_it_held_back_before_the_crawl_ends(tmp_path):
    pages = {
        "http://a.test/": '<a href="/1">1</a><a href="http://b.test/">b</a>',
        "http://a.test/1": "<p>1</p>",
    }
    pages["http://b.test/"] = "<p>b</p>"
    fetcher = FakeFetcher(pages)
    policy = HoldsBackOtherHosts()
    repo = Repository(tmp_path / "repo.db")
    policy.crawler = crawler = Crawler(repo, CrawlSettings(), fetcher=fetcher, policy=policy)
    crawler.add_seeds(["http://a.test/"])
    stats = await crawler.run()
    assert fetcher.fetched == ["http://a.test/", "http://a.test/1", "http://b.test/"]
    assert stats.reason == "exhausted" and policy.dry_calls == 2  # once to refill, once with nothing held
    repo.close()


class OutOfSocketsAtFirst(FakeFetcher):
    """Fails its first `times` fetches as a node at its descriptor limit does."""

    def __init__(self, pages: dict[str, str], times: int) -> None:
        super().__init__(pages)
        self.times = times

    async def fetch(self, url: str) -> FakeResult:
        if self.times > 0:
            self.times -= 1
            self.fetched.append(url)
            return FakeResult(url, url, 0, "", {}, b"", 0.0, "local_resources")
        return await super().fetch(url)


@pytest.mark.trio
async def test_a_url_the_node_had_no_socket_for_is_tried_again_not_failed(tmp_path, monkeypatch):
    monkeypatch.setattr(engine_module, "LOCAL_RESOURCES_WAIT", 0.01)
    fetcher = OutOfSocketsAtFirst(site(3), times=3)
    crawler, repo = make(tmp_path, fetcher)
    crawler.add_seeds(["http://a.test/"])
    stats = await crawler.run()
    assert stats.pages == 4 and repo.document_count() == 4  # the home page and its three pages, all stored
    assert stats.errors_by_kind.get("local_resources") == 3
    assert "a.test" not in fetcher.politeness.bad
    repo.close()


def test_allows_follows_the_allowed_hosts_setting(tmp_path):
    fetcher = FakeFetcher({})
    crawler, repo = make(tmp_path, fetcher, allowed_hosts=(".a.test",))
    assert crawler.allows("http://www.a.test/x") and not crawler.allows("http://b.test/")
    repo.close()
    everywhere, repo = make(tmp_path, fetcher)
    assert everywhere.allows("http://b.test/")
    repo.close()


@pytest.mark.trio
async def test_a_bad_host_is_dropped_and_the_crawl_ends(tmp_path):
    pages = {"http://a.test/": "".join(f'<a href="http://bad.test/{i}">b</a>' for i in range(5))}
    fetcher = FakeFetcher(pages, errors={f"http://bad.test/{i}": "connect" for i in range(5)})

    original = fetcher.fetch

    async def fetch(url):
        result = await original(url)
        if url.startswith("http://bad.test/"):
            fetcher.politeness.bad.add("bad.test:80")
        return result

    fetcher.fetch = fetch
    crawler, repo = make(tmp_path, fetcher, concurrent_requests=1)
    crawler.add_seeds(["http://a.test/"])
    stats = await crawler.run()
    assert stats.frontier_size == 0
    assert sum(1 for u in fetcher.fetched if "bad.test" in u) == 1
    failed = repo.db.execute("SELECT count(*) FROM frontier WHERE error = 'host_bad'").fetchone()[0]
    assert failed == 4
    repo.close()


@pytest.mark.trio
async def test_stop_ends_the_crawl_gracefully_with_the_frontier_persisted(tmp_path):
    fetcher = FakeFetcher(site(50))
    crawler, repo = make(tmp_path, fetcher, concurrent_requests=2, stats_interval=0.01)
    crawler.add_seeds(["http://a.test/"])
    seen: list[CrawlStats] = []

    def on_stats(stats: CrawlStats) -> None:
        seen.append(stats)
        if stats.pages >= 5:
            crawler.stop()

    crawler.add_listener(on_stats)
    original = fetcher.fetch

    async def slow_fetch(url):
        await trio.sleep(0.005)
        return await original(url)

    fetcher.fetch = slow_fetch
    stats = await crawler.run()
    assert stats.reason == "stopped" and seen[-1].finished
    stored = repo.document_count()
    queued = repo.db.execute("SELECT count(*) FROM frontier WHERE state = 0").fetchone()[0]
    assert stored >= 5 and queued > 0
    assert queued == stats.frontier_size
    repo.close()


class HangingFetcher(FakeFetcher):
    """A server that never answers the URLs in `hangs`: their requests stay in flight until cancelled."""

    def __init__(self, pages: dict[str, str], hangs: set[str]) -> None:
        super().__init__(pages)
        self.hangs = hangs
        self.hanging = 0

    async def fetch(self, url: str) -> FakeResult:
        if url in self.hangs:
            self.hanging += 1
            try:
                await trio.sleep_forever()
            finally:
                self.hanging -= 1
        return await super().fetch(url)


async def wait_until_hanging(fetcher: HangingFetcher, count: int) -> None:
    while fetcher.hanging < count:
        await trio.sleep(0.001)


@pytest.mark.trio
async def test_abandoning_the_requests_in_flight_stops_at_once_and_queues_their_links_again(tmp_path):
    pages = {"http://a.test/": '<a href="http://slow.test/x">x</a> <a href="http://slow.test/y">y</a>'}
    fetcher = HangingFetcher(pages, hangs={"http://slow.test/x", "http://slow.test/y"})
    crawler, repo = make(tmp_path, fetcher, concurrent_requests=4)
    crawler.add_seeds(["http://a.test/"])
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:

            async def stop_when_hanging() -> None:
                await wait_until_hanging(fetcher, 2)
                crawler.stop()
                assert crawler.abandon_in_flight() == 2

            nursery.start_soon(stop_when_hanging)
            stats = await crawler.run()
    assert stats.reason == "stopped" and stats.errors_by_kind == {}
    assert fetcher.hanging == 0
    queued = {url for (url,) in repo.db.execute("SELECT url FROM frontier WHERE state = ?", (QUEUED,))}
    assert queued == {"http://slow.test/x", "http://slow.test/y"}
    repo.close()

    fetcher.hangs = set()  # the server answers again: a new crawl fetches both, each once
    crawler, repo = make(tmp_path, fetcher)
    fetcher.fetched.clear()
    stats = await crawler.run()
    assert sorted(fetcher.fetched) == ["http://slow.test/x", "http://slow.test/y"]
    assert stats.reason == "exhausted" and stats.errors_by_kind == {"http_4xx": 2}
    repo.close()


@pytest.mark.trio
async def test_a_stop_while_every_slot_hangs_starts_no_other_request(tmp_path):
    hangs = {f"http://slow{i}.test/" for i in range(3)}
    fetcher = HangingFetcher({}, hangs=hangs)
    crawler, repo = make(tmp_path, fetcher, concurrent_requests=2)  # the third waits for a slot
    crawler.add_seeds(sorted(hangs))
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(crawler.run)
            await wait_until_hanging(fetcher, 2)
            crawler.stop()
            assert crawler.abandon_in_flight() == 2
    assert fetcher.hanging == 0
    queued = {url for (url,) in repo.db.execute("SELECT url FROM frontier WHERE state = ?", (QUEUED,))}
    assert queued == hangs  # each link queued again, none fetched
    repo.close()


@pytest.mark.trio
async def test_abandoning_one_topics_requests_leaves_the_others_in_flight(tmp_path):
    fetcher = HangingFetcher({}, hangs={"http://a.test/db", "http://b.test/math"})
    crawler, repo = make(tmp_path, fetcher, concurrent_requests=4)
    crawler.add_seeds(["http://a.test/db"], topic="Databases")
    crawler.add_seeds(["http://b.test/math"], topic="Mathematics")
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(crawler.run)
            await wait_until_hanging(fetcher, 2)
            crawler.frontier.set_paused_topics({"Databases"})  # else its link is fetched again at once
            assert crawler.abandon_in_flight({"Databases"}) == 1
            while fetcher.hanging > 1:
                await trio.sleep(0.001)
            await trio.sleep(0.05)
            assert fetcher.hanging == 1  # the Mathematics request is still waiting for its answer
            crawler.stop()
            assert crawler.abandon_in_flight() == 1
    assert repo.db.execute("SELECT count(*) FROM frontier WHERE state = ?", (QUEUED,)).fetchone()[0] == 2
    repo.close()


@pytest.mark.trio
async def test_crawl_of_the_fixture_web_served_by_simnet(tmp_path):
    from simnet.web import serve_web

    settings = CrawlSettings(
        download_delay=0.0,
        autothrottle_enabled=False,
        concurrent_requests_per_domain=2,
        allowed_hosts=("127.0.0.0/8",),
    )
    async with serve_web("fixture") as web:
        repo = Repository(tmp_path / "repo.db")
        crawler = Crawler(repo, settings)
        crawler.add_seeds([web.hub_url])
        with trio.fail_after(60):
            stats = await crawler.run(max_pages=40)
        await crawler.aclose()
        documents = list(repo.documents())
        labels = {web.label_of(doc["url"]) for doc in documents}
        log = list(web.request_log)
    assert stats.pages == 40 and len(documents) == 40
    assert labels - {None} and labels - {None} <= {site.group for site in web.sites}
    assert all(doc["title"] for doc in documents if doc["duplicate_of"] is None)
    page_requests = [(r.host, r.path) for r in log if not r.path.endswith("/robots.txt")]
    assert len(page_requests) == len(set(page_requests)), "a page was requested twice"
    hub = repo.document_by_url(web.hub_url)
    assert len(repo.links_of(hub["id"])) >= len(web.sites)
    repo.close()


@pytest.mark.trio
async def test_fetched_pages_wait_for_processing_instead_of_piling_up(tmp_path):
    """Slow processing (a busy CPU) must hold fetching back: memory stays bounded by the settings."""
    pages = site(300)
    fetcher = FakeFetcher(pages)
    peak = 0

    def slow_score(page):
        time.sleep(0.002)  # processing far slower than the in-memory fetcher
        return PageVerdict(None, 1.0, True)

    crawler, repo = make(tmp_path, fetcher, concurrent_requests=4, write_batch_size=2, parse_in_thread=False)
    crawler = Crawler(
        repo, crawler.settings, fetcher=fetcher, politeness=fetcher.politeness, score_page=slow_score
    )
    crawler.add_seeds(["http://a.test/"])

    async def watch():
        nonlocal peak
        while True:
            peak = max(peak, crawler._pending)
            await trio.sleep(0)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch)
        await crawler.run()
        nursery.cancel_scope.cancel()
    assert repo.document_count() == 301
    # requests in flight + results queued for processing + the batch being processed
    assert peak <= 4 + 2 + 2, peak
    repo.close()


def stored_without_done(repo: Repository) -> int:
    """Documents whose URL the frontier does not mark done: what a crash between the two would leave."""
    return repo.db.execute(
        f"SELECT count(*) FROM documents d WHERE NOT EXISTS "
        f"(SELECT 1 FROM frontier f WHERE f.url = d.url AND f.state = {DONE})"
    ).fetchone()[0]


@pytest.mark.trio
async def test_a_full_disk_stops_the_crawl_with_nothing_lost_and_the_next_run_stores_every_page(tmp_path):
    fetcher = FakeFetcher(site(60))
    crawler, repo = make(tmp_path, fetcher, write_batch_size=4)
    crawler.add_seeds(["http://a.test/"])
    size = repo.db.execute("PRAGMA page_count").fetchone()[0]
    repo.db.execute(f"PRAGMA max_page_count = {size + 12}")  # SQLite's own "database or disk is full"
    stats = await crawler.run()
    assert stats.reason == "disk_full"
    stored = repo.document_count()
    assert 0 < stored < 61 and stats.total_pages == stored
    assert stored_without_done(repo) == 0
    queued = repo.db.execute(f"SELECT count(*) FROM frontier WHERE state = {QUEUED}").fetchone()[0]
    assert queued > 0  # the pages the full batch held wait there to be fetched again

    repo.db.execute("PRAGMA max_page_count = 1073741823")  # space freed
    stats = await crawler.run()
    assert stats.reason == "exhausted" and repo.document_count() == 61
    assert stored_without_done(repo) == 0
    twice = repo.db.execute(
        "SELECT count(*) FROM (SELECT url FROM documents GROUP BY url HAVING count(*) > 1)"
    )
    assert twice.fetchone()[0] == 0
    assert set(fetcher.fetched) >= set(site(60))
    repo.close()


@pytest.mark.trio
async def test_a_linked_pdf_is_stored_as_its_text_searchable_and_its_links_followed(tmp_path):
    from simnet.web import serve_web
    from tests.pdf_samples import make_pdf

    site = tmp_path / "web" / "docs"
    site.mkdir(parents=True)
    (tmp_path / "web" / "sites.tsv").write_text(
        "site\tgroup\tentry\tupstream_prefixes\ndocs\tdatabases\tindex.html\t\n"
    )
    (site / "index.html").write_text(
        '<title>Docs</title><p>The manual</p><a href="manual.pdf">manual (PDF)</a>'
    )
    (site / "manual.pdf").write_bytes(
        make_pdf(
            ["Vacuuming reclaims storage occupied by dead tuples."], title="Maintenance", links=["next.html"]
        )
    )
    (site / "next.html").write_text("<title>Next</title><p>after the manual</p>")
    settings = CrawlSettings(download_delay=0.0, autothrottle_enabled=False, allowed_hosts=("127.0.0.0/8",))
    async with serve_web(tmp_path / "web") as web:
        repo = Repository(tmp_path / "repo.db")
        crawler = Crawler(repo, settings)
        crawler.add_seeds([web.hub_url])
        with trio.fail_after(30):
            stats = await crawler.run(max_pages=20)
        await crawler.aclose()
    urls = {doc["url"].rsplit("/", 1)[-1]: doc for doc in repo.documents()}
    assert {"index.html", "manual.pdf", "next.html"} <= set(urls)
    assert not stats.errors_by_kind.get("unparsable")
    manual = urls["manual.pdf"]
    assert manual["title"] == "Maintenance" and manual["content_type"] == "application/pdf"
    assert [hit.url for hit in search(repo, "vacuuming tuples")] == [manual["url"]]
    assert [link["target_url"] for link in repo.links_of(manual["id"])] == [urls["next.html"]["url"]]
    repo.close()


@pytest.mark.trio
async def test_large_bodies_waiting_to_be_parsed_hold_new_requests_back(tmp_path):
    """scraper_slot_max_active_size: beyond it no request starts until parsing catches up, however many
    pages the batch and queue sizes would hold (a host serving large PDFs cannot fill the memory)."""
    pages = {url: html + "<!--" + "x" * 100_000 + "-->" for url, html in site(40).items()}
    scored = 0
    waiting_at_fetch: list[int] = []

    class Recording(FakeFetcher):
        async def fetch(self, url):
            bodies = sum(1 for fetched in self.fetched if fetched in self.pages)  # 404s bring none
            waiting_at_fetch.append(bodies - scored)  # fetched, not yet parsed
            return await super().fetch(url)

    def slow_score(page):
        nonlocal scored
        time.sleep(0.01)  # parsing in its worker thread, far slower than the in-memory fetcher
        scored += 1
        return PageVerdict(None, 1.0, True)

    fetcher = Recording(pages)
    settings = CrawlSettings(concurrent_requests=1, write_batch_size=8, scraper_slot_max_active_size=150_000)
    repo = Repository(tmp_path / "repo.db")
    crawler = Crawler(repo, settings, fetcher=fetcher, politeness=fetcher.politeness, score_page=slow_score)
    crawler.add_seeds(["http://a.test/"])
    with trio.fail_after(60):
        await crawler.run()
    assert repo.document_count() == 41
    assert max(waiting_at_fetch) <= 2, waiting_at_fetch  # one parsed now, one waiting (2 x 100 KB > limit)
    repo.close()


@pytest.mark.trio
@pytest.mark.parametrize("strip", [True, False])
async def test_session_ids_in_links_are_dropped_so_one_page_is_fetched_once(tmp_path, strip):
    home = "http://a.test/"
    variants = ["/x;jsessionid=A1", "/x;jsessionid=B2", "/x?utm_source=feed", "/x"]
    pages = {home: "".join(f'<a href="{v}">x</a>' for v in variants)}
    pages.update({f"http://a.test{v}": "<p>the page</p>" for v in variants})
    fetcher = FakeFetcher(pages)
    settings = {} if strip else {"url_strip_params": ()}
    crawler, repo = make(tmp_path, fetcher, **settings)
    crawler.add_seeds([home])
    await crawler.run()
    repo.close()
    fetched = sorted(url for url in fetcher.fetched if "/x" in url)
    assert fetched == (["http://a.test/x"] if strip else sorted(f"http://a.test{v}" for v in variants))


@pytest.mark.trio
@pytest.mark.parametrize("sort_query", [False, True])
async def test_links_follow_the_crawls_url_settings_and_not_only_the_parsers_defaults(tmp_path, sort_query):
    home = "http://a.test/"
    long_link = "/long?" + "x" * 300
    pages = {home: f'<a href="/x?b=1&a=2">one</a><a href="/x?a=2&b=1">two</a><a href="{long_link}">long</a>'}
    pages["http://a.test/x?a=2&b=1"] = pages["http://a.test/x?b=1&a=2"] = "<p>the page</p>"
    fetcher = FakeFetcher(pages)
    crawler, repo = make(tmp_path, fetcher, url_sort_query=sort_query, url_max_length=200)
    crawler.add_seeds([home])
    await crawler.run()
    repo.close()
    queried = sorted(url for url in fetcher.fetched if "/x?" in url)
    assert queried == (["http://a.test/x?a=2&b=1"] if sort_query else sorted(pages)[1:])
    assert not any("/long" in url for url in fetcher.fetched)  # over this crawl's url_max_length
