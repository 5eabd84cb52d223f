"""Cookies: a site's session cookie comes back to it, and no host grows the jar past a browser's bounds."""

from __future__ import annotations

import httpx
import pytest

from crawler.cookies import MAX_COOKIES, MAX_COOKIES_PER_HOST, bound_cookie_jar
from tests.crawler.test_fetch import HTML, SETTINGS, Site, _stream, fetch, fetcher, page, respond


def _cookie_wall(request: httpx.Request) -> httpx.Response:
    """Sets a session cookie and sends the visitor back, until it comes with the cookie."""
    if "session=ok" in request.headers.get("cookie", ""):
        return respond(200, "<p>inside</p>", HTML)
    return respond(302, headers={"location": "/in", "set-cookie": "session=ok; Path=/"})


@pytest.mark.trio
async def test_a_session_cookie_set_on_a_redirect_is_sent_back(autojump_clock):
    site = Site({"/": _cookie_wall, "/in": _cookie_wall})
    result = await fetch(site, "http://example.com/")
    assert result.ok and result.body == b"<p>inside</p>"


@pytest.mark.trio
async def test_a_page_that_sets_its_session_and_redirects_to_itself_is_no_loop(autojump_clock):
    def wall(request: httpx.Request) -> httpx.Response:
        if "session=ok" in request.headers.get("cookie", ""):
            return respond(200, "<p>inside</p>", HTML)
        return respond(302, headers={"location": "/page", "set-cookie": "session=ok; Path=/"})

    site = Site({"/page": wall})
    result = await fetch(site, "http://example.com/page")
    assert result.ok and result.body == b"<p>inside</p>"
    assert site.paths() == ["/robots.txt", "/page", "/page"]


@pytest.mark.trio
async def test_a_page_that_sets_a_cookie_and_redirects_to_itself_forever_stops_at_the_redirect_limit(
    autojump_clock,
):
    site = Site({"/page": lambda r: respond(302, headers={"location": "/page", "set-cookie": "x=1"})})
    result = await fetch(site, "http://example.com/page")
    assert result.error == "too_many_redirects"
    assert site.paths().count("/page") == SETTINGS.redirect_max_times + 1


def _flood(request: httpx.Request) -> httpx.Response:
    """A new batch of cookies with every response, as a hostile host would set them."""
    n = int(request.url.params.get("n", "0"))
    cookies = [("set-cookie", f"c{n}_{i}=v; Path=/") for i in range(30)]
    return httpx.Response(200, headers=[*HTML.items(), *cookies], content=_stream([b"<p>x</p>"]))


@pytest.mark.trio
async def test_a_host_setting_cookies_without_end_never_holds_more_than_its_share(autojump_clock):
    site = Site({"/flood": _flood, "/quiet": page("<p>q</p>", **{"set-cookie": "keep=1; Path=/"})})
    f = fetcher(site)
    try:
        await f.fetch("http://quiet.example.org/quiet")
        for n in range(20):
            await f.fetch(f"http://flood.example.org/flood?n={n}")
            held = [c for c in f._client.cookies.jar if c.domain == "flood.example.org"]
            assert len(held) <= MAX_COOKIES_PER_HOST
        kept = {c.name for c in f._client.cookies.jar if c.domain == "quiet.example.org"}
    finally:
        await f._client.aclose()
    assert kept == {"keep"}  # another host's cookie survives the flood


def test_a_jar_over_the_total_bound_is_emptied():
    jar = httpx.Cookies()
    for host in range(MAX_COOKIES // 40 + 1):
        for i in range(40):
            jar.set(f"c{i}", "v", domain=f"h{host}.example.org")
    assert len(jar.jar) > MAX_COOKIES
    dropped = bound_cookie_jar(jar.jar, "h0.example.org")
    assert dropped > MAX_COOKIES and len(jar.jar) == 0


def test_a_jar_within_bounds_is_left_alone():
    jar = httpx.Cookies()
    for i in range(MAX_COOKIES_PER_HOST):
        jar.set(f"c{i}", "v", domain="example.org")
    jar.set("other", "v", domain=".other.org")
    assert bound_cookie_jar(jar.jar, "example.org") == 0
    assert len(jar.jar) == MAX_COOKIES_PER_HOST + 1
