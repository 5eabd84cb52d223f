"""Revisits: stored pages fetched again when due, with validators; changed ones replaced, gone removed."""

from __future__ import annotations

from dataclasses import replace

import httpx
import pytest
import trio

from crawler import revisit_queue
from crawler.engine import Crawler
from crawler.fetch import Fetcher
from crawler.frontier import Frontier, FrontierEntry
from crawler.repository import Repository, StoredPage
from crawler.repository_schema import FAILED, MIGRATIONS, QUEUED
from crawler.revisits import (
    BOUND,
    LISTED_RETRIES,
    NEVER_RELISTED,
    Revisit,
    due_revisits,
    due_sitemaps,
    mark_due,
    next_interval,
    next_revisit_at,
    relisted_failures,
)
from crawler.search import search, text_document
from crawler.settings import CrawlSettings
from tests.mock_web import Calendar, streamed_response

AFTER = 100.0
SETTINGS = CrawlSettings(download_delay=0.0, autothrottle_enabled=False, revisit_after=AFTER)
HTML = {"content-type": "text/html; charset=utf-8"}


def respond(status: int, text: str = "", headers: dict[str, str] | None = None) -> httpx.Response:
    return streamed_response(status, text.encode(), headers)


class Web:
    """A mutable web on httpx's mock transport: path -> (html, etag or None); logs each request's
    If-None-Match and answers 304 when it matches."""

    def __init__(self, pages: dict[str, tuple[str, str | None]]) -> None:
        self.pages = pages
        self.status: dict[str, int] = {}  # path -> an error status to answer instead
        self.log: list[tuple[str, str | None, int]] = []  # (path, if-none-match, status)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        asked = request.headers.get("if-none-match")
        response = self._answer(path, asked)
        if path != "/robots.txt":
            self.log.append((path, asked, response.status_code))
        return response

    def _answer(self, path: str, asked: str | None) -> httpx.Response:
        if path == "/robots.txt":
            return respond(404)
        if path in self.status:
            return respond(self.status[path], "error", HTML)
        if path not in self.pages:
            return respond(404, "not here", HTML)
        html, etag = self.pages[path]
        headers = dict(HTML, etag=etag) if etag else dict(HTML)
        if etag and asked == etag:
            return respond(304, "", {"etag": etag})
        return respond(200, html, headers)

    def fetched(self, since: int = 0) -> list[str]:
        return [path for path, _, _ in self.log[since:]]


def crawler_for(
    web: Web, repo: Repository, calendar: Calendar, settings: CrawlSettings = SETTINGS
) -> Crawler:
    fetcher = Fetcher(settings, client=httpx.AsyncClient(transport=httpx.MockTransport(web)))
    return Crawler(repo, settings, fetcher, wall_clock=calendar)


def page(title: str, body: str, links: tuple[str, ...] = ()) -> str:
    anchors = "".join(f'<a href="{link}">{link}</a>' for link in links)
    return f"<html><title>{title}</title><body><p>{body}</p>{anchors}</body></html>"


def documents(repo: Repository) -> dict[str, dict]:
    return {doc["url"].rsplit("/", 1)[-1]: doc for doc in repo.documents()}


@pytest.mark.trio
async def test_a_revisit_replaces_a_changed_page_removes_a_gone_one_and_asks_with_validators(tmp_path):
    web = Web(
        {
            "/": (page("Home", "the index of the garden", ("a.html", "b.html", "c.html")), '"i1"'),
            "/a.html": (page("Roses", "roses need pruning in spring"), '"a1"'),
            "/b.html": (page("Tulips", "tulips are planted in autumn"), None),  # no validators
            "/c.html": (page("Lilies", "lilies like shade"), '"c1"'),
        }
    )
    calendar = Calendar()
    repo = Repository(tmp_path / "repo.db")
    crawler = crawler_for(web, repo, calendar)
    crawler.add_seeds(["http://garden.test/"])
    with trio.fail_after(30):
        first = await crawler.run()
    assert first.reason == "exhausted" and first.pages == 4 and first.revisits == 0
    assert crawler.revisit_due_in() == AFTER

    web.pages["/a.html"] = (page("Roses", "roses are fed with compost", ("d.html",)), '"a2"')
    web.pages["/d.html"] = (page("Compost", "compost feeds the soil"), None)
    del web.pages["/c.html"]
    calendar.now += AFTER + 1
    seen = len(web.log)
    with trio.fail_after(30):
        second = await crawler.run()
    await crawler.aclose()

    asked = {path: (etag, status) for path, etag, status in web.log[seen:]}
    assert asked["/"] == ('"i1"', 304)  # unchanged, no body sent
    assert asked["/a.html"] == ('"a1"', 200)
    assert asked["/b.html"] == (None, 200)  # same text: unchanged by its fingerprint
    assert asked["/c.html"] == ('"c1"', 404)
    assert asked["/d.html"] == (None, 200)  # the changed page's new link was followed
    assert (second.revisits, second.changed, second.gone, second.pages) == (4, 1, 1, 1)
    assert second.total_pages == 4  # a, b, index and d: c left

    docs = documents(repo)
    assert set(docs) == {"", "a.html", "b.html", "d.html"}
    assert [hit.url for hit in search(repo, "compost roses")] == [docs["a.html"]["url"]]
    assert search(repo, "pruning") == []
    assert docs["a.html"]["etag"] == '"a2"' and docs["a.html"]["verdict"] is None
    assert [link["target_url"] for link in repo.links_of(docs["a.html"]["id"])] == [docs["d.html"]["url"]]
    intervals = {
        name: (doc["revisit_interval"], doc["revisit_at"] - calendar.now) for name, doc in docs.items()
    }
    assert intervals["a.html"] == (AFTER / 2, AFTER / 2)  # changed: sooner
    assert intervals[""] == intervals["b.html"] == (2 * AFTER, 2 * AFTER)  # unchanged: later
    assert intervals["d.html"] == (None, AFTER)  # new: revisit_after
    gone = "SELECT state, error, updated_at FROM frontier WHERE url = 'http://garden.test/c.html'"
    assert repo.db.execute(gone).fetchone() == (FAILED, "gone", calendar.now)  # a link will not bring it back
    assert [host["pages"] for host in repo.hosts()] == [4]  # c left; a replaced, not added
    assert crawler.revisit_due_in() == AFTER / 2
    repo.close()


@pytest.mark.trio
async def test_a_node_at_its_page_limit_still_revisits_and_a_failed_revisit_keeps_the_page(
    tmp_path, monkeypatch
):
    # due pages are taken one at a time: all in one run
    monkeypatch.setattr(revisit_queue, "REVISIT_BATCH", 1)
    web = Web(
        {
            "/": (page("Home", "index", ("a.html", "b.html")), None),
            "/a.html": (page("A", "first words"), None),
            "/b.html": (page("B", "second words"), None),
        }
    )
    calendar = Calendar()
    repo = Repository(tmp_path / "repo.db")
    one_at_a_time = replace(SETTINGS, concurrent_requests=1, retry_times=0)
    crawler = crawler_for(web, repo, calendar, one_at_a_time)
    crawler.add_seeds(["http://site.test/"])
    with trio.fail_after(30):
        assert (await crawler.run(max_pages=2)).reason == "max_pages"
    assert set(documents(repo)) == {"", "a.html"}
    web.pages["/a.html"] = (page("A", "rewritten words"), None)
    web.status["/"] = 503
    calendar.now += AFTER
    seen = len(web.log)
    with trio.fail_after(60):
        again = await crawler.run(max_pages=2)
    await crawler.aclose()
    assert again.reason == "max_pages" and again.pages == 0 and again.revisits == 2
    assert sorted(web.fetched(seen)) == ["/", "/a.html"]  # revisits only: b is not crawled
    docs = documents(repo)
    assert docs[""]["text"] and docs[""]["revisit_interval"] is None  # kept as it was
    assert docs[""]["revisit_at"] == calendar.now + AFTER / 4  # tried again sooner
    assert "rewritten" in docs["a.html"]["text"]
    repo.close()


@pytest.mark.trio
async def test_revisits_to_a_host_gone_bad_end_the_run_and_are_tried_again_later(tmp_path):
    web = Web({"/": (page("Home", "index", ("a.html",)), None), "/a.html": (page("A", "words"), None)})
    calendar = Calendar()
    repo = Repository(tmp_path / "repo.db")
    fragile = replace(SETTINGS, concurrent_requests=1, retry_times=0, host_bad_after_failures=1)
    crawler = crawler_for(web, repo, calendar, fragile)
    crawler.add_seeds(["http://site.test/"])
    with trio.fail_after(30):
        await crawler.run()
        web.status = {"/": 503, "/a.html": 503}
        calendar.now += AFTER
        seen = len(web.log)
        again = await crawler.run()
    await crawler.aclose()
    assert again.reason == "exhausted" and again.revisits == 2
    assert again.errors_by_kind == {"http_5xx": 1, "host_bad": 1}
    assert len(web.log) == seen + 1  # the second page's fetch failed without a request
    due = [doc["revisit_at"] - calendar.now for doc in repo.documents()]
    assert due == [AFTER / 4, AFTER / 4]
    repo.close()


@pytest.mark.trio
async def test_no_page_is_fetched_again_with_revisits_off_or_before_it_is_due(tmp_path):
    web = Web({"/": (page("Home", "index"), None)})
    calendar = Calendar()
    repo = Repository(tmp_path / "repo.db")
    off = CrawlSettings(download_delay=0.0, autothrottle_enabled=False, revisit_enabled=False)
    crawler = crawler_for(web, repo, calendar, off)
    crawler.add_seeds(["http://site.test/"])
    with trio.fail_after(30):
        await crawler.run()
        calendar.now += AFTER - 1
        before_due = crawler_for(web, repo, calendar)
        await before_due.run()
        calendar.now += 1e9
        assert crawler.revisit_due_in() == float("inf")
        await crawler.run()
    await crawler.aclose()
    await before_due.aclose()
    assert web.fetched() == ["/"]
    repo.close()


def stored(
    repo: Repository, url: str, topic: str | None, fetched_at: float, origin: str | None = None
) -> None:
    fields = {"host": "site.test", "fingerprint": url, "fetched_at": fetched_at, "depth": 1, "topic": topic}
    record = text_document(
        url, url, "words", near_duplicates=False, origin=origin, revisit_at=fetched_at + AFTER, **fields
    )
    with repo.transaction():
        repo.insert_page(StoredPage(record))


def test_due_pages_come_longest_overdue_first_and_paused_topics_and_pooled_results_wait(tmp_path):
    repo = Repository(tmp_path / "repo.db")
    stored(repo, "http://site.test/late", "Roses", 10.0)
    stored(repo, "http://site.test/early", "Roses", 0.0)
    stored(repo, "http://site.test/paused", "Tulips", 5.0)
    stored(repo, "http://site.test/untopical", None, 6.0)
    stored(repo, "http://site.test/pooled", "Roses", 0.0, origin="peer")
    stored(repo, "http://site.test/not-due", "Roses", 1000.0)
    due = due_revisits(repo, now=AFTER + 10.0, limit=10, paused={"Tulips", None})
    assert [r.entry.url.rsplit("/", 1)[-1] for r in due] == ["early", "late"]
    assert due[0].entry == FrontierEntry(
        "http://site.test/early", "site.test", 0.0, 1, "Roses", origin="http://site.test/early"
    )
    assert [r.entry.url for r in due_revisits(repo, now=AFTER + 10.0, limit=1)] == ["http://site.test/early"]
    assert next_revisit_at(repo, {"Roses"}) == 5.0 + AFTER
    assert next_revisit_at(repo, {"Roses", "Tulips", None}) is None
    repo.close()


@pytest.mark.parametrize(
    ("interval", "changed", "expected"),
    [
        (None, False, 2 * AFTER),
        (None, True, AFTER / 2),
        (AFTER * BOUND, False, AFTER * BOUND),  # the longest interval
        (AFTER / BOUND, True, AFTER / BOUND),  # the shortest
        (3 * AFTER, True, 1.5 * AFTER),
    ],
)
def test_intervals_double_while_unchanged_and_halve_on_change_within_bounds(interval, changed, expected):
    assert next_interval(interval, changed, AFTER) == expected


def test_pages_stored_before_revisits_existed_fall_due_a_week_after_their_fetch(tmp_path):
    path = tmp_path / "repo.db"
    with Repository(path) as repo:
        stored(repo, "http://site.test/own", "Roses", 50.0)
        stored(repo, "http://site.test/pooled", "Roses", 50.0, origin="peer")
        repo.db.execute("DROP INDEX documents_revisit")
        repo.db.execute("DROP TABLE sitemaps")  # and the rest of v5: back to a v3 repository
        for column in ("etag", "last_modified", "revisit_at", "revisit_interval", "checked_at"):
            repo.db.execute(f"ALTER TABLE documents DROP COLUMN {column}")
        repo.db.execute("UPDATE schema_versions SET version = 3 WHERE component = 'crawler'")
    with Repository(path) as repo:
        assert repo.schema_version("crawler") == len(MIGRATIONS)
        due = dict(repo.db.execute("SELECT url, revisit_at FROM documents").fetchall())
    assert due == {"http://site.test/own": 50.0 + 7 * 86400, "http://site.test/pooled": None}


def test_sitemaps_read_before_their_validators_were_kept_are_read_again_as_before(tmp_path):
    path = tmp_path / "repo.db"
    entry = FrontierEntry("http://site.test/sitemap.xml", "site.test:80", topic="Roses")
    with Repository(path) as repo, repo.transaction():
        repo.record_sitemap(entry, 10.0, 20.0, 5)
    with Repository(path) as repo:
        for column in ("etag", "last_modified", "fingerprint", "interval", "kind"):
            repo.db.execute(f"ALTER TABLE sitemaps DROP COLUMN {column}")
        repo.db.execute("UPDATE schema_versions SET version = 5 WHERE component = 'crawler'")
    with Repository(path) as repo:
        assert repo.schema_version("crawler") == len(MIGRATIONS)
        [due] = due_sitemaps(repo, 20.0, 10)
    assert due.entry == entry and due.listing == "sitemap"
    assert (due.fingerprint, due.etag, due.last_modified, due.interval, due.validators()) == (
        "",
        None,
        None,
        None,
        {},
    )


def test_validators_a_request_cannot_carry_are_left_out():
    def revisit(etag, last_modified):
        entry = FrontierEntry("http://site.test/", "site.test")
        return Revisit(1, entry, "fp", etag, last_modified, None)

    assert revisit('"v1"', "Sat, 21 Nov 2026 10:00:00 GMT").validators() == {
        "if-none-match": '"v1"',
        "if-modified-since": "Sat, 21 Nov 2026 10:00:00 GMT",
    }
    assert revisit('"caf\u00e9"', None).validators() == {}  # a latin-1 header decoded by httpx
    assert revisit('"a\x00b"', "").validators() == {}


def test_pages_made_due_by_the_user_are_named_as_search_shows_them_or_reported_missing(tmp_path):
    repo = Repository(tmp_path / "repo.db")
    stored(repo, "http://site.test/a", "Roses", 0.0)
    stored(repo, "http://site.test/b", "Roses", 0.0)
    stored(repo, "http://site.test/pooled", "Roses", 0.0, origin="peer")
    due, missing = mark_due(
        repo, 5.0, ["HTTP://Site.test/a#top", "http://site.test/pooled", "http://x.test/"]
    )
    assert (due, missing) == (1, ["http://site.test/pooled", "http://x.test/"])
    assert [r.entry.url for r in due_revisits(repo, now=5.0, limit=10)] == ["http://site.test/a"]
    assert mark_due(repo, 6.0) == (2, [])  # every page the node revisits: pooled results are not
    repo.close()


def test_only_the_kinds_of_lists_the_crawl_reads_fall_due(tmp_path):
    sitemap = FrontierEntry("http://site.test/sitemap.xml", "site.test:80")
    feed = FrontierEntry("http://site.test/feed.xml", "site.test:80")
    with Repository(tmp_path / "repo.db") as repo:
        with repo.transaction():
            repo.record_sitemap(sitemap, 10.0, 20.0, 5)
            repo.record_sitemap(feed, 10.0, 30.0, 5, kind="feed")
        assert [d.listing for d in due_sitemaps(repo, 40.0, 10)] == ["sitemap", "feed"]
        assert [d.listing for d in due_sitemaps(repo, 40.0, 10, listings=("feed",))] == ["feed"]
        assert due_sitemaps(repo, 40.0, 10, listings=()) == []
        assert next_revisit_at(repo, listings=("feed",)) == 30.0
        assert next_revisit_at(repo, listings=()) is None


def test_a_failed_url_a_list_dates_after_its_failure_is_tried_again_a_few_times(tmp_path):
    def entry(name: str, retries: int = 0) -> FrontierEntry:
        return FrontierEntry(f"http://site.test/{name}", "site.test:80", 0.5, 2, "db", retries=retries)

    errors = {"missing.html": "http_4xx", "down.html": "http_5xx", "gone.html": "gone"}
    errors |= {f"{kind}.html": kind for kind in NEVER_RELISTED}
    changes = {entry(name).url: ("failed", (entry(name), error)) for name, error in errors.items()}
    changes[entry("spent.html").url] = ("failed", (entry("spent.html", LISTED_RETRIES), "http_4xx"))
    changes[entry("stored.html").url] = ("done", entry("stored.html"))
    with Repository(tmp_path / "repo.db") as repo:
        with repo.transaction():
            Frontier.write_changes(repo, changes, now=100.0)
        listed = [(url, 150.0) for url in changes] + [("http://site.test/unknown.html", 150.0)]
        with repo.transaction():
            again = relisted_failures(repo, listed)
            assert relisted_failures(repo, [(url, 100.0) for url in changes]) == []  # not dated after
        assert sorted(e.url.rsplit("/", 1)[1] for e in again) == ["down.html", "gone.html", "missing.html"]
        assert entry("missing.html") in again  # as it was queued: topic, priority, depth, tries spent

        frontier = Frontier()
        frontier.load(repo)
        assert frontier.retry_failed(again) == 3 and len(frontier) == 3
        popped = frontier.pop(lambda host: 0.0, now=0.0)
        assert popped is not None and popped.retries == 1
        with repo.transaction():
            frontier.persist(repo)
        states = "SELECT count(*) FROM frontier WHERE state = ? AND retries = 1"
        assert repo.db.execute(states, [QUEUED]).fetchone() == (3,)


class HangingWeb(Web):
    """`Web` whose paths in `hangs` never answer: their requests stay in flight until cancelled."""

    def __init__(self, pages: dict[str, tuple[str, str | None]]) -> None:
        super().__init__(pages)
        self.hangs: set[str] = set()
        self.hanging = 0

    async def __call__(self, request: httpx.Request) -> httpx.Response:  # type: ignore[override]
        if request.url.path in self.hangs:
            self.hanging += 1
            try:
                await trio.sleep_forever()
            finally:
                self.hanging -= 1
        return super().__call__(request)


@pytest.mark.trio
async def test_a_revisit_cancelled_in_flight_leaves_the_page_as_stored_and_due(tmp_path):
    web = HangingWeb({"/": (page("Home", "index", ("a.html",)), None), "/a.html": (page("A", "words"), None)})
    calendar = Calendar()
    repo = Repository(tmp_path / "repo.db")
    crawler = crawler_for(web, repo, calendar)
    crawler.add_seeds(["http://site.test/"])
    with trio.fail_after(30):
        await crawler.run()
        web.hangs = {"/a.html"}
        calendar.now += AFTER + 1
        async with trio.open_nursery() as nursery:

            async def stop_when_hanging() -> None:
                while web.hanging == 0:
                    await trio.sleep(0.001)
                crawler.stop()
                assert crawler.abandon_in_flight() == 1

            nursery.start_soon(stop_when_hanging)
            stopped = await crawler.run()
        assert stopped.reason == "stopped" and stopped.errors_by_kind == {}
        assert documents(repo)["a.html"]["revisit_at"] < calendar.now  # due still
        web.hangs = set()
        seen = len(web.log)
        again = await crawler.run()
    await crawler.aclose()
    assert "/a.html" in web.fetched(seen) and again.errors_by_kind == {}
    assert documents(repo)["a.html"]["revisit_at"] > calendar.now
    repo.close()
