"""A new model version is not lost when the announcer's gossip mesh is empty or thin at the moment it is
announced: it waits for a mesh peer, and one sent over a single mesh peer is sent again after a heartbeat.

Gossipsub pushes a publish to the topic's mesh peers only; a node that just joined often has the bootstrap
as its one mesh peer, or none right after a PRUNE, and what it sent to nobody was only heard at the next
periodic re-announcement (a minute or more)."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
import trio
from libp2p.crypto.ed25519 import create_new_key_pair
from libp2p.peer.id import ID

from p2p.communities import Communities, gossip_topic
from p2p.settings import P2PSettings

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # see conftest


class RecordingPubsub:
    """The part of py-libp2p's Pubsub that Communities publishes through; remembers when it published."""

    def __init__(self, peers: set) -> None:
        self.peers = peers
        self.peer_topics: dict = {}
        self.sent: list[float] = []

    async def publish(self, topic: str, frame: bytes) -> None:
        self.sent.append(trio.current_time())


def communities_with_mesh(mesh: set) -> tuple[Communities, RecordingPubsub]:
    pubsub = RecordingPubsub(peers=set(mesh))
    p2p = SimpleNamespace(
        settings=P2PSettings(announce_interval=60.0, gossip_heartbeat=1, gossip_degree=6),
        pubsub=pubsub,
        gossipsub=SimpleNamespace(mesh={gossip_topic("t"): mesh}, fanout={}),
        peer_id=ID.from_pubkey(create_new_key_pair().public_key),
    )
    communities = Communities(p2p, guard=None, clock=trio.current_time)
    communities.versions["t"] = 0
    communities._refresh_at["t"] = 1e9  # no periodic re-announcement within the test
    return communities, pubsub


async def run_for(communities: Communities, seconds: float) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(communities._announce_loop)
        await trio.sleep(seconds)
        nursery.cancel_scope.cancel()


@pytest.mark.trio
async def test_new_version_over_a_single_mesh_peer_is_sent_again_after_a_heartbeat(autojump_clock):
    communities, pubsub = communities_with_mesh({"bootstrap"})
    communities.announce("t", 1)
    await run_for(communities, 10.0)
    assert len(pubsub.sent) == 2
    assert pubsub.sent[1] - pubsub.sent[0] >= 1.0


@pytest.mark.trio
async def test_new_version_over_a_full_mesh_is_sent_once(autojump_clock):
    communities, pubsub = communities_with_mesh({f"p{i}" for i in range(6)})
    communities.announce("t", 1)
    await run_for(communities, 10.0)
    assert len(pubsub.sent) == 1


@pytest.mark.trio
async def test_new_version_waits_while_the_mesh_is_empty_and_goes_once_a_peer_is_grafted(autojump_clock):
    mesh: set = set()
    communities, pubsub = communities_with_mesh(mesh)
    communities.announce("t", 1)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(communities._announce_loop)
        await trio.sleep(5.0)
        assert pubsub.sent == []
        mesh.update(f"p{i}" for i in range(6))
        pubsub.peers.update(mesh)
        await trio.sleep(2.0)
        nursery.cancel_scope.cancel()
    assert len(pubsub.sent) == 1


@pytest.mark.trio
@pytest.mark.slow
async def test_version_announced_before_anyone_subscribed_reaches_a_peer_that_joins_later(collect_leaks):
    from p2p.service import start_service

    settings = P2PSettings(
        listen_addrs=("/ip4/127.0.0.1/tcp/0",),
        announce_interval=120.0,
        request_timeout=10.0,
        dht_enabled=False,
    )
    heard: list = []

    async def hear(announcement) -> None:
        heard.append(announcement)

    with trio.fail_after(60):
        async with start_service(settings) as first:
            await first.communities.hold("t")
            first.communities.announce("t", 1)
            # with nobody subscribed the first chance passes, and so does gossipsub's IHAVE gossip of its
            # message cache (3 heartbeats), which would otherwise tell a peer joining within that window
            await trio.sleep(5.0)
            joined = dataclasses.replace(settings, bootstrap=(first.addrs()[0],))
            async with start_service(joined) as second:
                second.communities.on_announcement = hear
                await second.communities.hold("t")
                with trio.fail_after(20):  # the periodic re-announcement comes after 90-150 s
                    while not any(a.peer_id == first.peer_id and a.model_version == 1 for a in heard):
                        await trio.sleep(0.1)


class CountingClock:
    """trio's clock, counting its readings: the announce loop reads it once or more per pass, so a loop
    that passes without waiting reads it without bound (and raises here instead of hanging the test)."""

    def __init__(self, limit: int = 10_000) -> None:
        self.readings = 0
        self.limit = limit

    def __call__(self) -> float:
        self.readings += 1
        if self.readings > self.limit:
            raise RuntimeError("the announce loop passes without waiting")
        return trio.current_time()


@pytest.mark.trio
async def test_a_node_alone_waits_between_tries_of_a_new_version_instead_of_spinning(autojump_clock):
    communities, pubsub = communities_with_mesh(set())
    del communities._refresh_at["t"]  # a key never announced yet, as after `hold` on a node without peers
    clock = CountingClock()
    communities.clock = clock
    communities.announce("t", 1)
    await run_for(communities, 30.0)
    assert pubsub.sent == []
    assert clock.readings < 400  # one try a heartbeat (1 s) for 30 s, a few readings each
