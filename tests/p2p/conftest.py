"""Factories for real libp2p hosts on loopback, in the test's own process and trio run."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import pytest

from p2p.settings import P2PSettings

LOOPBACK = ("/ip4/127.0.0.1/tcp/0",)


def loopback_settings(**overrides: object) -> P2PSettings:
    """Settings for tests: loopback only, short periods so epidemics finish in a second or two."""
    defaults: dict[str, object] = {
        "listen_addrs": LOOPBACK,
        "exchange_period": 0.2,
        "neighbour_ttl": 30.0,
        "connect_timeout": 3.0,
        "request_timeout": 10.0,
        "announce_interval": 0.5,
    }
    defaults.update(overrides)
    return dataclasses.replace(P2PSettings(), **defaults)


@pytest.fixture
def start_hosts(collect_leaks):
    """`async with start_hosts(n, **settings) as hosts:` runs n hosts until the block exits.

    A context manager rather than a fixture that owns the hosts: trio cancel scopes must close in the
    task that opened them, and pytest-trio runs fixtures in tasks of their own.
    """
    from p2p.host import start_host

    @asynccontextmanager
    async def factory(n: int, **overrides: object) -> AsyncIterator[list]:
        settings = loopback_settings(**overrides)
        async with AsyncExitStack() as stack:
            yield [await stack.enter_async_context(start_host(settings)) for _ in range(n)]

    return factory


class RunningService:
    """A `P2PService` under test with a kill switch (its host stops as a crashed peer's would)."""

    def __init__(self, service, scope) -> None:
        self.service = service
        self.scope = scope

    def __getattr__(self, name: str):
        return getattr(self.service, name)

    def kill(self) -> None:
        self.scope.cancel()


@pytest.fixture
def start_services(collect_leaks):
    """`async with start_services(n, **settings) as nodes:` n running services; `nodes[i].kill()` stops one.

    Node 0 is the bootstrap: the others join through its one address."""
    import trio

    from p2p.service import start_service

    async def run_one(settings, *, task_status):
        with trio.CancelScope() as scope:
            async with start_service(settings) as service:
                task_status.started(RunningService(service, scope))
                await trio.sleep_forever()

    @asynccontextmanager
    async def factory(n: int, **overrides: object) -> AsyncIterator[list]:
        settings = loopback_settings(**overrides)
        async with trio.open_nursery() as nursery:
            first = await nursery.start(run_one, settings)
            joined = dataclasses.replace(settings, bootstrap=(first.addrs()[0],))
            nodes = [first] + [await nursery.start(run_one, joined) for _ in range(n - 1)]
            yield nodes
            nursery.cancel_scope.cancel()

    return factory
