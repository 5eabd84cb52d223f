"""A user with more folders than fit in one announcement still joins every topic's community, and a topic
whose key is too long for the wire is said, not dropped unsaid."""

from __future__ import annotations

import dataclasses

import pytest

from crawler.repository import Repository
from crawler.taxonomy import store_taxonomy
from node.cooperation.testing import running_nodes, synthetic_taxonomy
from p2p.message_limits import MAX_ANNOUNCED_TOPICS, MAX_TOPIC_LEN

# py-libp2p 0.8.1 leaves the sockets of connections closed at host shutdown to the garbage collector.
pytestmark = pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)

LONG = "/".join(["A rather long bookmark folder name"] * 5)  # a deep folder path


@pytest.mark.trio
async def test_a_node_holds_the_community_of_every_topic_not_only_the_first_64(tmp_path):
    many = [f"Folder {i:03d}" for i in range(2 * MAX_ANNOUNCED_TOPICS)]
    deep = ["/".join(LONG.split("/")[: i + 1]) for i in range(len(LONG.split("/")))]
    async with running_nodes(tmp_path, 1, start=False) as (coop,):
        taxonomy = synthetic_taxonomy(0)
        topics = tuple(sorted({*taxonomy.topics, *many, *deep}))
        with Repository(tmp_path / "node0" / "repository.sqlite") as repo:
            store_taxonomy(repo, dataclasses.replace(taxonomy, topics=topics))
        await coop.exchange.announce()
        held = set(coop.network.held_topics())
        too_long = [key for key in topics if len(key) > MAX_TOPIC_LEN]
        assert too_long and len(topics) - len(too_long) > MAX_ANNOUNCED_TOPICS
        assert held == set(topics) - set(too_long)  # "Folder 064" on were never held
        assert coop.exchange.unshared == too_long


def test_status_names_the_topics_peers_never_see():
    from node.cli.status import peer_lines

    status = {
        "peer_id": None,
        "peers_online": 0,
        "bytes_exchanged": {"in": 0, "out": 0},
        "topics_not_shared": [LONG],
    }
    said = "\n".join(peer_lines(status))
    assert "1 topic not shared with peers" in said and repr(LONG) in said
    assert "not shared" not in "\n".join(peer_lines(dict(status, topics_not_shared=[])))


@pytest.mark.trio
async def test_a_round_announces_new_models_before_it_builds_meta_classifiers(tmp_path):
    """With many topics the builds take long, and announced after them, peers waited for every model."""
    async with running_nodes(tmp_path, 1, start=False) as (node,):
        order: list[str] = []
        announce, rebuild = node.network.announce_version, node.rebuild_meta

        async def announcing(topic: str, version: int) -> None:
            order.append(f"announce {topic}")
            await announce(topic, version)

        async def rebuilding(topic: str) -> None:
            order.append(f"build {topic}")
            await rebuild(topic)

        node.network.announce_version, node.rebuild_meta = announcing, rebuilding
        await node.round()
    assert {"build Databases", "build Mathematics"} <= set(order)
    assert max(order.index(f"announce {t}") for t in ("Databases", "Mathematics")) < order.index(
        "build Databases"
    )
