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
        "request_timeout": 5.0,
        "announce_interval": 0.5,
    }
    defaults.update(overrides)
    return dataclasses.replace(P2PSettings(), **defaults)


@pytest.fixture
def start_hosts():
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
