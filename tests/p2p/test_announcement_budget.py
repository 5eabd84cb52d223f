"""Announcements of a node with many topics: it sends them at `announce_rate_total` over all its topics,
and a peer's burst past its budget is dropped without counting against it. 150 topics announced at once
had got a node banned by its peers within a second."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import trio
from trio.testing import MockClock

from p2p.codec import encode_frame
from p2p.communities import Communities, gossip_topic
from p2p.limits import PeerGuard, PeerLedger, RateLimiter
from p2p.messages.membership import TopicAnnouncement, TopicEntry
from p2p.settings import P2PSettings

KEYS = [f"Topic {i:03d}" for i in range(150)]
PEER = "12D3KooWPeer"


def communities(**settings: object) -> Communities:
    mesh = {gossip_topic(key): {PEER} for key in KEYS}
    p2p = SimpleNamespace(
        settings=dataclasses.replace(P2PSettings(), **settings),
        peer_id="12D3KooWMe",
        pubsub=SimpleNamespace(peers={PEER}, peer_topics={}),
        gossipsub=SimpleNamespace(mesh=mesh, fanout={}),
    )
    guard = PeerGuard(RateLimiter(20.0, 40), PeerLedger(max_violations=20))
    return Communities(p2p, guard)


def test_a_node_announces_its_150_topics_at_its_total_rate_not_all_at_once():
    sent: list[float] = []

    async def run() -> None:
        found = communities(announce_rate_total=8.0)
        found.versions.update(dict.fromkeys(KEYS, 1))
        found._dirty.update(KEYS)

        async def publish(key: str) -> None:
            sent.append(trio.current_time())

        found._publish = publish
        with trio.move_on_after(60):
            await found._announce_loop()

    trio.run(run, clock=MockClock(autojump_threshold=0))
    assert len(sent) >= 150  # every topic, then the periodic re-announcements
    first = sent[0]
    for at in sent:
        assert sum(1 for t in sent if t <= at) <= 16 + 8.0 * (at - first) + 1e-9


def test_a_burst_of_announcements_past_a_peers_budget_is_dropped_without_a_violation():
    found = communities()
    heard = []
    for key in KEYS:
        frame = encode_frame(TopicAnnouncement(PEER, (TopicEntry(key, 1),)), TopicAnnouncement.MAX_FRAME)
        heard.append(found._decode(PEER, key, frame))  # as gossipsub delivers what `_publish` sent
    assert sum(a is not None for a in heard) == 40  # the burst, then nothing within the same instant
    assert found.dropped == 110
    assert found.guard.ledger.record_of(PEER) is None
