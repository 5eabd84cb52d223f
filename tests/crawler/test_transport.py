"""The per-host transport against a tiny keep-alive HTTP server on two loopback addresses."""

from __future__ import annotations

from functools import partial

import httpx
import pytest
import trio

from crawler.transport import PerHostTransport

BODY = b"hello"


async def _serve_one(stream: trio.SocketStream, connections: list[int]) -> None:
    connections[0] += 1
    buffer = b""
    async with stream:
        while True:
            while b"\r\n\r\n" not in buffer:
                data = await stream.receive_some(4096)
                if not data:
                    return
                buffer += data
            _, buffer = buffer.split(b"\r\n\r\n", 1)
            head = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: %d\r\n\r\n" % len(BODY)
            await stream.send_all(head + BODY)


async def _start_servers(nursery: trio.Nursery, connections: list[int]) -> list[str]:
    urls = []
    for address in ("127.0.0.1", "127.0.0.2"):
        handler = partial(_serve_one, connections=connections)
        listeners = await nursery.start(partial(trio.serve_tcp, handler, 0, host=address))
        urls.append(f"http://{address}:{listeners[0].socket.getsockname()[1]}/")
    return urls


@pytest.mark.trio
async def test_one_pool_per_host_reuses_keep_alive_connections():
    connections = [0]
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            first, second = await _start_servers(nursery, connections)
            transport = PerHostTransport(keepalive_per_host=2)
            async with httpx.AsyncClient(transport=transport) as client:
                for url in (first, second, first, second):
                    assert (await client.get(url)).content == BODY
                assert len(transport) == 2
            assert connections[0] == 2  # the second request to each host reused its connection
            nursery.cancel_scope.cancel()


@pytest.mark.trio
async def test_idle_pools_beyond_max_hosts_are_closed_but_busy_ones_kept():
    connections = [0]
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            first, second = await _start_servers(nursery, connections)
            transport = PerHostTransport(keepalive_per_host=2, max_hosts=1)
            async with httpx.AsyncClient(transport=transport) as client:
                async with client.stream("GET", first) as busy:
                    assert (await client.get(second)).content == BODY
                    assert len(transport) == 2  # the first host's response is still open: its pool stays
                    assert await busy.aread() == BODY
                assert (await client.get(second)).content == BODY
                assert len(transport) == 1  # the idle first host's pool was closed
            nursery.cancel_scope.cancel()
