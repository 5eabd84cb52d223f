"""The simulated web's HTTP/1.1 server: one loopback address per site on one shared port, under trio.

h11 speaks the protocol (keep-alive included); files are read once, upstream links rewritten once, and
the bytes cached, so the server stays much faster than the crawlers it serves.
"""

from __future__ import annotations

import errno
import hashlib
import mimetypes
import os
import posixpath
import re
import socket
import struct
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache, partial
from http import HTTPStatus
from pathlib import Path
from urllib.parse import quote, unquote
from xml.sax.saxutils import escape

import h11
import trio

from simnet.web.corpus import LABELS_FILE, Site, WebCorpus, load_web
from simnet.web.crosslinks import link_fragments
from simnet.web.errors import PortError
from simnet.web.faults import Fault, FaultPlan
from simnet.web.feeds import FEED_PATH, FEED_TYPE, site_feed, with_feed_link
from simnet.web.hub import hub_page
from simnet.web.layout import HUB_ADDRESS, RequestRecord, WebLayout
from simnet.web.payloads import (
    BOMB_DEFAULT,
    HUGE_DEFAULT,
    binary_junk,
    calendar_page,
    gzip_bomb,
    huge_chunks,
    insert_before_body_end,
    with_trap_link,
)
from simnet.web.publishing import Publishing

SERVER_NAME = b"topicswarm-simweb"
IDLE_TIMEOUT = 60.0
CACHE_LIMIT = 768 * 1024 * 1024
BIND_ATTEMPTS = 50
HTML_TYPES = ("text/html", "application/xhtml+xml")
ALLOW_ALL_ROBOTS = b"User-agent: *\nDisallow:\n"
HTML_SNIFF = re.compile(rb"<(!doctype html|html|head|title|body)[\s>]", re.IGNORECASE)
SITEMAP_PART = 1000  # URLs per sitemap document; a bigger site gets an index of parts
SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
SITEMAP_PATH = re.compile(r"/sitemap(?:-([1-9][0-9]*))?\.xml")
PAGE_TYPES = (*HTML_TYPES, "text/plain", "application/pdf")


@dataclass
class Reply:
    """What to answer; `action` names the fault's way of answering ("reset", "truncate") if any."""

    status: int
    body: bytes = b""
    content_type: str = "text/html"
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    chunks: Iterable[bytes] | None = None  # streamed body of declared `length`
    length: int | None = None
    action: str | None = None
    fault: str | None = None


def content_type_of(path: Path, body: bytes) -> str:
    """By extension; a file without a known one is sniffed for HTML (WebKB pages often have none)."""
    if path.suffix.lower() in (".html", ".htm"):
        return "text/html"
    guessed, encoding = mimetypes.guess_type(path.name)
    if encoding == "gzip":
        return "application/gzip"
    if guessed:
        return guessed
    return "text/html" if HTML_SNIFF.search(body[:2048]) else "application/octet-stream"


def page_type(file: Path) -> str:
    """`content_type_of` reading only the head of a file whose extension says nothing (never a huge one)."""
    by_name = content_type_of(file, b"")
    if by_name != "application/octet-stream":
        return by_name
    try:
        with file.open("rb") as fh:
            return content_type_of(file, fh.read(2048))
    except OSError:
        return by_name


def site_pages(root: Path) -> list[tuple[str, float]]:
    """The pages a site serves as (path relative to `root`, mtime), sorted by path: HTML, text and PDF
    files, not hidden ones nor the site's labels file. Walks the disk: call off the event loop."""
    pages = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            file = Path(folder, name)
            relative = file.relative_to(root).as_posix()
            if name.startswith(".") or relative == LABELS_FILE or page_type(file) not in PAGE_TYPES:
                continue
            try:
                pages.append((relative, file.stat().st_mtime))
            except OSError:
                continue
    return sorted(pages)


def page_url(base_url: str, relative: str) -> str | None:
    """The URL a site serves its file at `relative` under; None for a name that is not UTF-8 (it cannot be
    asked for, so it is no page)."""
    try:
        return f"{base_url}/{quote(relative, safe='/')}"
    except UnicodeEncodeError:
        return None


def sitemap_documents(base_url: str, pages: list[tuple[str, float]]) -> list[bytes]:
    """A site's sitemaps (sitemaps.org 0.9): [urlset] for up to SITEMAP_PART pages, else [index, part 1,
    part 2, ...], the index naming the parts at /sitemap-N.xml."""
    entries = []
    for relative, mtime in pages:
        loc = page_url(base_url, relative)
        if loc is None:
            continue
        lastmod = datetime.fromtimestamp(mtime, UTC).isoformat(timespec="seconds")
        entries.append(f"<url><loc>{escape(loc)}</loc><lastmod>{lastmod}</lastmod></url>\n")
    parts = [entries[i : i + SITEMAP_PART] for i in range(0, len(entries), SITEMAP_PART)] or [[]]
    urlsets = [xml_document("urlset", part) for part in parts]
    if len(urlsets) == 1:
        return urlsets
    locs = [
        f"<sitemap><loc>{escape(f'{base_url}/sitemap-{n}.xml')}</loc></sitemap>\n"
        for n in range(1, len(parts) + 1)
    ]
    return [xml_document("sitemapindex", locs), *urlsets]


def xml_document(root: str, children: list[str]) -> bytes:
    head = f'<?xml version="1.0" encoding="UTF-8"?>\n<{root} xmlns="{SITEMAP_NS}">\n'
    return (head + "".join(children) + f"</{root}>\n").encode("utf-8")


def error_reply(status: int, fault: str | None = None) -> Reply:
    reason = h11_reason(status).decode()
    title = f"<title>{status} {reason}</title>"
    body = f"<!DOCTYPE html><html><head>{title}</head><body><h1>{reason}</h1></body></html>"
    return Reply(status, body.encode(), fault=fault)


@lru_cache(maxsize=64)
def h11_reason(status: int) -> bytes:
    try:
        return HTTPStatus(status).phrase.encode()
    except ValueError:
        return b"Status"


class WebServer:
    """Answers requests for one web: static files, the hub, robots.txt and the injected faults."""

    def __init__(
        self,
        layout: WebLayout,
        faults: FaultPlan,
        sitemaps: bool = False,
        feeds: bool = False,
        publishing: Publishing | None = None,
    ):
        self.layout = layout
        self.faults = faults
        self.sitemaps = sitemaps
        self.feeds = feeds
        self.publishing = publishing
        self._feeds: dict[str, bytes] = {}  # site -> its feed (simnet.web.feeds), built at first request
        self._sitemaps: dict[str, list[bytes]] = {}  # site -> its sitemap documents, built at first request
        self._sitemap_lock = trio.Lock()
        self.request_log: list[RequestRecord] = []
        self._cache: dict[tuple[str, str], tuple[bytes, str]] = {}  # (site, path) -> (body, type)
        self._cached_bytes = 0
        self._hub = hub_page(layout.corpus.name, layout.sites, layout.site_url)
        base_urls = {site.name: layout.base_url(site) for site in layout.sites}
        self._cross_links = link_fragments(layout.cross_link_plan, base_urls)

    def publish_next(self) -> list[str]:
        """Publish the next held page of each site (`simnet.web.publishing`); their URLs. The pages that
        link to them, the feeds and the sitemaps are built again when next asked for."""
        if self.publishing is None:
            return []
        published = self.publishing.publish_next()
        self._cache.clear()
        self._cached_bytes = 0
        self._feeds.clear()
        self._sitemaps.clear()
        urls = (page_url(self.layout.base_url(site), relative) for site, relative in published)
        return [url for url in urls if url is not None]

    async def _listed_pages(self, site: Site) -> list[tuple[str, float]]:
        """The (path, mtime) pages a site's sitemaps and feed list: all of them, or the published ones
        (`simnet.web.publishing`). Walked in a thread: a big site has thousands of files."""
        pages = await trio.to_thread.run_sync(site_pages, site.root)
        return pages if self.publishing is None else self.publishing.listed(site.name, pages)

    def _site_name_of_url(self, url: str) -> str | None:
        site = self.layout.site_of_url(url)
        return None if site is None else site.name

    # ---- what to answer
    async def reply(self, site: Site | None, method: str, target: str) -> Reply:
        if method not in ("GET", "HEAD"):
            return error_reply(405)
        raw_path, _, query = target.partition("?")
        path = unquote(raw_path) or "/"
        if site is None:
            if path == "/":
                return Reply(200, self._hub)
            if path == "/robots.txt":
                return Reply(200, ALLOW_ALL_ROBOTS, "text/plain")
            return error_reply(404)
        if path == "/robots.txt":
            return self.robots(site)
        trap = self.faults.trap(site.name)
        if trap is not None and path.startswith(trap.trap_prefix):
            return Reply(200, calendar_page(trap.trap_prefix, path), fault="trap")
        fault = self.faults.for_request(site.name, path)
        if fault is not None:
            if fault.kind == "slow":
                await trio.sleep(fault.delay)
            else:
                special = await self.fault_reply(fault, path, raw_path, query)
                if special is not None:
                    return special
        if self.sitemaps and (match := SITEMAP_PATH.fullmatch(path)):
            reply = await self.sitemap_reply(site, int(match.group(1) or 0))
        elif self.feeds and path == FEED_PATH:
            reply = await self.feed_reply(site)
        else:
            reply = self.file_reply(site, path, raw_path, query)
        if trap is not None and reply.status == 200 and reply.content_type in HTML_TYPES:
            reply.body = with_trap_link(reply.body, trap.trap_prefix)
        if fault is not None:
            reply.fault = fault.kind
            if fault.kind == "wrong_type" and reply.status == 200:
                reply.content_type = fault.content_type
        return reply

    async def fault_reply(self, fault: Fault, path: str, raw_path: str, query: str) -> Reply | None:
        kind = fault.kind
        if kind == "server_error":
            return error_reply(fault.status or 503, fault=kind)
        if kind == "reset":
            return Reply(0, action="reset", fault=kind)
        if kind == "huge":
            size = fault.size or HUGE_DEFAULT
            return Reply(200, chunks=huge_chunks(size), length=size, fault=kind)
        if kind == "gzip_bomb":
            bomb = await trio.to_thread.run_sync(gzip_bomb, fault.size or BOMB_DEFAULT)
            return Reply(200, bomb, headers=[(b"content-encoding", b"gzip")], fault=kind)
        if kind == "redirect_loop":
            location = raw_path if "loop=1" in query else f"{raw_path}?loop=1"
            return Reply(302, b"", headers=[(b"location", location.encode("latin-1"))], fault=kind)
        if kind == "binary_as_html":
            return Reply(200, binary_junk(path), "text/html", fault=kind)
        if kind == "truncated":
            return None  # the file is answered, then cut (see serve_request)
        return None

    async def sitemap_reply(self, site: Site, part: int) -> Reply:
        """/sitemap.xml (part 0) or /sitemap-N.xml; a site's documents are built once, in a thread, as a
        big site has thousands of files to walk."""
        async with self._sitemap_lock:  # concurrent first requests build once
            if site.name not in self._sitemaps:
                pages = await self._listed_pages(site)
                self._sitemaps[site.name] = sitemap_documents(self.layout.base_url(site), pages)
        documents = self._sitemaps[site.name]
        if part >= len(documents):
            return error_reply(404)
        return Reply(200, documents[part], "application/xml")

    async def feed_reply(self, site: Site) -> Reply:
        """/feed.xml, built once in a thread (it walks the site and parses the pages it lists)."""
        async with self._sitemap_lock:
            if site.name not in self._feeds:
                pages = await self._listed_pages(site)
                built = partial(site_feed, site.name, site.root, self.layout.base_url(site), pages)
                self._feeds[site.name] = await trio.to_thread.run_sync(built)
        return Reply(200, self._feeds[site.name], FEED_TYPE)

    def sitemap_line(self, site: Site) -> str:
        return f"Sitemap: {self.layout.base_url(site)}/sitemap.xml\n" if self.sitemaps else ""

    def robots(self, site: Site) -> Reply:
        fault = self.faults.robots_fault(site.name)
        if fault is None:
            return Reply(200, ALLOW_ALL_ROBOTS + self.sitemap_line(site).encode(), "text/plain")
        if fault.kind == "robots_429":
            return Reply(
                429, b"slow down\n", "text/plain", headers=[(b"retry-after", b"5")], fault=fault.kind
            )
        if fault.kind == "robots_5xx":
            return Reply(fault.status or 503, b"unavailable\n", "text/plain", fault=fault.kind)
        lines = ["User-agent: *", f"Disallow: {fault.disallowed}".rstrip()]
        if fault.crawl_delay is not None:
            lines.append(f"Crawl-delay: {fault.crawl_delay:g}")
        body = "\n".join(lines) + "\n" + self.sitemap_line(site)
        return Reply(200, body.encode(), "text/plain", fault=fault.kind)

    def file_reply(self, site: Site, path: str, raw_path: str, query: str) -> Reply:
        cached = self._cache.get((site.name, path))  # a page served before: no path work, no stat
        if cached is not None:
            return Reply(200, cached[0], cached[1])
        relative = posixpath.normpath(path).lstrip("/")
        if relative.startswith("..") or "\x00" in relative:
            return error_reply(404)
        file = site.root / relative if relative not in ("", ".") else site.root
        try:
            is_dir = file.is_dir()
        except OSError:  # a name too long for the file system, say: no such page
            return error_reply(404)
        if is_dir:
            if not raw_path.endswith("/"):
                location = raw_path + "/" + (f"?{query}" if query else "")
                return Reply(301, b"", headers=[(b"location", location.encode("latin-1"))])
            file = file / "index.html"
        relative = file.relative_to(site.root).as_posix()
        if self.publishing is not None and self.publishing.is_held(site.name, relative):
            return error_reply(404)
        cached = self._load(file)
        if cached is None:
            return error_reply(404)
        body, content_type = cached
        fragment = self._cross_links.get((site.name, "/" + relative))
        if fragment is not None and content_type in HTML_TYPES:
            body = insert_before_body_end(body, fragment)
            cached = (body, content_type)
        if self.feeds and content_type in HTML_TYPES:
            body = with_feed_link(body)
            cached = (body, content_type)
        if self.publishing is not None and content_type in HTML_TYPES:
            url = page_url(self.layout.base_url(site), relative) or self.layout.base_url(site)
            body = self.publishing.without_held_links(body, url, self._site_name_of_url)
            cached = (body, content_type)
        if self._cached_bytes + len(body) <= CACHE_LIMIT:
            self._cache[(site.name, path)] = cached
            self._cached_bytes += len(body)
        return Reply(200, body, content_type)

    def _load(self, file: Path) -> tuple[bytes, str] | None:
        try:
            body = file.read_bytes()
        except OSError:
            return None
        content_type = content_type_of(file, body)
        if content_type in HTML_TYPES:
            body = self.layout.upstream.rewrite_html(body)
        return body, content_type

    # ---- the protocol
    async def serve_connection(self, stream: trio.SocketStream, site: Site | None, host: str) -> None:
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                event = await self._next_event(conn, stream)
                if not isinstance(event, h11.Request):
                    return
                keep_going = await self._serve_request(conn, stream, site, host, event)
                if not keep_going or conn.our_state is h11.MUST_CLOSE:
                    return
                while conn.their_state is h11.SEND_BODY:  # a request body: read and ignored
                    if isinstance(await self._next_event(conn, stream), h11.ConnectionClosed):
                        return
                conn.start_next_cycle()
        except h11.RemoteProtocolError:
            await answer_bad_request(conn, stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError, trio.TooSlowError):
            return
        finally:
            await stream.aclose()

    @staticmethod
    async def _next_event(conn: h11.Connection, stream: trio.SocketStream):
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                with trio.fail_after(IDLE_TIMEOUT):
                    data = await stream.receive_some(65536)
                conn.receive_data(data)
                continue
            return event

    async def _serve_request(
        self,
        conn: h11.Connection,
        stream: trio.SocketStream,
        site: Site | None,
        host: str,
        request: h11.Request,
    ) -> bool:
        """Answer one request; False when the connection must close. The request is logged before the last
        bytes go out, so a client that has its answer always finds the request in the log."""
        start = time.monotonic()
        target = request.target.decode("latin-1")
        method = request.method.decode("ascii", "replace")
        reply = with_entity_tag(await self.reply(site, method, target), request.headers)
        sent = 0

        def log() -> None:
            self.request_log.append(
                RequestRecord(
                    start,
                    time.monotonic(),
                    host,
                    target,
                    reply.status,
                    reply.fault,
                    site.name if site else None,
                    sent,
                )
            )

        if reply.action == "reset":
            log()
            reset(stream)
            return False
        length = reply.length if reply.chunks is not None else len(reply.body)
        headers = [
            (b"server", SERVER_NAME),
            (b"content-type", reply.content_type.encode("latin-1")),
            (b"content-length", str(length).encode()),
            *reply.headers,
        ]
        if reply.status == 304:  # no body, so no body headers (RFC 9110 15.4.5)
            headers = [(b"server", SERVER_NAME), *reply.headers]
        head = conn.send(
            h11.Response(status_code=reply.status, headers=headers, reason=h11_reason(reply.status))
        )
        if method == "HEAD":
            conn.send(h11.EndOfMessage())
            log()
            await stream.send_all(head)
            return True
        if reply.chunks is None:
            body = reply.body[: len(reply.body) // 2] if reply.fault == "truncated" else reply.body
            data = conn.send(h11.Data(data=body)) if body else b""
            sent = len(body)
            if reply.fault != "truncated":
                conn.send(h11.EndOfMessage())
            log()
            await stream.send_all(head + data)
            return reply.fault != "truncated"
        try:
            await stream.send_all(head)
            for chunk in reply.chunks:
                await stream.send_all(conn.send(h11.Data(data=chunk)))
                sent += len(chunk)
            conn.send(h11.EndOfMessage())
        finally:
            log()
        return True


def with_entity_tag(reply: Reply, request_headers: Iterable[tuple[bytes, bytes]]) -> Reply:
    """A whole page carries an ETag of its bytes, as a static file server's; a request whose If-None-Match
    names it is answered 304 without the body (what revisiting crawlers rely on)."""
    if reply.status != 200 or reply.chunks is not None or reply.fault is not None:
        return reply
    tag = b'"' + hashlib.blake2b(reply.body, digest_size=8).hexdigest().encode() + b'"'
    asked = [value for name, value in request_headers if name.lower() == b"if-none-match"]
    if any(tag in (t.strip() for t in value.split(b",")) or value.strip() == b"*" for value in asked):
        return Reply(304, b"", reply.content_type, headers=[(b"etag", tag)])
    reply.headers = [*reply.headers, (b"etag", tag)]
    return reply


async def answer_bad_request(conn: h11.Connection, stream: trio.SocketStream) -> None:
    """A 400 for a request h11 could not read, when the exchange still allows an answer."""
    if conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
        return
    reply = error_reply(400)
    headers = [
        (b"content-type", b"text/html"),
        (b"content-length", str(len(reply.body)).encode()),
        (b"connection", b"close"),
    ]
    try:
        data = conn.send(h11.Response(status_code=400, headers=headers, reason=h11_reason(400)))
        data += conn.send(h11.Data(data=reply.body)) + conn.send(h11.EndOfMessage())
        await stream.send_all(data)
    except (h11.LocalProtocolError, trio.BrokenResourceError, trio.ClosedResourceError):
        return


def reset(stream: trio.SocketStream) -> None:
    """Abort with a TCP RST: linger on, timeout zero, then close."""
    stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def open_listening_socket(address: str, port: int, reuse_port: bool) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((address, port))
        sock.listen(1024)
    except OSError:
        sock.close()
        raise
    return sock


def bind_all(
    addresses: list[str], port: int = 0, reuse_port: bool = False
) -> tuple[list[socket.socket], int]:
    """Listening sockets on every address with one common port; port 0 retries until one is free on all."""
    for _ in range(BIND_ATTEMPTS if port == 0 else 1):
        sockets: list[socket.socket] = []
        try:
            first = open_listening_socket(addresses[0], port, reuse_port)
            sockets.append(first)
            chosen = first.getsockname()[1]
            for address in addresses[1:]:
                sockets.append(open_listening_socket(address, chosen, reuse_port))
            return sockets, chosen
        except OSError as exc:
            for sock in sockets:
                sock.close()
            if exc.errno != errno.EADDRINUSE:
                raise PortError(f"cannot listen on loopback: {exc}") from exc
            if port != 0:
                raise PortError(
                    f"port {port} is in use on one of {', '.join(addresses)}; "
                    "choose another port or 0 for any free one"
                ) from exc
    raise PortError(f"no port free on all of {len(addresses)} loopback addresses after {BIND_ATTEMPTS} tries")


class ServedWeb(WebLayout):
    """A web being served: its layout (URLs, labels, upstream mapping) plus the server's request log."""

    def __init__(
        self,
        corpus: WebCorpus,
        port: int,
        faults: FaultPlan,
        cross_links: int = 0,
        seed: int = 0,
        sitemaps: bool = False,
        feeds: bool = False,
        publishing: Publishing | None = None,
    ):
        super().__init__(corpus, port, cross_links, seed)
        self.faults = faults
        self.sitemaps = sitemaps
        self.feeds = feeds
        self.server = WebServer(self, faults, sitemaps, feeds, publishing)

    def publish_next(self) -> list[str]:
        """Publish the next held page of each site (`WebServer.publish_next`); their URLs."""
        return self.server.publish_next()

    @property
    def request_log(self) -> list[RequestRecord]:
        return self.server.request_log


async def run_listeners(server: WebServer, layout: WebLayout, sockets: list[socket.socket]) -> None:
    """Accept connections on the hub socket (first) and the site sockets until cancelled."""
    async with trio.open_nursery() as nursery:
        hosts: list[tuple[Site | None, str]] = [(None, layout.hub_host)]
        hosts += [(site, layout.host_of_site(site)) for site in layout.sites]
        for sock, (site, host) in zip(sockets, hosts, strict=True):
            listener = trio.SocketListener(trio.socket.from_stdlib_socket(sock))

            async def handle(stream: trio.SocketStream, site: Site | None = site, host: str = host) -> None:
                await server.serve_connection(stream, site, host)

            nursery.start_soon(trio.serve_listeners, handle, [listener])


def all_addresses(layout_sites: Iterable[str]) -> list[str]:
    return [HUB_ADDRESS, *layout_sites]


@asynccontextmanager
async def serve_web(
    corpus: WebCorpus | str | Path,
    faults: FaultPlan | None = None,
    port: int = 0,
    reuse_port: bool = False,
    cross_links: int = 0,
    seed: int = 0,
    sitemaps: bool = False,
    feeds: bool = False,
    publishing: Publishing | None = None,
) -> AsyncIterator[ServedWeb]:
    """Serve a web in this trio process until the block ends.

    `cross_links` injects that many links between pages of different groups (drawn from `seed`; listed in
    `web.cross_links`); `reuse_port` lets several processes serve the same port (SO_REUSEPORT); `sitemaps`
    serves each site's pages at /sitemap.xml, named in its robots.txt; `feeds` serves each site's feed at
    /feed.xml (`simnet.web.feeds`), named in the head of its HTML pages; `publishing` holds pages back
    until `web.publish_next()` publishes them (`simnet.web.publishing`).
    """
    if not isinstance(corpus, WebCorpus):
        corpus = load_web(corpus)
    probe = WebLayout(corpus, 0)
    sockets, chosen = bind_all(all_addresses(probe.addresses.values()), port, reuse_port)
    try:
        web = ServedWeb(corpus, chosen, faults or FaultPlan(), cross_links, seed, sitemaps, feeds, publishing)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_listeners, web.server, web, sockets)
            try:
                yield web
            finally:
                nursery.cancel_scope.cancel()
    finally:
        for sock in sockets:
            sock.close()
