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
