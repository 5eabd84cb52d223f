"""Serving the control API with at most `MAX_API_CONNECTIONS` connections open at once.

Hypercorn's `serve` accepts every connection it is offered: a local process that opened a few hundred idle
ones took every file descriptor the node had, and its crawl and its peers' connections failed. Here the
accept loop waits for a free slot first (the kernel's backlog holds the next connections meanwhile) and
hands each connection to hypercorn's HTTP/1.1 handling. Hypercorn is pinned (pyproject.toml): this uses its
connection class, which `serve` does not expose.
"""

from __future__ import annotations

import logging
from typing import Any

import trio

from crawler.fetch import LOCAL_ERRNOS

log = logging.getLogger(__name__)

MAX_API_CONNECTIONS = 64
"""Open connections the API serves at once: the UI holds two (requests and its event stream), a CLI command
one; an idle one is closed after the keep-alive timeout."""

ACCEPT_PAUSE = 0.1  # seconds to wait when accepting failed for want of descriptors or memory (as trio does)


async def serve_capped(app: Any, config: Any, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Serve the ASGI `app` on `config.bind` (one plain-HTTP address) until cancelled, at most
    `MAX_API_CONNECTIONS` connections at a time; `task_status.started(base_url)` once listening."""
    from hypercorn.trio.tcp_server import TCPServer
    from hypercorn.trio.worker_context import WorkerContext
    from hypercorn.typing import ConnectionState
    from hypercorn.utils import wrap_app

    (sock,) = config.create_sockets().insecure_sockets
    sock.listen(config.backlog)
    host, port = sock.getsockname()[:2]
    listener = trio.SocketListener(trio.socket.from_stdlib_socket(sock))
    asgi = wrap_app(app, config.wsgi_max_body_size, "asgi")
    context = WorkerContext(None)
    slots = trio.Semaphore(MAX_API_CONNECTIONS)

    async def handle(stream: trio.SocketStream) -> None:
        held = _SlotStream(stream, slots)
        try:
            await TCPServer(asgi, config, context, ConnectionState({}), held)
        finally:
            # cancelled as the node stops, hypercorn's own close can end before closing the socket (its
            # send_eof is a checkpoint): a client reading the event stream would never see the end
            await trio.aclose_forcefully(held)

    async with listener, trio.open_nursery() as nursery:
        task_status.started(f"http://{host}:{port}")
        failed = 0  # accepts failed in a row: one warning when they start, one line when they end
        while True:
            await slots.acquire()
            try:
                stream = await listener.accept()
            except OSError as exc:
                slots.release()
                if exc.errno not in LOCAL_ERRNOS:
                    raise
                if not failed:
                    log.warning("the control API cannot accept connections for now: %s", exc)
                failed += 1
                await trio.sleep(ACCEPT_PAUSE)
                continue
            if failed:
                log.warning("the control API accepts connections again (%d attempts failed)", failed)
                failed = 0
            nursery.start_soon(handle, stream)


class _SlotStream(trio.abc.HalfCloseableStream):
    """The accepted connection (hypercorn reads its `socket` for the addresses), closed as soon as the client
    closes its end; it gives its slot back, once, as it closes."""

    def __init__(self, stream: trio.SocketStream, slots: trio.Semaphore) -> None:
        self._stream = stream
        self._slots: trio.Semaphore | None = slots
        self.socket = stream.socket

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self._stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self._stream.wait_send_all_might_not_block()

    async def send_eof(self) -> None:
        await self._stream.send_eof()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        data = await self._stream.receive_some(max_bytes)
        if not data:  # the client has gone: hypercorn would hold the socket until its keep-alive timer ends
            await self.aclose()
        return data

    async def aclose(self) -> None:
        if self._slots is not None:
            self._slots, slots = None, self._slots
            slots.release()
        await self._stream.aclose()
