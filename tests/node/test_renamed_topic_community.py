"""A topic's key names its community: peers whose folders are named differently do not meet until one of
them takes the other's key, and a node leaves the community of a topic an import dropped."""

from __future__ import annotations

import dataclasses

import pytest
import trio

from crawler.repository import Repository
from crawler.taxonomy import store_taxonomy
from node.cooperation.service import Cooperation
from node.cooperation.testing import fast_settings, running_nodes, synthetic_taxonomy
from node.topic_rename import rename_topic
from p2p.communities import gossip_topic

# py-libp2p 0.8.1 leaves the sockets of connections closed at host shutdown to the garbage collector.
pytestmark = pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)

COMMUNITY = "Science/Mathematics"


async def wait_for(condition, timeout: float = 30.0) -> None:
    with trio.fail_after(timeout):
        while not await condition():
            await trio.sleep(0.1)


def repository(tmp_path, node: int):
    return tmp_path / f"node{node}" / "repository.sqlite"


async def received_topics(coop: Cooperation, origin: str) -> set[str]:
    return {row["topic"] for row in await coop.models() if row["origin"] == origin}


@pytest.mark.trio
async def test_a_node_meets_a_community_once_its_topic_takes_the_communitys_key(tmp_path):
    async with running_nodes(tmp_path, 2, start=False) as (a, b):
        with Repository(repository(tmp_path, 0)) as repo:
            rename_topic(repo, "Mathematics", COMMUNITY)
        async with trio.open_nursery() as nursery:
            await nursery.start(a.run)
            b_scope = trio.CancelScope()

            async def run_b(coop, *, task_status=trio.TASK_STATUS_IGNORED):
                with b_scope:
                    await coop.run(task_status=task_status)

            await nursery.start(run_b, b)

            async def databases_exchanged() -> bool:
                return "Databases" in await received_topics(a, b.peer_id) and "Databases" in (
                    await received_topics(b, a.peer_id)
                )

            await wait_for(databases_exchanged)

            async def seen_nearby() -> bool:  # gossipsub tells b which communities a is in
                return b.network.nearby_communities().get(COMMUNITY) == [a.peer_id]

            await wait_for(seen_nearby)
            assert "Databases" not in b.network.nearby_communities()  # b is in that one
            assert b.network.peers_sharing_topics() == 1  # Databases
            assert await received_topics(a, b.peer_id) == {
                "Databases"
            }  # b's Mathematics is another community
            assert await received_topics(b, a.peer_id) == {"Databases"}

            b_scope.cancel()  # the user stops b's node, renames its folder's topic, and runs it again

            async def b_stopped() -> bool:
                return b._closed

            await wait_for(b_stopped)
            with Repository(repository(tmp_path, 1)) as repo:
                rename_topic(repo, "Mathematics", COMMUNITY)
            again = Cooperation(repository(tmp_path, 1), b.network, fast_settings())
            await nursery.start(again.run)

            async def community_models_exchanged() -> bool:
                return COMMUNITY in await received_topics(a, b.peer_id) and COMMUNITY in (
                    await received_topics(again, a.peer_id)
                )

            await wait_for(community_models_exchanged)
            assert again.community(COMMUNITY) == [a.peer_id]
            assert "Mathematics" not in b.network.held_topics()  # the old key's community is left
            assert COMMUNITY not in b.network.nearby_communities()
            nursery.cancel_scope.cancel()


@pytest.mark.trio
async def test_a_node_leaves_the_community_of_a_topic_an_import_dropped(tmp_path):
    async with running_nodes(tmp_path, 2) as (a, b):
        router = a.network.communities.p2p.pubsub

        def b_subscribed() -> bool:
            return b.peer_id in {str(p) for p in router.peer_topics.get(gossip_topic("Mathematics"), ())}

        async def joined() -> bool:
            return b_subscribed()

        await wait_for(joined)
        taxonomy = synthetic_taxonomy(1)
        only_databases = dataclasses.replace(
            taxonomy,
            topics=("Databases",),
            documents=tuple(d for d in taxonomy.documents if d.topic != "Mathematics"),
        )
        with Repository(repository(tmp_path, 1)) as repo:
            store_taxonomy(repo, only_databases)
        await b.topics_changed(["Databases"])

        async def left() -> bool:
            return not b_subscribed()

        await wait_for(left)
        assert "Mathematics" not in b.network.communities.versions
        assert b.peer_id in {str(p) for p in router.peer_topics.get(gossip_topic("Databases"), ())}
