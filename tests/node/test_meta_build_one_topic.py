"""A meta build of one topic reads that topic's models, not every topic's."""

from __future__ import annotations

import pytest

from node.cooperation import store
from node.cooperation.testing import running_nodes

# py-libp2p 0.8.1 leaves the sockets of connections closed at host shutdown to the garbage collector.
pytestmark = pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)


@pytest.mark.trio
async def test_a_meta_build_unpacks_only_the_models_of_its_topic(tmp_path, monkeypatch):
    """Which models a build holds is read from their rows: a build of one topic on a node of 150 topics
    unpacked the 300 models of them all to learn the versions of its own."""
    async with running_nodes(tmp_path, 1, start=False) as (a,):
        await a.exchange.refresh_local_models(now=True)
        assert await a.exchange.local_model("Mathematics") is not None
        unpacked: list[str] = []
        unpack = store._row_to_model

        def spy(row):
            unpacked.append(row[0])
            return unpack(row)

        monkeypatch.setattr(store, "_row_to_model", spy)
        await a.meta_protocol.build("Databases", loss=0.2)
    assert unpacked and set(unpacked) == {"Databases"}
