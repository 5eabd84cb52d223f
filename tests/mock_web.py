"""What crawler tests on httpx's mock transport share: streamed responses, a web of files on it, and a
hand-moved calendar."""

from __future__ import annotations

import httpx
import trio

from crawler.engine import Crawler
from crawler.fetch import Fetcher
from crawler.repository import Repository
from crawler.settings import CrawlSettings

QUIET = CrawlSettings(download_delay=0.0, autothrottle_enabled=False)  # no politeness waits on a mock web


async def _stream(data: bytes):
    yield data


def streamed_response(status: int, body: bytes, headers: dict[str, str] | None = None) -> httpx.Response:
    """A response whose body arrives as a stream, as the fetcher reads a real server's."""
    return httpx.Response(
        status, headers={**(headers or {}), "content-length": str(len(body))}, content=_stream(body)
    )


class Calendar:
    """A crawler's wall clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def page(title: str, *links: str) -> bytes:
    anchors = "".join(f'<a href="{link}">{link}</a>' for link in links)
    return f"<html><title>{title}</title><body><p>{title} text</p>{anchors}</body></html>".encode()


def respond(status: int, kind: str, body: bytes) -> httpx.Response:
    return streamed_response(status, body, {"content-type": kind})


class Web:
    """Hosts on httpx's mock transport: (host, path) -> (content type, body); logs every request."""

    def __init__(self, files: dict[tuple[str, str], tuple[str, bytes]]) -> None:
        self.files = files
        self.status: dict[str, int] = {}  # path -> an error status to answer instead
        self.etags: dict[str, str] = {}  # path -> the ETag its answers carry (304 to an If-None-Match of it)
        self.log: list[tuple[str, str]] = []
        self.asked: list[dict[str, str]] = []  # each request's headers

    def __call__(self, request: httpx.Request) -> httpx.Response:
        key = (request.url.host, request.url.path)
        self.log.append(key)
        self.asked.append(dict(request.headers))
        if request.url.path in self.status:
            return respond(self.status[request.url.path], "text/html", b"error")
        if key not in self.files:
            return respond(404, "text/html", b"gone")
        tag = self.etags.get(request.url.path)
        if tag is None:
            return respond(200, *self.files[key])
        if request.headers.get("if-none-match") == tag:
            return streamed_response(304, b"", {"etag": tag})
        kind, body = self.files[key]
        return streamed_response(200, body, {"content-type": kind, "etag": tag})

    def requested(self, path: str) -> bool:
        return any(p == path for _, p in self.log)


def html(body: bytes) -> tuple[str, bytes]:
    return "text/html", body


def crawler_for(web: Web, tmp_path, settings: CrawlSettings = QUIET, **options) -> Crawler:
    fetcher = Fetcher(settings, client=httpx.AsyncClient(transport=httpx.MockTransport(web)))
    return Crawler(Repository(tmp_path / "repo.db"), settings, fetcher, **options)


async def crawl(crawler: Crawler, seed: str):
    crawler.add_seeds([seed])
    with trio.fail_after(30):
        return await crawler.run()


def stored(crawler: Crawler) -> set[str]:
    return {doc["url"] for doc in crawler.repo.documents()}
