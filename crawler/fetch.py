"""The fetcher: one polite, bounded GET per call, every fault turned into an error kind.

`Fetcher.fetch(url)` normalises the URL, asks robots.txt, waits for a politeness slot, streams the body
while counting *decompressed* bytes (so a gzip bomb stops at `download_maxsize`), follows redirects by
hand (each hop checked again against URL limits, robots and politeness, loops detected) and retries
timeouts, resets and 5xx with exponential back-off. It never raises for network or server faults.
"""

from __future__ import annotations

import contextlib
import errno
import re
import time
import zlib
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from datetime import UTC
from email.utils import parsedate_to_datetime
from functools import partial
from urllib.parse import urlsplit

import httpx
import trio

from crawler.charsets import may_hold_zero_bytes
from crawler.cookies import bound_cookie_jar
from crawler.errors import HostBadError
from crawler.feeds import MAX_BYTES as FEED_MAX_BYTES
from crawler.feeds import is_feed_type
from crawler.parse import PDF_TYPE, is_pdf
from crawler.politeness import HOST_FAILURE_KINDS, UNANSWERED_KINDS, Grant, HostState, Politeness
from crawler.proxies import proxy_resolver
from crawler.robots import RobotsCache, RobotsResponse
from crawler.settings import CrawlSettings
from crawler.sitemaps import MAX_BYTES as SITEMAP_MAX_BYTES
from crawler.sitemaps import is_gzip, may_be_sitemap
from crawler.transport import PerHostTransport
from crawler.urls import host_of, normalize_url

ERROR_KINDS = (
    "timeout",  # no complete answer within download_timeout
    "connect",  # connection refused or unreachable
    "reset",  # connection dropped before or while answering
    "http_4xx",
    "http_429",  # too many requests: backed off like a 5xx
    "http_5xx",
    "too_large",  # Content-Length or decompressed bytes over download_maxsize
    "bad_mime",  # content type not in allowed_mime_types
    "binary",  # declared as text but starts with binary data bytes (WHATWG MIME sniffing)
    "truncated",  # body shorter than announced, or compressed stream cut short
    "redirect_loop",
    "too_many_redirects",
    "robots_disallowed",
    "robots_deferred",  # robots.txt answered 5xx/429 or not at all: requeue after FetchResult.retry_at
    "host_bad",  # the host failed too often and is skipped
    "invalid_url",
    "decode",  # undecodable content encoding
    "protocol",  # an answer HTTP cannot make sense of (e.g. a redirect without Location)
    "local_resources",  # this machine ran out of sockets, file descriptors or buffers: not the host's fault
)
LOCAL_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
RETRYABLE_KINDS = frozenset({"timeout", "connect", "reset", "http_5xx", "http_429", "truncated"})
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
ROBOTS_MAX_REDIRECTS = 5  # RFC 9309 2.3.1.2
_ERROR_BODY_BYTES = 65_536  # error pages are read (and dropped) up to this, to keep the connection alive


def out_of_local_resources(exc: BaseException) -> bool:
    """Whether `exc` (or an error it was raised from) is this machine running out of file descriptors,
    sockets or buffers. Counted as the host's connect failures, a node at its descriptor limit (a local
    process had opened hundreds of idle connections to its API) marked two sites bad and failed 509 of
    their queued URLs."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in LOCAL_ERRNOS:
            return True
        current = current.__cause__ or current.__context__
    return False


def retry_after_seconds(value: str | None, now: float) -> float | None:
    """The wait a Retry-After header asks for (delay-seconds or an HTTP-date, RFC 9110 10.2.3), from the
    wall clock `now`; None when there is none or it cannot be read."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP-date is GMT; a zone-less one is read as such
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now)


@dataclass(frozen=True)
class FetchResult:
    url: str
    final_url: str
    status: int  # 0 when no response
    content_type: str  # MIME type without parameters, lowercased
    headers: dict[str, str]  # lowercased names
    body: bytes  # decompressed; empty on error
    elapsed: float
    error: str | None  # one of ERROR_KINDS, None on success
    redirects: tuple[str, ...] = ()
    retry_at: float | None = None  # for "robots_deferred": clock time after which to try again

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def not_modified(self) -> bool:
        """A conditional fetch's answer that the page is as the validators describe it (304, no body)."""
        return self.error is None and self.status == 304


@dataclass(frozen=True)
class _Answer:
    """One HTTP exchange (no redirects followed)."""

    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = ""
    body: bytes = b""
    error: str | None = None
    latency: float = -1.0


class _UnsupportedEncoding(Exception):
    pass


class _Inflater:
    """Content decoding under our control, so the output size is bounded chunk by chunk."""

    def __init__(self, encoding: str) -> None:
        self._raw_deflate_tried = False
        if encoding in ("", "identity"):
            self._z = None
        elif encoding in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif encoding == "deflate":
            self._z = zlib.decompressobj()
        else:
            raise _UnsupportedEncoding(encoding)
        self._started = False

    def feed(self, data: bytes, room: int) -> bytes:
        """Up to room + 1 decoded bytes of `data` (one more than fits tells the caller it overflowed)."""
        if self._z is None:
            return data
        try:
            out = self._z.decompress(data, room + 1)
        except zlib.error:
            if self._started or self._raw_deflate_tried or self._z.eof:
                raise
            self._raw_deflate_tried = True  # some servers send raw deflate without the zlib header
            self._z = zlib.decompressobj(-zlib.MAX_WBITS)
            out = self._z.decompress(data, room + 1)
        self._started = True
        return out

    def complete(self) -> bool:
        return self._z is None or self._z.eof or not self._started


class Fetcher:
    """Fetches URLs politely; owns the robots cache. Use one per crawl and `aclose()` it."""

    def __init__(
        self,
        settings: CrawlSettings,
        politeness: Politeness | None = None,
        client: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = trio.current_time,
    ) -> None:
        self.settings = settings
        self.politeness = politeness or Politeness(settings, clock=clock)
        self._clock = clock
        self._owns_client = client is None
        self._client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(settings.download_timeout),
            # A pool per host, uncapped: the limiter and politeness bound requests, and a request waiting
            # for a pooled connection after its politeness slot was granted would leave late and bunch up
            # with the next one. One shared pool re-examined every connection of every host per request.
            transport=PerHostTransport(
                keepalive_per_host=settings.concurrent_requests_per_domain,
                max_hosts=2 * settings.concurrent_requests,
                proxy_for=proxy_resolver(settings.proxy),
            ),
            follow_redirects=False,
            trust_env=False,
        )
        self._headers = {
            "user-agent": settings.user_agent,
            "accept": "text/html,application/xhtml+xml;q=0.9,text/plain;q=0.8,application/pdf;q=0.7,"
            "*/*;q=0.1",
            "accept-encoding": "gzip, deflate",
        }
        self._allowed_mime = frozenset(m.lower() for m in settings.allowed_mime_types)
        self._sitemaps = settings.sitemaps_enabled
        self._feeds = settings.feeds_enabled
        self._limiter = trio.CapacityLimiter(settings.concurrent_requests)
        self.robots = RobotsCache(
            settings, self._fetch_robots, on_crawl_delay=self.politeness.set_crawl_delay, clock=clock
        )

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> Fetcher:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def fetch(self, url: str, validators: Mapping[str, str] | None = None) -> FetchResult:
        """GET `url`; with `validators` (If-None-Match, If-Modified-Since) an unchanged page answers
        `not_modified` instead of its body."""
        started = self._clock()
        current = normalize_url(url, settings=self.settings)
        if current is None:
            return self._failure(url, url, "invalid_url", started)
        redirects: list[str] = []
        seen = {current}
        while True:
            if self.politeness.state(host_of(current)) is HostState.BAD:
                return self._failure(url, current, "host_bad", started, redirects)
            decision = await self.robots.check(current)
            if decision.verdict == "disallow":
                return self._failure(url, current, "robots_disallowed", started, redirects)
            if decision.verdict == "defer":
                kind = "local_resources" if decision.local else "robots_deferred"
                return self._failure(url, current, kind, started, redirects, decision.retry_at)
            answer = await self._get_with_retries(
                current, self.settings.download_maxsize, check_mime=True, headers=validators
            )
            if answer.status in REDIRECT_STATUSES and answer.error is None:
                location = answer.headers.get("location")
                target = normalize_url(location, base=current, settings=self.settings) if location else None
                if target is None:
                    kind = "invalid_url" if location else "protocol"
                    return self._failure(url, current, kind, started, redirects, status=answer.status)
                # Back to a URL already asked is a loop, unless the answer set a cookie: a cookie wall
                # sends a visitor back to the same page with its session (redirect_max_times still holds).
                if target in seen and "set-cookie" not in answer.headers:
                    return self._failure(
                        url, target, "redirect_loop", started, redirects, status=answer.status
                    )
                if len(redirects) >= self.settings.redirect_max_times:
                    return self._failure(
                        url, target, "too_many_redirects", started, redirects, status=answer.status
                    )
                seen.add(target)
                redirects.append(target)
                current = target
                continue
            if answer.error is not None:
                return self._failure(url, current, answer.error, started, redirects, status=answer.status)
            return FetchResult(
                url=url,
                final_url=current,
                status=answer.status,
                content_type=answer.content_type,
                headers=answer.headers,
                body=answer.body,
                elapsed=self._clock() - started,
                error=None,
                redirects=tuple(redirects),
            )

    def _failure(
        self,
        url: str,
        final_url: str,
        kind: str,
        started: float,
        redirects: list[str] | None = None,
        retry_at: float | None = None,
        status: int = 0,
    ) -> FetchResult:
        return FetchResult(
            url=url,
            final_url=final_url,
            status=status,
            content_type="",
            headers={},
            body=b"",
            elapsed=self._clock() - started,
            error=kind,
            redirects=tuple(redirects or ()),
            retry_at=retry_at,
        )

    async def _get_with_retries(
        self,
        url: str,
        maxsize: int,
        check_mime: bool,
        truncate_ok: bool = False,
        headers: Mapping[str, str] | None = None,
        retry_kinds: frozenset[str] = RETRYABLE_KINDS,
    ) -> _Answer:
        attempts = self.settings.retry_times + 1
        failed: _Answer | None = None
        for attempt in range(attempts):
            try:
                answer = await self._request(url, maxsize, check_mime, truncate_ok, headers)
            except HostBadError:  # host_bad: no request of this URL's was sent, else how the last failed
                return failed or _Answer(error="host_bad")
            if answer.error not in retry_kinds or attempt == attempts - 1:
                return answer
            failed = answer
        raise AssertionError("unreachable")  # pragma: no cover

    async def _request(
        self, url: str, maxsize: int, check_mime: bool, truncate_ok: bool, headers: Mapping[str, str] | None
    ) -> _Answer:
        host = host_of(url)
        async with self._limiter, self.politeness.slot(host) as grant:
            started = self._clock()
            answer = await self._exchange(url, maxsize, check_mime, truncate_ok, started, grant, headers)
        bound_cookie_jar(self._client.cookies.jar, urlsplit(url).hostname or "")
        host_failed = answer.error in HOST_FAILURE_KINDS
        asked = retry_after_seconds(answer.headers.get("retry-after"), time.time()) if host_failed else None
        self.politeness.record(host, answer.latency, not host_failed, answer.error, answer.status, asked)
        return answer

    async def _exchange(
        self,
        url: str,
        maxsize: int,
        check_mime: bool,
        truncate_ok: bool,
        started: float,
        grant: Grant,
        headers: Mapping[str, str] | None,
    ) -> _Answer:
        response: httpx.Response | None = None
        latency = -1.0
        try:
            with trio.fail_after(self.settings.download_timeout):
                trace = partial(self._trace, host_of(url), grant)
                request = self._client.build_request(
                    "GET", url, headers={**self._headers, **(headers or {})}, extensions={"trace": trace}
                )
                response = await self._client.send(request, stream=True)
                try:
                    latency = self._clock() - started
                    return await self._read(response, maxsize, check_mime, truncate_ok, latency)
                finally:
                    await response.aclose()
        except (trio.TooSlowError, httpx.TimeoutException):
            kind = "timeout"
        except httpx.ConnectError as exc:
            kind = "local_resources" if out_of_local_resources(exc) else "connect"
        except httpx.RemoteProtocolError:
            kind = "reset" if response is None else "truncated"
        except (httpx.ReadError, httpx.WriteError, httpx.CloseError):
            kind = "reset"
        except (httpx.DecodingError, zlib.error, _UnsupportedEncoding):
            kind = "decode"
        except (httpx.UnsupportedProtocol, httpx.InvalidURL):
            kind = "invalid_url"
        except (httpx.HTTPError, OSError) as exc:
            if out_of_local_resources(exc):
                kind = "local_resources"
            else:
                kind = "protocol" if response is not None else "connect"
        status = response.status_code if response is not None else 0
        return _Answer(status=status, error=kind, latency=latency)

    async def _trace(self, host: str, grant: Grant, event: str, info: dict) -> None:
        """httpcore's trace hook: space the host's next request from when this one really went out."""
        if event == "http11.send_request_headers.complete":
            self.politeness.mark_sent(host, grant)

    async def _read(
        self, response: httpx.Response, maxsize: int, check_mime: bool, truncate_ok: bool, latency: float
    ) -> _Answer:
        status = response.status_code
        headers = dict(response.headers.items())
        if "x-robots-tag" in headers:  # one line per header: a crawler named in one does not reach the next
            headers["x-robots-tag"] = "\n".join(response.headers.get_list("x-robots-tag"))
        content_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if status == 304 and _is_conditional(response.request):
            return _Answer(status, headers, content_type, latency=latency)  # not modified: no body
        if not 200 <= status < 300:
            if status not in REDIRECT_STATUSES:
                await self._drain(response)  # small error pages: keep the connection reusable
            return _Answer(status, headers, content_type, error=_status_error(status), latency=latency)
        sitemap = check_mime and self._may_be_sitemap(content_type, response.request.url.path)
        feed = check_mime and self._feeds and is_feed_type(content_type)
        if check_mime and content_type and content_type not in self._allowed_mime and not (sitemap or feed):
            return _Answer(status, headers, content_type, error="bad_mime", latency=latency)
        if check_mime and content_type == PDF_TYPE:
            maxsize = max(maxsize, self.settings.download_maxsize_pdf)
        if sitemap:
            maxsize = max(maxsize, SITEMAP_MAX_BYTES)
        elif feed:
            maxsize = max(maxsize, FEED_MAX_BYTES)
        declared = headers.get("content-length", "")
        if not truncate_ok and declared.isdigit() and int(declared) > maxsize:
            return _Answer(status, headers, content_type, error="too_large", latency=latency)
        inflater = _Inflater(headers.get("content-encoding", "").strip().lower())
        chunks: list[bytes] = []
        total = 0
        async with aclosing(response.aiter_raw()) as raw_chunks:
            async for raw in raw_chunks:
                try:
                    data = inflater.feed(raw, maxsize - total)
                except zlib.error:
                    await _abandon(response, raw_chunks)
                    return _Answer(status, headers, content_type, error="decode", latency=latency)
                total += len(data)
                if total > maxsize:
                    await _abandon(response, raw_chunks)
                    if not truncate_ok:
                        return _Answer(status, headers, content_type, error="too_large", latency=latency)
                    chunks.append(data[: len(data) - (total - maxsize)])
                    break
                chunks.append(data)
            else:
                if not inflater.complete():
                    return _Answer(status, headers, content_type, error="truncated", latency=latency)
        body = b"".join(chunks)
        if check_mime and is_pdf(body, content_type):  # however the server labelled it
            if PDF_TYPE not in self._allowed_mime:
                return _Answer(status, headers, content_type, error="bad_mime", latency=latency)
        elif check_mime and _looks_binary(body, headers) and not (sitemap and is_gzip(body)):
            return _Answer(status, headers, content_type, error="binary", latency=latency)
        return _Answer(status, headers, content_type, body, latency=latency)

    def _may_be_sitemap(self, content_type: str, path: str) -> bool:
        """Sitemaps are read whatever `allowed_mime_types` says (`crawler.sitemaps`), as feeds are
        (`crawler.feeds`)."""
        return self._sitemaps and may_be_sitemap(content_type, path)

    async def _drain(self, response: httpx.Response) -> None:
        received = 0
        async with aclosing(response.aiter_raw()) as raw_chunks:
            async for raw in raw_chunks:
                received += len(raw)
                if received > _ERROR_BODY_BYTES:
                    await _abandon(response, raw_chunks)
                    return

    async def _fetch_robots(self, robots_url: str) -> RobotsResponse:
        """robots.txt through politeness, redirects followed (RFC 9309). A 5xx or 429 is not retried (the
        host is deferred and asked later); no answer at all is, as for a page, so that a host that cannot
        be reached turns bad at once and its links wait for its next try."""
        current = robots_url
        for _ in range(ROBOTS_MAX_REDIRECTS + 1):
            answer = await self._get_with_retries(
                current,
                self.settings.robotstxt_maxsize,
                check_mime=False,
                truncate_ok=True,
                retry_kinds=UNANSWERED_KINDS,
            )
            if answer.status in REDIRECT_STATUSES and answer.error is None:
                location = answer.headers.get("location")
                target = normalize_url(location, base=current, settings=self.settings) if location else None
                if target is None:
                    break
                current = target
                continue
            if answer.error is not None and answer.error in RETRYABLE_KINDS | {"host_bad", "local_resources"}:
                return RobotsResponse(answer.status, error=answer.error)
            return RobotsResponse(answer.status, answer.body)
        return RobotsResponse(404)  # unfollowable redirects: RFC 9309 treats robots.txt as unavailable


async def _abandon(response: httpx.Response, raw_chunks: AsyncIterator[bytes]) -> None:
    """Stop a body mid-stream: close the connection, then let httpx's generators run out.

    Breaking out of `aiter_raw` would leave httpx's inner async generators to the garbage collector
    (a ResourceWarning under trio); once the connection is closed they end at their next step.
    """
    await response.aclose()
    with contextlib.suppress(httpx.HTTPError, OSError, trio.ClosedResourceError):
        async for _ in raw_chunks:
            pass


def _is_conditional(request: httpx.Request) -> bool:
    return "if-none-match" in request.headers or "if-modified-since" in request.headers


_BINARY_BYTES = re.compile(b"[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f]")


def _looks_binary(body: bytes, headers: Mapping[str, str]) -> bool:
    """WHATWG MIME sniffing's test: a binary data byte in the first 1445 bytes (UTF-16 and UTF-32 text,
    by its byte-order mark or its header's charset, exempt)."""
    head = body[:1445]
    if _BINARY_BYTES.search(head) is None:
        return False
    return not may_hold_zero_bytes(head, headers.get("content-type"))


def _status_error(status: int) -> str | None:
    if status in REDIRECT_STATUSES:
        return None
    if status == 429:
        return "http_429"
    if 400 <= status < 500:
        return "http_4xx"
    if status >= 500:
        return "http_5xx"
    return "protocol"
