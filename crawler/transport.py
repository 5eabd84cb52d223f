"""An httpx transport with one small connection pool per host, for crawls that spread over many hosts.

httpcore's pool re-examines every pooled connection on each request start and each response close (and
polls idle sockets to see whether they expired), and closes idle connections once the pool holds more
than `max_keepalive_connections` of them, whatever their host. With one pool for a crawl across many hosts
that work grows with the total number of connections and keep-alive connections churn. A crawler already
bounds connections per host (politeness), so a pool per host keeps each pool as small as that bound.

Each host's pool connects directly or through the proxy `crawler.proxies` chooses for it.

Pools of hosts with nothing in flight are closed least recently used first once more than `max_hosts`
exist, so an endless crawl does not keep a socket open to every host it ever met.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncIterator, Callable

import httpx

from crawler.proxies import ProxyFor


class PerHostTransport(httpx.AsyncBaseTransport):
    """Routes each request to its origin's own `httpx.AsyncHTTPTransport`."""

    def __init__(
        self, keepalive_per_host: int, max_hosts: int = 256, proxy_for: ProxyFor | None = None
    ) -> None:
        self._limits = httpx.Limits(max_connections=None, max_keepalive_connections=keepalive_per_host)
        self._max_hosts = max_hosts
        self._proxy_for = proxy_for or (lambda scheme, host, port: None)
        self._verify = httpx.create_ssl_context(trust_env=False)  # loading CA certificates is slow: once
        self._pools: OrderedDict[tuple[bytes, bytes, int | None], httpx.AsyncHTTPTransport] = OrderedDict()
        self._active: dict[tuple[bytes, bytes, int | None], int] = {}

    def __len__(self) -> int:
        return len(self._pools)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        key = (request.url.raw_scheme, request.url.raw_host, request.url.port)
        pool = self._pools.get(key)
        if pool is None:
            url = request.url
            pool = self._pools[key] = httpx.AsyncHTTPTransport(
                verify=self._verify,
                limits=self._limits,
                trust_env=False,
                proxy=self._proxy_for(url.scheme, url.host, url.port),
            )
        else:
            self._pools.move_to_end(key)
        self._active[key] = self._active.get(key, 0) + 1
        try:
            if len(self._pools) > self._max_hosts:
                await self._close_idle_pools()
            response = await pool.handle_async_request(request)
        except BaseException:
            self._done(key)
            raise
        response.stream = _CountedStream(response.stream, lambda: self._done(key))
        return response

    def _done(self, key: tuple[bytes, bytes, int | None]) -> None:
        left = self._active[key] - 1
        if left:
            self._active[key] = left
        else:
            del self._active[key]

    async def _close_idle_pools(self) -> None:
        excess = len(self._pools) - self._max_hosts
        idle = [key for key in self._pools if key not in self._active][:excess]
        for key in idle:
            await self._pools.pop(key).aclose()

    async def aclose(self) -> None:
        pools, self._pools = list(self._pools.values()), OrderedDict()
        for pool in pools:
            await pool.aclose()


class _CountedStream(httpx.AsyncByteStream):
    """A response body that reports when it is closed, so the transport knows the host's pool is free."""

    def __init__(self, stream: httpx.AsyncByteStream, on_close: Callable[[], None]) -> None:
        self._stream = stream
        self._on_close = on_close

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._stream.__aiter__()  # no generator of its own: nothing more to close when abandoned

    async def aclose(self) -> None:
        on_close, self._on_close = self._on_close, None
        try:
            await self._stream.aclose()
        finally:
            if on_close is not None:
                on_close()
