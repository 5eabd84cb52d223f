"""Sitemaps: read when a host's page is accepted, their pages queued as tunnelled links, never stored."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime

import pytest
import trio

from crawler.engine import Crawler
from crawler.parse import Link
from crawler.policy import CrawledPage, PageVerdict
from crawler.settings import CrawlSettings
from crawler.sitemaps import MAX_BYTES, parse_lastmod, parse_sitemap
from tests.mock_web import (
    QUIET,
    Calendar,
    Web,
    crawl,
    crawler_for,
    html,
    page,
    stored,
)

SETTINGS = QUIET
NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def urlset(*locs: str, lastmod: str | None = None) -> bytes:
    stamp = f"<lastmod>{lastmod}</lastmod>" if lastmod else ""
    items = "".join(f"<url><loc>{loc}</loc>{stamp}</url>" for loc in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS}">{items}</urlset>'.encode()


def index(*locs: str) -> bytes:
    items = "".join(f"<sitemap><loc>{loc}</loc></sitemap>" for loc in locs)
    return f'<?xml version="1.0"?><sitemapindex xmlns="{NS}">{items}</sitemapindex>'.encode()


def robots(*sitemaps: str) -> tuple[str, bytes]:
    lines = ["User-agent: *", "Disallow:", *(f"Sitemap: {url}" for url in sitemaps)]
    return "text/plain", "\n".join(lines).encode()


def docs_site(sitemap_body: bytes, sitemap_type: str = "application/xml", path: str = "/sitemap.xml"):
    """A site whose home page links to nothing; only its sitemap lists its other pages."""
    return {
        ("docs.test", "/robots.txt"): robots(f"http://docs.test{path}"),
        ("docs.test", "/"): html(page("Home")),
        ("docs.test", path): (sitemap_type, sitemap_body),
        ("docs.test", "/a.html"): html(page("A")),
        ("docs.test", "/b.html"): html(page("B", "c.html")),
        ("docs.test", "/c.html"): html(page("C")),
        ("other.test", "/robots.txt"): robots(),
        ("other.test", "/x.html"): html(page("X")),
    }


# -- parsing -----------------------------------------------------------------------------------------------
def test_a_urlset_gives_its_locs_resolved_and_once_with_their_lastmod():
    body = urlset("http://docs.test/a.html", "/b.html", "http://docs.test/a.html#part", lastmod="2024-05-01")
    sitemap = parse_sitemap(body, "http://docs.test/sitemap.xml")
    assert sitemap.error is None and sitemap.kind == "urlset"
    assert [e.url for e in sitemap.entries] == ["http://docs.test/a.html", "http://docs.test/b.html"]
    assert {e.lastmod for e in sitemap.entries} == {parse_lastmod("2024-05-01T00:00:00+00:00")}


def test_an_index_and_a_gzipped_sitemap_are_read():
    sitemap = parse_sitemap(gzip.compress(index("http://docs.test/s1.xml")), "http://docs.test/s.xml.gz")
    assert sitemap.kind == "index" and [e.url for e in sitemap.entries] == ["http://docs.test/s1.xml"]


@pytest.mark.parametrize("before", [b"\n", b"\r\n  \t", b"\xef\xbb\xbf", b"\xef\xbb\xbf\n"])
def test_a_sitemap_printed_after_a_blank_line_or_a_byte_order_mark_is_read(before):
    # A generator's stray line break before the XML declaration, which an XML parser refuses there
    sitemap = parse_sitemap(before + urlset("http://docs.test/a.html"), "http://docs.test/sitemap.xml")
    assert sitemap.error is None and [e.url for e in sitemap.entries] == ["http://docs.test/a.html"]


def test_a_sitemap_with_its_urls_ampersands_unescaped_is_read_as_meant():
    # escaped ones beside them stay as they are
    body = urlset("http://docs.test/a?x=1&y=2", "http://docs.test/b?x=1&amp;y=2", "/c?p=1&#38;q=2&r")
    sitemap = parse_sitemap(body, "http://docs.test/sitemap.xml")
    assert sitemap.error is None
    assert [e.url for e in sitemap.entries] == [
        "http://docs.test/a?x=1&y=2",
        "http://docs.test/b?x=1&y=2",
        "http://docs.test/c?p=1&q=2&r",
    ]


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"<html><body>no sitemap</body></html>", "not a sitemap"),
        (b'<?xml version="1.0"?><urlset><url><loc>http://docs.test/a', "ParseError"),
        (
            b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]>'
            b"<urlset><url><loc>&b;</loc></url></urlset>",
            "DTDForbidden",
        ),
        (gzip.compress(b"<urlset>" + b" " * (MAX_BYTES + 10)), "more than"),
        (gzip.compress(urlset("http://docs.test/a.html"))[:-12], "truncated"),
    ],
    ids=["html", "malformed", "entity-bomb", "gzip-bomb", "cut-gzip"],
)
def test_malformed_or_hostile_sitemaps_give_an_error_not_an_exception(body, error):
    sitemap = parse_sitemap(body, "http://docs.test/sitemap.xml")
    assert sitemap.error is not None and error in sitemap.error and sitemap.entries == ()


def test_a_sitemap_is_read_up_to_its_limit():
    body = urlset(*(f"http://docs.test/{i}.html" for i in range(10)))
    assert len(parse_sitemap(body, "http://docs.test/s.xml", max_urls=4).entries) == 4


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2004", "2004-01-01T00:00:00+00:00"),
        ("2004-12", "2004-12-01T00:00:00+00:00"),
        ("2004-12-23T18:00:15+01:00", "2004-12-23T17:00:15+00:00"),
        ("2004-12-23T18:00:15Z", "2004-12-23T18:00:15+00:00"),
    ],
)
def test_lastmod_takes_the_w3c_datetime_forms(text, expected):
    assert parse_lastmod(text) == parse_lastmod(expected) is not None


def test_an_unreadable_lastmod_is_none():
    assert parse_lastmod("last tuesday") is None


# -- crawling ----------------------------------------------------------------------------------------------
@pytest.mark.trio
async def test_the_sitemap_of_a_host_with_an_accepted_page_finds_its_unlinked_pages(tmp_path):
    body = urlset("http://docs.test/a.html", "http://docs.test/b.html", "http://other.test/x.html")
    web = Web(docs_site(body))
    crawler = crawler_for(web, tmp_path)
    stats = await crawl(crawler, "http://docs.test/")
    # b.html's own link to c.html is followed as any link; other.test is not the sitemap's to list
    assert stored(crawler) == {f"http://docs.test/{p}" for p in ("", "a.html", "b.html", "c.html")}
    assert not web.requested("/x.html")
    assert stats.sitemaps == 1 and stats.sitemap_urls == 2 and stats.errors == 0
    assert web.log.count(("docs.test", "/sitemap.xml")) == 1
    assert crawler.repo.db.execute("SELECT kind FROM sitemaps").fetchall() == [("sitemap",)]


@pytest.mark.trio
async def test_an_index_queues_its_sitemaps_which_queue_their_pages(tmp_path):
    files = docs_site(index("http://docs.test/part-1.xml", "http://docs.test/part-2.xml.gz"))
    files[("docs.test", "/part-1.xml")] = ("text/xml", urlset("http://docs.test/a.html"))
    files[("docs.test", "/part-2.xml.gz")] = (
        "application/octet-stream",
        gzip.compress(urlset("http://docs.test/b.html")),
    )
    crawler = crawler_for(Web(files), tmp_path)
    stats = await crawl(crawler, "http://docs.test/")
    assert stored(crawler) == {f"http://docs.test/{p}" for p in ("", "a.html", "b.html", "c.html")}
    assert stats.sitemaps == 3 and stats.sitemap_urls == 2


@pytest.mark.trio
async def test_sitemaps_are_not_read_when_off_nor_for_hosts_with_no_accepted_page(tmp_path):
    files = docs_site(urlset("http://docs.test/a.html"))
    off = Web(files)
    await crawl(
        crawler_for(off, tmp_path / "off", CrawlSettings(**{**vars(SETTINGS), "sitemaps_enabled": False})),
        "http://docs.test/",
    )
    assert not off.requested("/sitemap.xml")

    rejecting = Web(files)
    crawler = crawler_for(rejecting, tmp_path / "rejecting", score_page=lambda page: (None, 0.1, False))
    await crawl(crawler, "http://docs.test/")
    assert not rejecting.requested("/sitemap.xml") and stored(crawler) == {"http://docs.test/"}


@pytest.mark.trio
async def test_sitemap_pages_are_links_of_a_page_nobody_judged_in_the_accepted_pages_queue(tmp_path):
    calls: list[tuple[str, bool, int]] = []

    def priority(page: CrawledPage, link: Link, verdict: PageVerdict) -> float:
        calls.append((link.url, verdict.accepted, page.entry.tunnel))
        return 0.5

    web = Web(docs_site(urlset("http://docs.test/a.html")))
    crawler = crawler_for(web, tmp_path, score_page=lambda page: ("docs", 0.9, True), link_priority=priority)
    await crawl(crawler, "http://docs.test/")
    # the sitemap is a link of the accepted home page; its page, a link of the unjudged sitemap
    assert ("http://docs.test/sitemap.xml", True, 0) in calls
    assert ("http://docs.test/a.html", False, 0) in calls
    assert {doc["topic"] for doc in crawler.repo.documents()} == {"docs"}
    row = crawler.repo.db.execute("SELECT tunnel, topic FROM frontier WHERE url LIKE '%a.html'").fetchone()
    assert tuple(row) == (1, "docs")


@pytest.mark.trio
@pytest.mark.parametrize(
    "body",
    [b'<?xml version="1.0"?><urlset><url><loc>', b'<?xml version="1.0"?><catalog><book/></catalog>'],
    ids=["malformed", "not-a-sitemap"],
)
async def test_a_broken_sitemap_or_other_xml_is_an_error_never_a_document(tmp_path, body):
    crawler = crawler_for(Web(docs_site(body)), tmp_path)
    stats = await crawl(crawler, "http://docs.test/")
    assert stored(crawler) == {"http://docs.test/"}
    assert stats.errors_by_kind == {"unparsable": 1} and stats.sitemaps == 0


@pytest.mark.trio
async def test_a_crawl_reading_sitemaps_still_refuses_other_xml_it_is_not_asked_to_store(tmp_path):
    files = docs_site(urlset("http://docs.test/a.html"))
    files[("docs.test", "/")] = html(page("Home", "books.xml"))
    files[("docs.test", "/books.xml")] = ("application/xml", b"<?xml version='1.0'?><catalog/>")
    crawler = crawler_for(Web(files), tmp_path)
    await crawl(crawler, "http://docs.test/")
    assert "http://docs.test/books.xml" not in stored(crawler)


def stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat()


def fetched_at(crawler: Crawler) -> dict[str, float]:
    rows = crawler.repo.db.execute("SELECT url, fetched_at FROM documents").fetchall()
    return {url.rsplit("/", 1)[-1]: at for url, at in rows}


@pytest.mark.trio
async def test_a_sitemap_read_again_when_due_queues_new_pages_and_makes_pages_changed_since_due(tmp_path):
    after = 100.0
    calendar = Calendar()
    files = docs_site(urlset("http://docs.test/a.html", "http://docs.test/b.html", lastmod=stamp(0)))
    web = Web(files)
    settings = CrawlSettings(**{**vars(SETTINGS), "revisit_after": after})
    crawler = crawler_for(web, tmp_path, settings, wall_clock=calendar)
    first = await crawl(crawler, "http://docs.test/")
    assert first.sitemaps == 1 and set(fetched_at(crawler)) == {"", "a.html", "b.html", "c.html"}
    row = crawler.repo.db.execute("SELECT read_at, due_at, urls FROM sitemaps").fetchone()
    assert tuple(row) == (calendar.now, calendar.now + after, 2)

    # pages and sitemap due: pages unchanged (their interval doubles), the sitemap changed (it lists c.html,
    # which the crawl knows): read again, and read sooner next time
    calendar.now += after + 1
    files[("docs.test", "/sitemap.xml")] = (
        "application/xml",
        urlset(*(f"http://docs.test/{name}.html" for name in "abc"), lastmod=stamp(0)),
    )
    with trio.fail_after(30):
        second = await crawler.run()
    assert second.revisits == 4 and second.changed == 0 and second.sitemaps == 2
    assert web.log.count(("docs.test", "/sitemap.xml")) == 2
    row = crawler.repo.db.execute("SELECT due_at, interval, urls FROM sitemaps").fetchone()
    assert tuple(row) == (calendar.now + after / 2, after / 2, 3)

    # only the sitemap is due next: it names a new page, and two pages changed since their fetch, one of
    # them in truth (the other's lastmod is wrong: its server's clock, say)
    calendar.now += after / 2 + 1
    files[("docs.test", "/a.html")] = html(page("A revised"))
    files[("docs.test", "/d.html")] = html(page("D"))
    recent = stamp(calendar.now - 10)
    files[("docs.test", "/sitemap.xml")] = (
        "application/xml",
        urlset("http://docs.test/a.html", "http://docs.test/b.html", lastmod=recent)[:-9]
        + b"<url><loc>http://docs.test/d.html</loc></url></urlset>",
    )
    before = fetched_at(crawler)
    with trio.fail_after(30):
        third = await crawler.run()
    now = fetched_at(crawler)
    assert third.sitemaps == 3 and third.changed == 1 and third.revisits == 6
    assert now["a.html"] == calendar.now and now["d.html"] == calendar.now  # revised, and new
    assert now["c.html"] == before["c.html"]  # not due yet
    assert web.log.count(("docs.test", "/b.html")) == 3 and now["b.html"] == before["b.html"]  # as stored
    assert "revised" in next(d["title"] for d in crawler.repo.documents() if d["url"].endswith("a.html"))

    # read again (it lists one more page), the same lastmod says nothing new: b was found as stored after it
    calendar.now += after / 4 + 1
    files[("docs.test", "/e.html")] = html(page("E"))
    body = files[("docs.test", "/sitemap.xml")][1]
    files[("docs.test", "/sitemap.xml")] = (
        "application/xml",
        body[:-9] + b"<url><loc>http://docs.test/e.html</loc></url></urlset>",
    )
    with trio.fail_after(30):
        fourth = await crawler.run()
    assert fourth.sitemaps == 4 and web.log.count(("docs.test", "/b.html")) == 3
    assert "e.html" in fetched_at(crawler)


@pytest.mark.trio
async def test_a_sitemap_found_unchanged_waits_longer_and_its_etag_spares_its_body(tmp_path):
    after = 100.0
    calendar = Calendar()
    files = docs_site(urlset("http://docs.test/a.html"))
    web = Web(files)
    web.etags["/sitemap.xml"] = '"v1"'
    settings = CrawlSettings(**{**vars(SETTINGS), "revisit_after": after})
    crawler = crawler_for(web, tmp_path, settings, wall_clock=calendar)
    await crawl(crawler, "http://docs.test/")
    query = "SELECT due_at, interval, urls, etag FROM sitemaps"
    assert tuple(crawler.repo.db.execute(query).fetchone()) == (calendar.now + after, None, 1, '"v1"')

    calendar.now += after + 1  # the server answers 304 to the stored ETag: unchanged, read half as often
    with trio.fail_after(30):
        second = await crawler.run()
    sitemap_requests = [h for (_, path), h in zip(web.log, web.asked, strict=True) if path == "/sitemap.xml"]
    assert sitemap_requests[-1].get("if-none-match") == '"v1"'
    assert second.sitemaps == 1 and second.sitemaps_unchanged == 1
    assert tuple(crawler.repo.db.execute(query).fetchone()) == (
        calendar.now + 2 * after,
        2 * after,
        1,
        '"v1"',
    )

    # it changed: its new page is fetched and it is read twice as often, with its new ETag
    calendar.now += 2 * after + 1
    files[("docs.test", "/sitemap.xml")] = (
        "application/xml",
        urlset("http://docs.test/a.html", "http://docs.test/b.html"),
    )
    web.etags["/sitemap.xml"] = '"v2"'
    with trio.fail_after(30):
        third = await crawler.run()
    assert third.sitemaps == 2 and "b.html" in fetched_at(crawler)
    assert tuple(crawler.repo.db.execute(query).fetchone()) == (calendar.now + after, after, 2, '"v2"')

    # a server that stops sending validators: the same bytes are unchanged all the same, and not read
    calendar.now += 2 * after + 1
    del web.etags["/sitemap.xml"]
    queued = third.sitemap_urls
    with trio.fail_after(30):
        fourth = await crawler.run()
    assert fourth.sitemaps == 2 and fourth.sitemaps_unchanged == 2 and fourth.sitemap_urls == queued
    assert tuple(crawler.repo.db.execute(query).fetchone()) == (
        calendar.now + 2 * after,
        2 * after,
        2,
        '"v2"',
    )


@pytest.mark.trio
async def test_a_sitemap_that_cannot_be_read_again_keeps_its_count_and_is_tried_again_sooner(tmp_path):
    after = 100.0
    calendar = Calendar()
    web = Web(docs_site(urlset("http://docs.test/a.html")))
    settings = CrawlSettings(**{**vars(SETTINGS), "revisit_after": after, "retry_times": 0})
    crawler = crawler_for(web, tmp_path, settings, wall_clock=calendar)
    await crawl(crawler, "http://docs.test/")
    calendar.now += after + 1
    web.status["/sitemap.xml"] = 503
    with trio.fail_after(30):
        stats = await crawler.run()
    assert stats.errors_by_kind.get("http_5xx") == 1
    row = crawler.repo.db.execute("SELECT due_at, urls, interval FROM sitemaps").fetchone()
    assert tuple(row) == (calendar.now + after / 4, 1, None)
