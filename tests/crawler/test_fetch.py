"""The fetcher against `httpx.MockTransport` servers: no network, trio's autojump clock for waiting."""

from __future__ import annotations

import contextlib
import errno
import gzip
import itertools
import socket
import struct
import zlib
from collections.abc import Callable
from dataclasses import replace
from functools import partial

import httpx
import pytest
import trio

from crawler.fetch import ERROR_KINDS, Fetcher, retry_after_seconds
from crawler.settings import CrawlSettings

SETTINGS = CrawlSettings(download_delay=0.5, autothrottle_enabled=False, download_maxsize=10_000)
HTML = {"content-type": "text/html; charset=utf-8"}


async def _stream(chunks: list[bytes], then: Exception | None = None):
    for chunk in chunks:
        yield chunk
    if then is not None:
        raise then


def respond(status: int, body: bytes | str = b"", headers: dict[str, str] | None = None) -> httpx.Response:
    """A response whose body arrives as a stream, as from a real server (bytes content is pre-read)."""
    data = body.encode() if isinstance(body, str) else body
    headers = dict(headers or {})
    headers.setdefault("content-length", str(len(data)))
    return httpx.Response(status, headers=headers, content=_stream([data]))


class Site:
    """A mock web: routes by path, robots.txt allows everything unless given, every request logged."""

    def __init__(self, routes: dict[str, Callable[[httpx.Request], object]], robots: str | int = "") -> None:
        self.routes = routes
        self.robots = robots
        self.log: list[tuple[float, str]] = []

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        self.log.append((trio.current_time(), str(request.url)))
        if request.url.path == "/robots.txt":
            if isinstance(self.robots, int):
                return respond(self.robots)
            return respond(200, self.robots, {"content-type": "text/plain"})
        route = self.routes.get(request.url.path)
        if route is None:
            return respond(404, "not here", HTML)
        result = route(request)
        if hasattr(result, "__await__"):
            result = await result
        return result

    def paths(self) -> list[str]:
        return [httpx.URL(url).path for _, url in self.log]


def page(text: str = "<html><title>t</title></html>", **headers: str) -> Callable[[httpx.Request], object]:
    return lambda request: respond(200, text, {**HTML, **headers})


def fetcher(site: Site, settings: CrawlSettings = SETTINGS) -> Fetcher:
    return Fetcher(settings, client=httpx.AsyncClient(transport=httpx.MockTransport(site)))


async def fetch(site: Site, url: str, settings: CrawlSettings = SETTINGS):
    f = fetcher(site, settings)
    try:
        return await f.fetch(url)
    finally:
        await f._client.aclose()


@pytest.mark.trio
async def test_successful_fetch_has_body_type_and_lowercased_headers(autojump_clock):
    site = Site({"/a": page("<p>hello</p>", **{"X-Thing": "1"})})
    r = await fetch(site, "HTTP://Example.com:80/a#top")
    assert r.ok and r.error is None
    assert r.status == 200
    assert r.final_url == "http://example.com/a"
    assert r.content_type == "text/html"
    assert r.headers["x-thing"] == "1"
    assert r.body == b"<p>hello</p>"
    assert site.paths() == ["/robots.txt", "/a"]


def conditional(request: httpx.Request) -> httpx.Response:
    """A page with validators: 304 to a request carrying either of them, the page otherwise."""
    if request.headers.get("if-none-match") == '"v1"' or "if-modified-since" in request.headers:
        return respond(304, headers={"etag": '"v1"'})
    return respond(200, "<p>page</p>", {**HTML, "etag": '"v1"'})


@pytest.mark.trio
@pytest.mark.parametrize(
    "validators", [{"if-none-match": '"v1"'}, {"if-modified-since": "Sat, 21 Nov 2026 10:00:00 GMT"}]
)
async def test_a_conditional_fetch_of_an_unchanged_page_is_not_modified_without_a_body(
    autojump_clock, validators
):
    f = fetcher(Site({"/a": conditional}))
    try:
        unchanged = await f.fetch("http://example.com/a", validators=validators)
        plain = await f.fetch("http://example.com/a")
    finally:
        await f._client.aclose()
    assert unchanged.not_modified and unchanged.ok and unchanged.body == b""
    assert unchanged.headers["etag"] == '"v1"'
    assert not plain.not_modified and plain.body == b"<p>page</p>"


@pytest.mark.trio
async def test_a_304_to_a_request_without_validators_is_a_protocol_error(autojump_clock):
    r = await fetch(Site({"/a": lambda request: respond(304)}), "http://example.com/a")
    assert r.error == "protocol" and not r.not_modified


@pytest.mark.trio
async def test_robots_disallowed_page_is_never_requested(autojump_clock):
    site = Site({"/private/x": page()}, robots="User-agent: *\nDisallow: /private/\n")
    r = await fetch(site, "http://example.com/private/x")
    assert r.error == "robots_disallowed"
    assert "/private/x" not in site.paths()


@pytest.mark.parametrize("status", [500, 503, 429])
@pytest.mark.trio
async def test_robots_5xx_or_429_defers_the_host_then_asks_again(autojump_clock, status):
    site = Site({"/a": page()}, robots=status)
    f = fetcher(site)
    try:
        r = await f.fetch("http://example.com/a")
        assert r.error == "robots_deferred"
        assert r.retry_at is not None and r.retry_at > trio.current_time()
        again = await f.fetch("http://example.com/a")  # still deferred: no new request
        assert again.error == "robots_deferred"
        assert site.paths() == ["/robots.txt"]
        await trio.sleep_until(r.retry_at)
        site.robots = ""
        assert (await f.fetch("http://example.com/a")).ok
        assert site.paths() == ["/robots.txt", "/robots.txt", "/a"]
    finally:
        await f._client.aclose()


@pytest.mark.parametrize("status", [401, 403, 404, 410])
@pytest.mark.trio
async def test_robots_4xx_allows_everything(autojump_clock, status):
    site = Site({"/a": page()}, robots=status)
    assert (await fetch(site, "http://example.com/a")).ok


@pytest.mark.trio
async def test_robots_not_obeyed_when_switched_off(autojump_clock):
    site = Site({"/private/x": page()}, robots="User-agent: *\nDisallow: /\n")
    settings = CrawlSettings(robotstxt_obey=False, download_delay=0.0)
    assert (await fetch(site, "http://example.com/private/x", settings)).ok
    assert site.paths() == ["/private/x"]


@pytest.mark.trio
async def test_crawl_delay_spaces_requests_to_one_host(autojump_clock):
    site = Site({"/a": page(), "/b": page(), "/c": page()}, robots="User-agent: *\nCrawl-delay: 4\n")
    f = fetcher(site)
    try:
        for path in ("/a", "/b", "/c"):
            assert (await f.fetch("http://example.com" + path)).ok
    finally:
        await f._client.aclose()
    times = [t for t, _ in site.log]
    assert min(b - a for a, b in itertools.pairwise(times)) >= 4.0  # robots.txt to the first page too


@pytest.mark.trio
async def test_crawl_delay_above_cap_is_capped(autojump_clock):
    site = Site({"/a": page()}, robots="User-agent: *\nCrawl-delay: 3600\n")
    f = fetcher(site, CrawlSettings(crawl_delay_cap=7.0, autothrottle_enabled=False))
    try:
        await f.fetch("http://example.com/a")
        assert f.politeness.gap("example.com:80") == 7.0
    finally:
        await f._client.aclose()


@pytest.mark.trio
async def test_declared_size_over_limit_is_too_large(autojump_clock):
    site = Site({"/big": page("x" * 20_000)})
    r = await fetch(site, "http://example.com/big")
    assert r.error == "too_large" and r.body == b""


@pytest.mark.trio
async def test_received_bytes_over_limit_is_too_large_without_content_length(autojump_clock):
    site = Site({"/big": lambda r: httpx.Response(200, headers=HTML, content=_stream([b"x" * 4000] * 10))})
    assert (await fetch(site, "http://example.com/big")).error == "too_large"


@pytest.mark.trio
async def test_gzip_bomb_caught_on_decompressed_bytes(autojump_clock):
    bomb = gzip.compress(b"\0" * 8_000_000)
    assert len(bomb) < SETTINGS.download_maxsize
    site = Site({"/bomb": lambda r: respond(200, bomb, {**HTML, "content-encoding": "gzip"})})
    assert (await fetch(site, "http://example.com/bomb")).error == "too_large"


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw-deflate"])
@pytest.mark.trio
async def test_compressed_bodies_decoded(autojump_clock, encoding):
    text = b"<p>compressed</p>" * 100
    if encoding == "gzip":
        body = gzip.compress(text)
    elif encoding == "deflate":
        body = zlib.compress(text)
    else:
        squeeze = zlib.compressobj(wbits=-zlib.MAX_WBITS)
        body = squeeze.compress(text) + squeeze.flush()
    header = encoding.removeprefix("raw-")
    site = Site({"/z": lambda r: respond(200, body, {**HTML, "content-encoding": header})})
    r = await fetch(site, "http://example.com/z")
    assert r.ok and r.body == text


@pytest.mark.trio
async def test_gzip_stream_cut_short_is_truncated(autojump_clock):
    cut = gzip.compress(b"<p>a</p>" * 500)[:-30]
    site = Site({"/t": lambda r: respond(200, cut, {**HTML, "content-encoding": "gzip"})})
    assert (await fetch(site, "http://example.com/t")).error == "truncated"


@pytest.mark.trio
async def test_connection_closed_mid_body_is_truncated(autojump_clock):
    broken = httpx.RemoteProtocolError("peer closed connection without sending complete message body")
    site = Site({"/t": lambda r: httpx.Response(200, headers=HTML, content=_stream([b"<p>a"], broken))})
    assert (await fetch(site, "http://example.com/t")).error == "truncated"


@pytest.mark.trio
async def test_garbage_compressed_body_is_decode_error(autojump_clock):
    site = Site({"/g": lambda r: respond(200, b"notgzip!", {**HTML, "content-encoding": "gzip"})})
    assert (await fetch(site, "http://example.com/g")).error == "decode"


@pytest.mark.trio
async def test_wrong_content_type_is_bad_mime(autojump_clock):
    site = Site({"/img": lambda r: respond(200, b"\x89PNG", {"content-type": "image/png"})})
    r = await fetch(site, "http://example.com/img")
    assert r.error == "bad_mime" and r.body == b""


@pytest.mark.trio
async def test_redirect_followed_and_recorded(autojump_clock):
    site = Site({"/old": lambda r: respond(301, headers={"location": "/new"}), "/new": page("new")})
    r = await fetch(site, "http://example.com/old")
    assert r.ok and r.body == b"new"
    assert r.final_url == "http://example.com/new"
    assert r.redirects == ("http://example.com/new",)


@pytest.mark.trio
async def test_redirect_loop_detected(autojump_clock):
    site = Site(
        {
            "/a": lambda r: respond(302, headers={"location": "/b"}),
            "/b": lambda r: respond(302, headers={"location": "/a"}),
        }
    )
    r = await fetch(site, "http://example.com/a")
    assert r.error == "redirect_loop"
    assert site.paths().count("/a") == 1


@pytest.mark.trio
async def test_redirect_chain_longer_than_limit_fails(autojump_clock):
    def hop(request: httpx.Request) -> httpx.Response:
        n = int(request.url.params["n"])
        return respond(302, headers={"location": f"/r?n={n + 1}"})

    site = Site({"/r": hop})
    r = await fetch(site, "http://example.com/r?n=0", CrawlSettings(redirect_max_times=3, download_delay=0))
    assert r.error == "too_many_redirects"
    assert len(r.redirects) == 3


@pytest.mark.trio
async def test_every_redirect_hop_rechecked_against_robots_and_url_limits(autojump_clock):
    site = Site(
        {
            "/in": lambda r: respond(302, headers={"location": "/private/x"}),
            "/ftp": lambda r: respond(302, headers={"location": "ftp://example.com/f"}),
            "/private/x": page(),
        },
        robots="User-agent: *\nDisallow: /private/\n",
    )
    f = fetcher(site)
    try:
        assert (await f.fetch("http://example.com/in")).error == "robots_disallowed"
        assert (await f.fetch("http://example.com/ftp")).error == "invalid_url"
    finally:
        await f._client.aclose()
    assert "/private/x" not in site.paths()


@pytest.mark.trio
async def test_5xx_retried_with_exponential_backoff(autojump_clock):
    answers = iter([503, 502, 200])
    site = Site({"/flaky": lambda r: respond(next(answers), "ok", HTML)})
    r = await fetch(site, "http://example.com/flaky")
    assert r.ok
    times = [t for t, path in site.log if path.endswith("/flaky")]
    assert len(times) == 3
    assert times[1] - times[0] >= SETTINGS.retry_backoff_base
    assert times[2] - times[1] >= 2 * SETTINGS.retry_backoff_base


@pytest.mark.trio
async def test_persistent_5xx_reported_and_host_then_skipped(autojump_clock):
    site = Site({"/down": lambda r: respond(500, "", HTML)})
    f = fetcher(site)
    try:
        r = await f.fetch("http://example.com/down")
        assert r.error == "http_5xx" and r.status == 500
        assert f.politeness.state("example.com:80") == "bad"
        requests_before = len(site.log)
        assert (await f.fetch("http://example.com/other")).error == "host_bad"
        assert len(site.log) == requests_before
    finally:
        await f._client.aclose()


@pytest.mark.trio
async def test_a_host_turning_bad_between_retries_reports_how_the_requests_failed(autojump_clock):
    site = Site({"/down": lambda r: respond(500, "", HTML)})
    fragile = replace(SETTINGS, retry_times=3, host_bad_after_failures=2)
    r = await fetch(site, "http://example.com/down", fragile)
    # host_bad says that no request of the URL's was sent (its link waits for free); two were
    assert r.error == "http_5xx" and site.paths().count("/down") == 2


@pytest.mark.trio
async def test_a_short_retry_after_is_waited_before_the_retry(autojump_clock):
    answers = iter([(503, {"retry-after": "7"}), (200, {})])

    def answer(request):
        status, headers = next(answers)
        return respond(status, "ok", {**HTML, **headers})

    site = Site({"/busy": answer})
    r = await fetch(site, "http://example.com/busy")
    times = [t for t, path in site.log if path.endswith("/busy")]
    assert r.ok and times[1] - times[0] >= 7.0  # not the 1 s back-off of its own


@pytest.mark.trio
@pytest.mark.parametrize("retry_after", ["3600", "Wed, 21 Oct 2099 07:28:00 GMT"])
async def test_a_long_retry_after_makes_the_host_wait_that_long_without_retrying(autojump_clock, retry_after):
    site = Site({"/maintenance": lambda r: respond(503, "back soon", {**HTML, "retry-after": retry_after})})
    f = fetcher(site)
    try:
        r = await f.fetch("http://example.com/maintenance")
        record = f.politeness.record_of("example.com:80")
    finally:
        await f._client.aclose()
    assert r.error == "http_5xx" and site.paths().count("/maintenance") == 1
    assert record.state == "bad" and record.retry_in >= min(3600.0, 86_400.0) - 1


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120.0),
        (" 5 ", 5.0),
        ("Thu, 01 Jan 1970 00:02:00 GMT", 60.0),
        ("Thu, 01 Jan 1970 00:00:30 GMT", 0.0),  # a date passed: no wait
        ("soon", None),
        ("-3", None),
        ("", None),
        (None, None),
    ],
)
def test_retry_after_is_read_as_seconds_or_an_http_date(value, seconds):
    assert retry_after_seconds(value, now=60.0) == seconds


@pytest.mark.trio
async def test_each_x_robots_tag_header_is_kept_on_its_own_line(autojump_clock):
    headers = [
        ("content-type", "text/html"),
        ("x-robots-tag", "otherbot: noindex"),
        ("x-robots-tag", "nofollow"),
    ]
    body = b"<html><title>t</title></html>"
    site = Site({"/p": lambda r: httpx.Response(200, headers=headers, content=_stream([body]))})
    r = await fetch(site, "http://example.com/p")
    assert r.ok and r.headers["x-robots-tag"] == "otherbot: noindex\nnofollow"


@pytest.mark.trio
async def test_404_not_retried(autojump_clock):
    site = Site({})
    r = await fetch(site, "http://example.com/missing")
    assert r.error == "http_4xx" and r.status == 404
    assert site.paths().count("/missing") == 1


@pytest.mark.trio
async def test_slow_server_times_out(autojump_clock):
    async def slow(request: httpx.Request) -> httpx.Response:
        await trio.sleep(SETTINGS.download_timeout * 3)
        return respond(200, "late", HTML)

    site = Site({"/slow": slow})
    settings = CrawlSettings(download_delay=0.5, autothrottle_enabled=False, retry_times=0)
    assert (await fetch(site, "http://example.com/slow", settings)).error == "timeout"


@pytest.mark.parametrize(
    ("exception", "kind"),
    [
        (httpx.ConnectError("refused"), "connect"),
        (httpx.ReadError("connection reset by peer"), "reset"),
        (httpx.RemoteProtocolError("server disconnected without sending a response"), "reset"),
        (httpx.ReadTimeout("read timed out"), "timeout"),
    ],
)
@pytest.mark.trio
async def test_network_faults_classified_never_raised(autojump_clock, exception, kind):
    def fail(request: httpx.Request) -> httpx.Response:
        raise exception

    r = await fetch(Site({"/x": fail}), "http://example.com/x")
    assert r.error == kind
    assert r.error in ERROR_KINDS and r.status == 0 and r.body == b""


def out_of_descriptors() -> httpx.ConnectError:
    """What httpx raises when the node's process is at its file descriptor limit."""
    try:
        raise OSError(errno.EMFILE, "Too many open files")
    except OSError as cause:
        try:
            raise httpx.ConnectError("[Errno 24] Too many open files") from cause
        except httpx.ConnectError as exc:
            return exc


@pytest.mark.trio
async def test_running_out_of_descriptors_is_the_nodes_own_failure_and_never_the_hosts(autojump_clock):
    def fail(request: httpx.Request) -> httpx.Response:
        raise out_of_descriptors()

    settings = CrawlSettings(download_delay=0.5, autothrottle_enabled=False, retry_times=0)
    async with Fetcher(
        settings, client=httpx.AsyncClient(transport=httpx.MockTransport(Site({"/x": fail})))
    ) as f:
        for _ in range(settings.host_bad_after_failures + 2):
            assert (await f.fetch("http://example.com/x")).error == "local_resources"
        assert str(f.politeness.state("example.com:80")) != "bad"


@pytest.mark.trio
async def test_a_robots_txt_the_node_had_no_socket_for_defers_its_urls_as_the_nodes_failure(autojump_clock):
    async def robots_fails(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/robots.txt":
            raise out_of_descriptors()
        return respond(200, "<title>t</title>", HTML)

    async with Fetcher(SETTINGS, client=httpx.AsyncClient(transport=httpx.MockTransport(robots_fails))) as f:
        first = await f.fetch("http://example.com/x")
        assert first.error == "local_resources" and first.retry_at is not None


@pytest.mark.parametrize("url", ["ftp://example.com/", "not a url", "http://" + "a" * 300 + ".com/"])
@pytest.mark.trio
async def test_invalid_urls_rejected_without_request(autojump_clock, url):
    site = Site({})
    assert (await fetch(site, url)).error == "invalid_url"
    assert site.log == []


@pytest.mark.trio
async def test_concurrent_fetches_share_one_robots_request(autojump_clock):
    site = Site({f"/{i}": page() for i in range(6)})
    f = fetcher(site, CrawlSettings(download_delay=0.1, autothrottle_enabled=False))
    try:
        async with trio.open_nursery() as nursery:
            for i in range(6):
                nursery.start_soon(f.fetch, f"http://example.com/{i}")
    finally:
        await f._client.aclose()
    assert site.paths().count("/robots.txt") == 1
    assert len(site.log) == 7


# Loopback tests: the same faults over real sockets, where httpx's streams and errors are the real ones.
async def _raw_server(stream: trio.SocketStream) -> None:
    request = b""
    while b"\r\n\r\n" not in request:
        data = await stream.receive_some(4096)
        if not data:
            return
        request += data
    path = request.split(b" ", 2)[1]
    if path == b"/robots.txt":
        await stream.send_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
    elif path == b"/endless":
        await stream.send_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ntransfer-encoding: chunked\r\n\r\n"
        )
        chunk = b"x" * 8192
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            while True:
                await stream.send_all(b"%x\r\n%s\r\n" % (len(chunk), chunk))
    elif path == b"/bomb":
        body = gzip.compress(b"\0" * 4_000_000)
        head = "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-encoding: gzip\r\n"
        head += f"content-length: {len(body)}"
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await stream.send_all(head.encode() + b"\r\n\r\n" + body)
    elif path == b"/short":
        await stream.send_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 1000\r\n\r\n<p>only"
        )
    elif path == b"/slow":
        await trio.sleep(5)
    elif path == b"/reset":
        stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    await stream.aclose()


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/endless", "too_large"),
        ("/bomb", "too_large"),
        ("/short", "truncated"),
        ("/reset", "reset"),
        ("/slow", "timeout"),
    ],
)
@pytest.mark.trio
async def test_faults_over_loopback_sockets(path, kind):
    settings = CrawlSettings(
        download_delay=0.0,
        autothrottle_enabled=False,
        retry_times=0,
        download_maxsize=100_000,
        download_timeout=0.5,
    )
    with trio.fail_after(20):  # hang guard
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(partial(trio.serve_tcp, _raw_server, 0, host="127.0.0.1"))
            port = listeners[0].socket.getsockname()[1]
            async with Fetcher(settings) as f:
                r = await f.fetch(f"http://127.0.0.1:{port}{path}")
            nursery.cancel_scope.cancel()
    assert r.error == kind


@pytest.mark.trio
async def test_binary_served_as_html_is_rejected(autojump_clock):
    junk = bytes(range(256)) * 8
    site = Site({"/junk": lambda r: respond(200, junk, HTML)})
    assert (await fetch(site, "http://example.com/junk")).error == "binary"


@pytest.mark.trio
@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("\ufeff<p>caf\u00e9</p>".encode("utf-16-le"), "text/html"),  # its byte-order mark says so
        ("<p>caf\u00e9</p>".encode("utf-16-le"), "text/html; charset=UTF-16LE"),  # its header says so
    ],
    ids=["bom", "header"],
)
async def test_utf16_text_is_not_taken_for_binary_for_its_zero_bytes(autojump_clock, body, content_type):
    site = Site({"/page": lambda r: respond(200, body, {"content-type": content_type})})
    result = await fetch(site, "http://example.com/page")
    assert result.ok and result.body == body


@pytest.mark.trio
async def test_a_pdf_is_fetched_whole_up_to_its_own_size_limit(autojump_clock):
    from tests.pdf_samples import make_pdf

    body = make_pdf(["x" * 100] * 200)
    assert SETTINGS.download_maxsize < len(body)
    site = Site({"/paper.pdf": lambda r: respond(200, body, {"content-type": "application/pdf"})})
    r = await fetch(site, "http://example.com/paper.pdf")
    assert r.error is None and r.body == body and r.content_type == "application/pdf"
    tight = CrawlSettings(**{**vars(SETTINGS), "download_maxsize_pdf": len(body) - 1})
    assert (await fetch(site, "http://example.com/paper.pdf", tight)).error == "too_large"


@pytest.mark.trio
async def test_an_unlabelled_pdf_is_known_by_its_signature_and_refused_if_pdfs_are_unwanted(autojump_clock):
    from tests.pdf_samples import make_pdf

    body = make_pdf(["unlabelled"])
    site = Site({"/doc": lambda r: respond(200, body, {})})
    assert (await fetch(site, "http://example.com/doc")).body == body
    html_only = CrawlSettings(**{**vars(SETTINGS), "allowed_mime_types": ("text/html",)})
    assert (await fetch(site, "http://example.com/doc", html_only)).error == "bad_mime"
    labelled = Site({"/doc": lambda r: respond(200, body, {"content-type": "application/pdf"})})
    assert (await fetch(labelled, "http://example.com/doc", html_only)).error == "bad_mime"
