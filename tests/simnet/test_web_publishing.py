"""A simulated web that publishes: held pages answer 404 and no page links to them until published; then
the pages that had links to them have them again, the feed lists them first and the sitemap lists them."""

from __future__ import annotations

import httpx
import pytest

from crawler.feeds import parse_feed
from crawler.parse import parse_html
from crawler.sitemaps import parse_sitemap
from simnet.web import load_web, serve_web
from simnet.web.publishing import Publishing
from simnet.web.server import page_url, site_pages

PUBLISHED_AT = 1_900_000_000.0  # the calendar's time when pages are published, after every file's mtime


@pytest.fixture
def fixture_web():
    return load_web("fixture")


def site_of(url: str) -> str | None:
    return "docs" if url.startswith("http://docs.test/") else None


def test_links_to_held_pages_are_taken_out_with_their_words():
    publishing = Publishing({"docs": ["guide/intro.html", "faq/index.html"]})
    body = (
        b"<p><a href=\"intro.html\">Intro</a> <A class=x HREF='/guide/intro.html#top'>again <b>and</b></A>"
        b' <a href="../faq/">FAQ</a> <a href="other.html">Other</a> <a name="here">Here</a>'
        b' <a href="http://elsewhere.test/guide/intro.html">Elsewhere</a>'
        b' <a href="int&#114;o.html">Coded</a> <a href="/faq">FAQ by its folder</a></p>'
    )
    served = publishing.without_held_links(body, "http://docs.test/guide/page.html", site_of)
    assert served == (
        b'<p>   <a href="other.html">Other</a> <a name="here">Here</a>'
        b' <a href="http://elsewhere.test/guide/intro.html">Elsewhere</a>  </p>'
    )
    publishing.publish_next()
    served = publishing.without_held_links(body, "http://docs.test/guide/page.html", site_of)
    assert b'<a href="intro.html">Intro</a>' in served and b"FAQ" not in served


def test_anchors_left_open_are_taken_out_one_by_one():
    """Old HTML leaves anchors open: each is one link, closed where the next anchor opens. Read up to the
    next end tag, a held link hid behind an open anchor before it, or took that anchor's link along."""
    publishing = Publishing({"docs": ["guide/intro.html"]})
    page = "http://docs.test/guide/page.html"
    body = b'<li><a href="other.html">Other\n<li><a href="intro.html">Intro</a>\n<li><a href="last.html">Last'
    assert publishing.without_held_links(body, page, site_of) == (
        b'<li><a href="other.html">Other\n<li>\n<li><a href="last.html">Last'
    )
    body = b'<li><a href="intro.html">Intro\n<li><a href="other.html">Other</a>'
    served = publishing.without_held_links(body, page, site_of)
    assert served == b'<li>Intro\n<li><a href="other.html">Other</a>'
    served = parse_html(served, page)
    assert [link.url for link in served.links] == ["http://docs.test/guide/other.html"]


def test_a_meta_refresh_to_a_held_page_is_taken_out():
    publishing = Publishing({"docs": ["guide/intro.html"]})
    page = "http://docs.test/guide/page.html"
    held = b'<meta http-equiv="Refresh" content="0; URL=http://docs.test/guide/intro.html">'
    other = b"<META CONTENT='5;url=other.html' HTTP-EQUIV=refresh>"
    body = b"<head>" + held + other + b'<meta name="url=intro.html"></head>'
    served = publishing.without_held_links(body, page, site_of)
    assert served == b"<head>" + other + b'<meta name="url=intro.html"></head>'
    assert parse_html(served, page).meta_refresh == "http://docs.test/guide/other.html"


def test_each_site_publishes_its_held_pages_oldest_first_one_per_call(fixture_web):
    moments = iter([10.0, 20.0])
    publishing = Publishing.newest(fixture_web, 2, clock=lambda: next(moments))
    assert publishing.waiting == 2 * len(fixture_web.sites)
    for site in fixture_web.sites:
        assert not publishing.is_held(site.name, site.entry)
    first = publishing.publish_next()
    second = publishing.publish_next()
    assert len(first) == len(second) == len(fixture_web.sites) and publishing.waiting == 0
    assert publishing.publish_next() == []
    site = fixture_web.sites[0]
    (_, older), (_, newer) = (
        next(p for p in first if p[0] == site.name),
        next(p for p in second if p[0] == site.name),
    )
    listed = publishing.listed(site.name, site_pages(site.root))
    assert dict(listed)[older] == 10.0 and dict(listed)[newer] == 20.0


async def linkers_of(client: httpx.AsyncClient, web, site, target: str) -> list[str]:
    """The URLs of the site's pages that, as served now, link to `target`."""
    linkers = []
    for relative, _ in site_pages(site.root):
        url = page_url(web.base_url(site), relative)
        response = await client.get(url)
        if response.status_code != 200 or response.headers.get("content-type") != "text/html":
            continue
        if target in {link.url for link in parse_html(response.content, url).links}:
            linkers.append(url)
    return linkers


@pytest.mark.trio
async def test_a_page_appears_when_published_in_its_linkers_feed_and_sitemap(fixture_web):
    site = fixture_web.site("python")
    async with serve_web(fixture_web) as static, httpx.AsyncClient() as client:
        plan = Publishing.newest(fixture_web, 6)
        relative = next(r for s, r in plan.publish_next() if s == site.name)
        before_url = page_url(static.base_url(site), relative)
        linked_from = await linkers_of(client, static, site, before_url)
    assert linked_from, "the fixture's held page is linked from some page (else the test shows nothing)"
    publishing = Publishing.newest(fixture_web, 6, clock=lambda: PUBLISHED_AT)
    async with (
        serve_web(fixture_web, sitemaps=True, feeds=True, publishing=publishing) as web,
        httpx.AsyncClient() as client,
    ):
        base = web.base_url(site)
        url = page_url(base, relative)
        assert (await client.get(url)).status_code == 404
        assert await linkers_of(client, web, site, url) == []
        served = [u.replace(static.base_url(site), base) for u in linked_from]
        served = [u for u in served if (await client.get(u)).status_code == 200]  # held ones 404 too
        assert served, "a page linking to it is served (else the test shows nothing)"
        etag = (await client.get(served[0])).headers["etag"]
        feed = parse_feed((await client.get(base + "/feed.xml")).content, base + "/feed.xml")
        sitemap = parse_sitemap((await client.get(base + "/sitemap.xml")).content, base + "/sitemap.xml")
        assert url not in {e.url for e in feed.entries} and url not in {e.url for e in sitemap.entries}

        assert url in web.publish_next()
        assert (await client.get(url)).status_code == 200
        assert await linkers_of(client, web, site, url) == served
        assert (await client.get(served[0])).headers["etag"] != etag  # a revisit sees the page changed
        feed = parse_feed((await client.get(base + "/feed.xml")).content, base + "/feed.xml")
        assert feed.entries[0].url == url and feed.entries[0].lastmod == PUBLISHED_AT
        sitemap = parse_sitemap((await client.get(base + "/sitemap.xml")).content, base + "/sitemap.xml")
        assert url in {e.url for e in sitemap.entries}
