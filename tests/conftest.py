"""Fixtures every test folder may use."""

from __future__ import annotations

import gc

import pytest

from simnet.paths import shared_data_dir


@pytest.fixture
def shared_data():
    """The shared real-data folder; the test is skipped with the reason when it is absent."""
    path = shared_data_dir()
    if not path.is_dir():
        pytest.skip(f"needs the shared data folder, absent at {path}")
    return path


@pytest.fixture
def collect_leaks():
    """py-libp2p 0.8.1 leaves some sockets of interrupted dials to the garbage collector: collect them in the
    test that started the hosts (its module ignores the resulting warning), not in some later test."""
    yield
    gc.collect()


PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture(autouse=True)
def no_proxy_from_the_machine(monkeypatch):
    """The crawler honours the environment's proxy variables (`crawler.proxies`): a machine that sets them
    must not route the tests' requests, nor their node processes', to its proxy."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
