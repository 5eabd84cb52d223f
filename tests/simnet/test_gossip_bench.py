"""The gossip benchmark's pull rule (simnet.bench.gossip): whom a peer asks, and what a peer answers."""

import pytest
import trio

from simnet.bench.gossip import BenchConfig, PeerState, Puller, ask_order

CONFIG = BenchConfig(
    fanout=2,
    nonzero=10,
    training_docs=1,
    exchange_period=10.0,
    gossip_heartbeat=1,
    gossip_degree=6,
    reannounce_rate=1.0,
    retry_delay=0.5,
    dial_patience=10.0,
    ask_gap=2.0,
    fanout_window=10.0,
)


class RecordingNursery:
    def __init__(self) -> None:
        self.started: list = []

    def start_soon(self, fn, *args) -> None:
        self.started.append(fn)


def test_mesh_neighbours_are_asked_before_other_connections():
    mesh, connected = {"m1", "m2", "m3"}, {"m1", "m2", "m3", "c1", "c2"}
    for _ in range(20):
        order = ask_order(mesh, connected, "publisher", patience_over=False)
        assert set(order[:3]) == mesh
        assert set(order[3:]) == {"c1", "c2"}


def test_a_mesh_peer_that_is_no_longer_connected_is_not_asked():
    order = ask_order({"m1", "gone"}, {"m1", "c1"}, None, patience_over=False)
    assert sorted(order) == ["c1", "m1"]


def test_an_unconnected_publisher_is_asked_only_after_patience_and_last():
    connected = {"a", "b"}
    assert "publisher" not in ask_order(connected, connected, "publisher", patience_over=False)
    order = ask_order(connected, connected, "publisher", patience_over=True)
    assert order[-1] == "publisher" and len(order) == 3


def test_a_connected_publisher_is_asked_once_like_any_neighbour():
    order = ask_order({"publisher", "a"}, {"publisher", "a", "b"}, "publisher", patience_over=True)
    assert sorted(order) == ["a", "b", "publisher"]


def test_askers_of_one_round_spread_over_the_neighbours():
    mesh = {f"m{i}" for i in range(6)}
    firsts = {ask_order(mesh, mesh, None, patience_over=False)[0] for _ in range(200)}
    assert firsts == mesh


@pytest.mark.trio
async def test_a_holder_serves_its_fanout_then_answers_none():
    me = PeerState(model="model", version=1)
    puller = Puller(None, me, {}, CONFIG, RecordingNursery())
    served = [await puller.provide("bench/topic", 1) for _ in range(4)]
    assert served == ["model", "model", None, None]


@pytest.mark.trio
async def test_a_holder_serves_again_once_its_fanout_window_has_passed(autojump_clock):
    me = PeerState(model="model", version=1)
    puller = Puller(None, me, {}, CONFIG, RecordingNursery())
    assert [await puller.provide("bench/topic", 1) for _ in range(3)] == ["model", "model", None]
    await trio.sleep(CONFIG.fanout_window / 2)
    assert await puller.provide("bench/topic", 1) is None
    await trio.sleep(CONFIG.fanout_window / 2)
    assert await puller.provide("bench/topic", 1) == "model"
    assert me.uploads == 3


@pytest.mark.trio
async def test_a_request_for_an_unheard_version_starts_the_pull_once():
    me, nursery = PeerState(), RecordingNursery()
    puller = Puller(None, me, {}, CONFIG, nursery)
    assert await puller.provide("bench/topic", 1) is None
    assert await puller.provide("bench/topic", 1) is None
    assert me.version == 1 and me.heard_from_request
    assert nursery.started == [puller.pull]


@pytest.mark.trio
async def test_a_request_for_the_latest_version_teaches_nothing():
    me, nursery = PeerState(), RecordingNursery()
    puller = Puller(None, me, {}, CONFIG, nursery)
    assert await puller.provide("bench/topic", None) is None
    assert me.version == 0 and nursery.started == []
