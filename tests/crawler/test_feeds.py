"""Feeds: named in a page's head, followed as its links, their entries queued with their words as anchor
text, read again when due, never stored."""

from __future__ import annotations

import calendar as calendar_module
from email.utils import formatdate

import pytest
import trio

from crawler.feeds import MAX_BYTES, MAX_DECLARED, MAX_TEXT, feed_urls, is_feed, parse_feed
from crawler.parse import Link, parse_html
from crawler.policy import CrawledPage, PageVerdict
from crawler.revisits import LISTED_RETRIES
from crawler.settings import CrawlSettings
from tests.mock_web import QUIET, Calendar, Web, crawl, crawler_for, html, page, stored

FEED = "http://blog.test/feed.xml"


def rss(*items: tuple[str, str, str], published: float = 1_749_528_000.0) -> bytes:
    """RSS 2.0 with (link, title, description) items, each published at `published` (a Unix time)."""
    date = formatdate(published, usegmt=True)
    body = "".join(
        f"<item><title>{title}</title><link>{link}</link><description>{text}</description>"
        f"<pubDate>{date}</pubDate></item>"
        for link, title, text in items
    )
    return (
        f'<?xml version="1.0"?><rss version="2.0"><channel><title>Blog</title>{body}</channel></rss>'.encode()
    )


def atom(*entries: tuple[str, str]) -> bytes:
    """Atom 1.0 with (href, title) entries, each with an enclosure beside its page."""
    body = "".join(
        f'<entry><title>{title}</title><link rel="enclosure" href="{href}.mp3"/>'
        f'<link rel="alternate" href="{href}"/><updated>2025-01-02T03:04:05Z</updated></entry>'
        for href, title in entries
    )
    return f'<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">{body}</feed>'.encode()


def head_page(title: str, *feeds: str, links: tuple[str, ...] = ()) -> bytes:
    heads = "".join(f'<link rel="alternate" type="application/rss+xml" href="{feed}">' for feed in feeds)
    anchors = "".join(f'<a href="{link}">{link}</a>' for link in links)
    head = f"<head><title>{title}</title>{heads}</head>"
    return f"<html>{head}<body><p>{title}</p>{anchors}</body></html>".encode()


# -- reading a feed ----------------------------------------------------------------------------------------
def test_rss_items_give_their_links_resolved_once_with_their_words_and_date():
    body = rss(
        ("/posts/wal.html", "Write-ahead log", "&lt;p&gt;How the &lt;b&gt;WAL&lt;/b&gt; works&lt;/p&gt;"),
        ("http://other.test/x.html", "Elsewhere", "a post on another host"),
        ("/posts/wal.html", "Again", "the same page twice"),
    )
    feed = parse_feed(body, FEED)
    assert feed.kind == "feed" and feed.error is None
    assert [e.url for e in feed.entries] == ["http://blog.test/posts/wal.html", "http://other.test/x.html"]
    assert feed.entries[0].text == "Write-ahead log How the WAL works"  # markup removed
    assert feed.entries[0].lastmod == calendar_module.timegm((2025, 6, 10, 4, 0, 0))


def test_an_atom_entry_gives_its_alternate_link_not_its_enclosure():
    feed = parse_feed(atom(("a.html", "A post")), "http://blog.test/x/atom.xml")
    assert [(e.url, e.text) for e in feed.entries] == [("http://blog.test/x/a.html", "A post")]
    assert feed.entries[0].lastmod == calendar_module.timegm((2025, 1, 2, 3, 4, 5))


def test_rss_1_and_a_malformed_feed_are_read():
    rdf = (
        b'<?xml version="1.0"?><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
        b'xmlns="http://purl.org/rss/1.0/"><item rdf:about="http://blog.test/r.html"><title>R</title>'
        b"<link>http://blog.test/r.html</link></item></rdf:RDF>"
    )
    assert [e.url for e in parse_feed(rdf, FEED).entries] == ["http://blog.test/r.html"]
    sloppy = (
        b"<rss><channel><item><title>A & B</title><link>http://blog.test/?a=1&b=2</link></item></channel>"
    )
    assert [(e.url, e.text) for e in parse_feed(sloppy, FEED).entries] == [
        ("http://blog.test/?a=1&b=2", "A & B")
    ]


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"<html><body><p>a page</p></body></html>", "unparsable: not a feed"),
        (b"", "unparsable: not a feed"),
        (
            b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]>'
            b"<rss><channel><item><title>&b;</title><link>http://blog.test/</link></item></channel></rss>",
            "unparsable: entity declarations",
        ),
        (b"<rss>" + b" " * MAX_BYTES + b"</rss>", "too_large"),
    ],
    ids=["html", "empty", "entities", "too-large"],
)
def test_what_is_no_feed_or_hostile_gives_an_error_not_an_exception(body, error):
    assert parse_feed(body, FEED).error == error


def test_a_feed_is_read_up_to_its_limits():
    items = [(f"/p{i}.html", "t" * (MAX_TEXT + 50), "") for i in range(20)]
    feed = parse_feed(rss(*items), FEED, max_entries=5)
    assert len(feed.entries) == 5 and all(len(e.text) == MAX_TEXT for e in feed.entries)


def test_a_feed_is_told_by_its_type_or_by_its_root_element():
    assert is_feed("application/atom+xml", b"anything")
    assert is_feed("text/xml", rss()) and is_feed("application/xml", atom())
    assert not is_feed("application/xml", b'<?xml version="1.0"?><urlset/>')
    assert not is_feed("text/html", rss())


# -- finding feeds -----------------------------------------------------------------------------------------
def test_a_page_names_its_feeds_in_its_head_and_only_feeds_count():
    body = (
        b'<html><head><link rel="alternate" type="application/atom+xml" href="/atom.xml">'
        b'<link rel="alternate" type="text/html" hreflang="de" href="/de/">'
        b'<link rel="ALTERNATE" type="application/rss+xml; charset=utf-8" href="rss">'
        b'<link rel="stylesheet" type="text/css" href="s.css"></head><body>x</body></html>'
    )
    parsed = parse_html(body, "http://blog.test/docs/page.html")
    assert parsed.feeds == ("http://blog.test/atom.xml", "http://blog.test/docs/rss")


def test_a_head_naming_many_feeds_gives_at_most_a_few():
    declared = [("alternate", "application/rss+xml", f"/f{i}.xml") for i in range(10)]
    assert len(feed_urls(declared, "http://blog.test/")) == MAX_DECLARED


# -- crawling ----------------------------------------------------------------------------------------------
def blog() -> dict[tuple[str, str], tuple[str, bytes]]:
    """A home page whose head names a feed; the feed links an unlinked page and another host's post."""
    return {
        ("blog.test", "/robots.txt"): ("text/plain", b"User-agent: *\nDisallow:\n"),
        ("blog.test", "/"): html(head_page("Home", "/feed.xml")),
        ("blog.test", "/feed.xml"): (
            "application/rss+xml",
            rss(("/new.html", "Vacuum tuning", "autovacuum"), ("http://other.test/x.html", "Elsewhere", "")),
        ),
        ("blog.test", "/new.html"): html(page("New", "old.html")),
        ("blog.test", "/old.html"): html(page("Old")),
        ("other.test", "/robots.txt"): ("text/plain", b"User-agent: *\nDisallow:\n"),
        ("other.test", "/x.html"): html(page("X")),
    }


@pytest.mark.trio
async def test_a_feed_a_page_names_finds_its_entries_pages_on_any_host_and_is_not_stored(tmp_path):
    web = Web(blog())
    crawler = crawler_for(web, tmp_path)
    stats = await crawl(crawler, "http://blog.test/")
    assert stored(crawler) == {
        "http://blog.test/",
        "http://blog.test/new.html",
        "http://blog.test/old.html",
        "http://other.test/x.html",
    }
    assert stats.feeds == 1 and stats.feed_urls == 2 and stats.sitemaps == 0 and stats.errors == 0
    row = crawler.repo.db.execute("SELECT kind, urls FROM sitemaps").fetchone()
    assert tuple(row) == ("feed", 2)
    kinds = crawler.repo.db.execute("SELECT target_url, kind FROM links WHERE kind = 'feed'").fetchall()
    assert [tuple(k) for k in kinds] == [("http://blog.test/feed.xml", "feed")]


@pytest.mark.trio
async def test_feed_entries_are_links_with_their_words_as_anchor_text(tmp_path):
    seen: dict[str, tuple[str, tuple, bool]] = {}

    def priority(page: CrawledPage, link: Link, verdict: PageVerdict) -> float:
        seen[link.url] = (link.anchor_text, link.context, verdict.accepted)
        return 0.5

    crawler = crawler_for(
        Web(blog()), tmp_path, score_page=lambda p: ("db", 0.9, True), link_priority=priority
    )
    await crawl(crawler, "http://blog.test/")
    assert seen["http://blog.test/feed.xml"] == ("", (), True)  # a link of the accepted home page
    words = "Vacuum tuning autovacuum"
    assert seen["http://blog.test/new.html"] == (words, ((0, words),), False)  # tunnelled through the feed


class EntryJudge:
    """Accepts every page and the feed entries whose words speak of vacuum; records each link's verdict."""

    def __init__(self) -> None:
        self.seen: dict[str, PageVerdict] = {}

    def score_pages(self, pages):
        return [PageVerdict("db", 0.9, True) for _ in pages]

    def score_entries(self, feed, texts):
        return [
            PageVerdict("db", 0.8, True) if "vacuum" in t.lower() else PageVerdict(None, 0.1, False)
            for t in texts
        ]

    def link_priority(self, page, link, verdict):
        self.seen[link.url] = verdict
        return 0.5


@pytest.mark.trio
async def test_a_feed_entry_the_focus_accepts_by_its_words_is_queued_as_an_accepted_pages_link(tmp_path):
    judge = EntryJudge()
    await crawl(crawler_for(Web(blog()), tmp_path, policy=judge), "http://blog.test/")
    assert judge.seen["http://blog.test/new.html"] == PageVerdict("db", 0.8, True)  # "Vacuum tuning"
    assert not judge.seen["http://other.test/x.html"].accepted  # no words: tunnelled through the feed


class FirstPageOnly(EntryJudge):
    """Accepts the home page alone: links of other pages wait tunnelled at a low priority."""

    def score_pages(self, pages):
        return [PageVerdict("db", 0.9, page.url.endswith("/")) for page in pages]

    def link_priority(self, page, link, verdict):
        super().link_priority(page, link, verdict)
        return verdict.confidence if verdict.accepted else 0.05


@pytest.mark.trio
async def test_a_queued_page_a_feed_entry_speaks_for_is_raised_to_an_accepted_links_priority(tmp_path):
    pages = {
        **blog(),  # its feed lists new.html ("Vacuum tuning") and other.test/x.html
        ("blog.test", "/"): html(head_page("Home", "/feed.xml", links=("/hub.html",))),
        ("blog.test", "/hub.html"): html(page("Hub", "new.html")),  # read before the feed: new.html waits
    }
    judge = FirstPageOnly()
    settings = CrawlSettings(**{**vars(QUIET), "concurrent_requests": 1})
    crawler = crawler_for(Web(pages), tmp_path, settings, policy=judge, lockstep=True)
    await crawl(crawler, "http://blog.test/")
    source, priority = crawler.repo.db.execute(
        "SELECT source, priority FROM frontier WHERE url = 'http://blog.test/new.html'"
    ).fetchone()
    assert source == "http://blog.test/hub.html"  # found on the hub first, tunnelled at 0.05
    assert priority == 0.8  # raised when its feed entry's words were accepted
    assert judge.seen["http://blog.test/new.html"] == PageVerdict("db", 0.8, True)


@pytest.mark.trio
async def test_feeds_are_not_followed_when_off(tmp_path):
    web = Web(blog())
    settings = CrawlSettings(**{**vars(QUIET), "feeds_enabled": False})
    crawler = crawler_for(web, tmp_path, settings)
    stats = await crawl(crawler, "http://blog.test/")
    assert not web.requested("/feed.xml") and stored(crawler) == {"http://blog.test/"}
    assert stats.feeds == 0


@pytest.mark.trio
@pytest.mark.parametrize("sitemaps", [True, False], ids=["sitemaps read too", "sitemaps off"])
async def test_a_feed_is_read_again_when_due_unchanged_by_its_etag_then_with_a_new_entry(tmp_path, sitemaps):
    after = 100.0
    calendar = Calendar()
    files = blog()
    web = Web(files)
    web.etags["/feed.xml"] = '"v1"'
    settings = CrawlSettings(**{**vars(QUIET), "revisit_after": after, "sitemaps_enabled": sitemaps})
    crawler = crawler_for(web, tmp_path, settings, wall_clock=calendar)
    await crawl(crawler, "http://blog.test/")
    query = "SELECT due_at, interval, urls, kind FROM sitemaps"
    assert tuple(crawler.repo.db.execute(query).fetchone()) == (calendar.now + after, None, 2, "feed")

    calendar.now += after + 1  # 304 to the stored ETag: unchanged, read half as often
    with trio.fail_after(30):
        second = await crawler.run()
    assert second.feeds_unchanged == 1 and second.sitemaps_unchanged == 0
    assert tuple(crawler.repo.db.execute(query).fetchone()) == (
        calendar.now + 2 * after,
        2 * after,
        2,
        "feed",
    )

    calendar.now += 2 * after + 1  # a new post: fetched, and the feed read twice as often
    files[("blog.test", "/feed.xml")] = (
        "application/rss+xml",
        rss(("/newer.html", "Index bloat", ""), ("/new.html", "Vacuum tuning", "")),
    )
    files[("blog.test", "/newer.html")] = html(page("Newer"))
    web.etags["/feed.xml"] = '"v2"'
    with trio.fail_after(30):
        third = await crawler.run()
    assert third.feeds == 2 and "http://blog.test/newer.html" in stored(crawler)
    assert tuple(crawler.repo.db.execute(query).fetchone()) == (calendar.now + after, after, 2, "feed")


# -- a URL that failed, listed later ------------------------------------------------------------------------
def draft_blog(calendar: Calendar) -> dict[tuple[str, str], tuple[str, bytes]]:
    """A home page linking a post before it is published (404), and a feed that does not list it yet."""
    return {
        ("blog.test", "/robots.txt"): ("text/plain", b"User-agent: *\nDisallow:\n"),
        ("blog.test", "/"): html(head_page("Home", "/feed.xml", links=("/draft.html",))),
        ("blog.test", "/feed.xml"): (
            "application/rss+xml",
            rss(("/old.html", "Old", ""), published=calendar.now - 50),
        ),
        ("blog.test", "/old.html"): html(page("Old")),
    }


def publish_draft(files: dict, published: float) -> None:
    files[("blog.test", "/draft.html")] = html(page("Draft"))
    listed = rss(("/draft.html", "Draft", ""), ("/old.html", "Old", ""), published=published)
    files[("blog.test", "/feed.xml")] = ("application/rss+xml", listed)


@pytest.mark.trio
@pytest.mark.parametrize("dated_after", [True, False], ids=["dated after its 404", "dated before it"])
async def test_a_post_linked_before_it_was_published_is_fetched_once_its_feed_dates_it_later(
    tmp_path, dated_after
):
    after, calendar = 100.0, Calendar()
    files = draft_blog(calendar)
    web = Web(files)
    settings = CrawlSettings(**{**vars(QUIET), "revisit_after": after})
    crawler = crawler_for(web, tmp_path, settings, wall_clock=calendar)
    first = await crawl(crawler, "http://blog.test/")
    assert first.errors_by_kind == {"http_4xx": 1} and "http://blog.test/draft.html" not in stored(crawler)

    failed_at = calendar.now
    calendar.now += after + 1  # the feed falls due; it lists the post, dated after the 404 or before it
    publish_draft(files, failed_at + 10 if dated_after else failed_at - 10)
    with trio.fail_after(30):
        second = await crawler.run()
    assert second.feeds == 2  # counted since the crawler started
    asked = web.log.count(("blog.test", "/draft.html"))
    if dated_after:
        assert (asked, second.relisted) == (2, 1) and "http://blog.test/draft.html" in stored(crawler)
    else:  # what the feed lists is older than the failure: nothing new to fetch
        assert (asked, second.relisted) == (1, 0) and "http://blog.test/draft.html" not in stored(crawler)


@pytest.mark.trio
async def test_a_url_that_keeps_failing_while_its_feed_dates_it_anew_is_tried_a_bounded_number_of_times(
    tmp_path,
):
    after, calendar = 100.0, Calendar()
    files = draft_blog(calendar)
    web = Web(files)
    settings = CrawlSettings(**{**vars(QUIET), "revisit_after": after})
    crawler = crawler_for(web, tmp_path, settings, wall_clock=calendar)
    await crawl(crawler, "http://blog.test/")
    for _ in range(LISTED_RETRIES + 2):  # every reading dates the post now (a generated feed), still a 404
        calendar.now += 10 * after
        publish_draft(files, calendar.now)
        del files[("blog.test", "/draft.html")]
        with trio.fail_after(30):
            stats = await crawler.run()
    assert stats.relisted == LISTED_RETRIES  # counted since the crawler started
    assert web.log.count(("blog.test", "/draft.html")) == 1 + LISTED_RETRIES


@pytest.mark.trio
async def test_a_page_gone_on_a_revisit_comes_back_when_its_feed_dates_it_later(tmp_path):
    after, calendar = 100.0, Calendar()
    files = draft_blog(calendar)
    publish_draft(files, calendar.now - 20)
    web = Web(files)
    settings = CrawlSettings(**{**vars(QUIET), "revisit_after": after})
    crawler = crawler_for(web, tmp_path, settings, wall_clock=calendar)
    await crawl(crawler, "http://blog.test/")
    assert "http://blog.test/draft.html" in stored(crawler)

    calendar.now += after + 1  # the post is taken down: its revisit removes it
    del files[("blog.test", "/draft.html")]
    with trio.fail_after(30):
        assert (await crawler.run()).gone == 1
    assert "http://blog.test/draft.html" not in stored(crawler)

    calendar.now += 10 * after  # it is back, and the feed dates it after it went
    publish_draft(files, calendar.now - 20)
    with trio.fail_after(30):
        third = await crawler.run()
    assert third.relisted == 1 and "http://blog.test/draft.html" in stored(crawler)
