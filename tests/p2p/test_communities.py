from __future__ import annotations

import pytest
import trio

from p2p.communities import provider_key
from p2p.wire_testing import own_model, wait_until

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # see conftest


@pytest.mark.trio
@pytest.mark.slow
async def test_published_model_reaches_every_community_peer_and_no_peer_outside(start_services):
    with trio.fail_after(60):
        async with start_services(4) as nodes:
            received: dict[str, list] = {n.peer_id: [] for n in nodes}
            for node in nodes:
                node.on_model(lambda model, peer, node=node: received[node.peer_id].append((model, peer)))
            for node in nodes[1:3]:
                await node.hold_topic("databases")
            await nodes[3].hold_topic("astronomy")
            signed = await nodes[0].publish_model("databases", own_model(nodes[0], "databases"))
            await wait_until(lambda: all(received[n.peer_id] for n in nodes[1:3]), timeout=40)
            for node in nodes[1:3]:
                model, peer = received[node.peer_id][0]
                assert peer == nodes[0].peer_id
                assert model == signed
            await trio.sleep(1.5)  # several announcement periods more: the outsider still hears nothing
            assert received[nodes[3].peer_id] == []
            assert received[nodes[0].peer_id] == []  # gossipsub echoes a publisher's own messages: ignored
            assert nodes[0].peer_id in nodes[1].communities.community("databases")
            assert "databases" not in nodes[3].communities.versions


@pytest.mark.trio
async def test_a_newcomer_finds_a_community_through_deduplicated_dht_providers(start_hosts):
    from p2p.communities import Communities
    from p2p.protocols import Protocols

    with trio.fail_after(30):
        async with start_hosts(2) as (a, b):
            await b.connect_addr(a.addrs()[0])
            await a.dht.add_peer(b.peer_id, skip_server_mode_check=True)
            for _ in range(3):  # providing again must not list the peer again
                await a.dht.provide(provider_key("databases"))
            communities = Communities(b, Protocols(b).guard)
            providers = await communities.find_providers("databases")
            assert [peer for peer, _ in providers] == [str(a.peer_id)]
            assert await communities.find_providers("astronomy") == []


@pytest.mark.trio
async def test_the_peers_heard_on_a_topic_are_bounded_the_longest_unheard_going_first(monkeypatch):
    """Announcements signed by throwaway keys each made a member, and the list grew without end."""
    from types import SimpleNamespace

    from libp2p.peer.id import ID

    from p2p import communities
    from p2p.communities import Announcement, Communities
    from p2p.settings import P2PSettings
    from p2p.wire_testing import wire_key

    monkeypatch.setattr(communities, "MAX_MEMBERS", 3)
    senders = [wire_key(i).peer_id for i in range(1, 7)]
    hub = Communities(SimpleNamespace(settings=P2PSettings(), peer_id="self"), guard=None)
    hub._decode = lambda sender, key, data: Announcement(key, sender, 1)
    queue = list(senders)

    class Subscription:
        async def get(self):
            if len(queue) == 1:
                hub._subscriptions.clear()  # the last message, then the listener stops
            await trio.sleep(0.01)  # heard one after another
            return SimpleNamespace(from_id=ID.from_base58(queue.pop(0)).to_bytes(), data=b"")

    hub._subscriptions["databases"] = Subscription()
    await hub._listen("databases", hub._subscriptions["databases"])
    assert sorted(hub.members["databases"]) == sorted(senders[-3:])


@pytest.mark.trio
async def test_a_newcomer_dials_the_dht_providers_of_its_topic_but_not_a_banned_or_blocked_peer():
    from types import SimpleNamespace

    from p2p.communities import Communities
    from p2p.settings import P2PSettings
    from p2p.wire_testing import wire_key

    member, blocked, gone = (wire_key(i).peer_id for i in (1, 2, 3))
    dialled = []

    async def connect(peer, addrs):
        if str(peer) == gone:
            raise OSError("connection refused")
        dialled.append((str(peer), addrs))

    async def find_providers(key, count=20):
        return [(peer, [f"/ip4/127.0.0.1/tcp/{n}"]) for n, peer in enumerate((member, blocked, gone))]

    p2p = SimpleNamespace(settings=P2PSettings(), peer_id="self", connect=connect)
    guard = SimpleNamespace(ledger=SimpleNamespace(is_banned=lambda peer: peer == blocked))
    communities = Communities(p2p, guard)
    communities.find_providers = find_providers
    assert await communities.join_through_providers("databases") == [member]
    assert dialled == [(member, ["/ip4/127.0.0.1/tcp/0"])]


@pytest.mark.trio
async def test_the_provider_loop_looks_up_only_the_held_topics_no_peer_was_heard_on():
    from types import SimpleNamespace

    from p2p.communities import Communities
    from p2p.settings import P2PSettings

    provided, joined = [], []

    async def provide(key):
        provided.append(key)

    async def join(key):
        joined.append(key)
        return []

    dht, pubsub = SimpleNamespace(provide=provide), SimpleNamespace(peer_topics={})
    p2p = SimpleNamespace(settings=P2PSettings(), peer_id="self", dht=dht, pubsub=pubsub)
    communities = Communities(p2p, guard=None)
    communities.versions = {"astronomy": 1, "databases": 1}
    communities.members["astronomy"] = {"12D3KooWHeard": 0.0}
    communities.join_through_providers = join
    with trio.move_on_after(0.5):  # one pass: the next is announce_interval * 5 away
        await communities._provide_periodically()
    assert provided == [provider_key("astronomy"), provider_key("databases")] and joined == ["databases"]
