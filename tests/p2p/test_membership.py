from __future__ import annotations

import dataclasses
import random
from types import SimpleNamespace

import pytest
import trio
from libp2p.peer.id import ID

from p2p.errors import P2PError
from p2p.membership import Membership, Neighbour, NeighbourList, next_exchange_pause
from p2p.messages.membership import NeighbourEntry, NeighbourExchange
from p2p.settings import P2PSettings
from p2p.wire_testing import wait_until

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # see conftest


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def make_list(bound: int = 10, ttl: float = 60.0, clock: FakeClock | None = None) -> NeighbourList:
    return NeighbourList("me", bound, ttl, clock or FakeClock(), random.Random(7))


def test_merge_keeps_the_younger_timestamp_of_a_shared_entry():
    neighbours = make_list()
    neighbours.merge([Neighbour("a", ("/ip4/127.0.0.1/tcp/1",), 990.0)])
    neighbours.merge([Neighbour("a", ("/ip4/127.0.0.1/tcp/2",), 980.0)])
    assert neighbours.get("a") == Neighbour("a", ("/ip4/127.0.0.1/tcp/1",), 990.0)
    neighbours.merge([Neighbour("a", ("/ip4/127.0.0.1/tcp/3",), 995.0)])
    assert neighbours.get("a") == Neighbour("a", ("/ip4/127.0.0.1/tcp/3",), 995.0)


def test_own_entry_is_never_kept():
    neighbours = make_list()
    neighbours.merge([Neighbour("me", (), 999.0), Neighbour("a", (), 999.0)])
    assert [n.peer_id for n in neighbours.peers()] == ["a"]


def test_entries_older_than_the_ttl_are_dropped():
    clock = FakeClock()
    neighbours = make_list(ttl=60.0, clock=clock)
    neighbours.merge([Neighbour("old", (), 930.0), Neighbour("young", (), 990.0)])
    assert "old" not in neighbours and "young" in neighbours
    clock.now = 1051.0
    assert neighbours.expire() == ["young"]
    assert len(neighbours) == 0


def test_future_timestamps_count_as_now_so_they_still_expire():
    clock = FakeClock()
    neighbours = make_list(ttl=60.0, clock=clock)
    neighbours.merge([Neighbour("liar", (), 1e9)])
    clock.now = 1061.0
    neighbours.expire()
    assert "liar" not in neighbours


def test_list_is_trimmed_randomly_to_the_bound():
    neighbours = make_list(bound=5)
    neighbours.merge([Neighbour(f"p{i}", (), 999.0) for i in range(20)])
    assert len(neighbours) == 5
    other = NeighbourList("me", 5, 60.0, FakeClock(), random.Random(8))
    other.merge([Neighbour(f"p{i}", (), 999.0) for i in range(20)])
    assert {n.peer_id for n in neighbours.peers()} != {n.peer_id for n in other.peers()}


def test_one_exchange_of_invented_ids_cannot_push_out_the_honest_neighbours():
    """A hostile peer sends 254 made-up entries: the trim takes them first, down to a source's share."""
    neighbours = NeighbourList("me", 40, 600.0, FakeClock(), random.Random(4))
    for source in ("a", "b", "c", "d"):
        neighbours.touch(source)
        neighbours.merge([Neighbour(f"{source}{i}", (), 999.0) for i in range(9)], source=source)
    honest = {n.peer_id for n in neighbours.peers()}
    assert len(honest) == 40
    neighbours.merge([Neighbour(f"fake{i}", (), 1000.0) for i in range(254)], source="liar")
    kept = {n.peer_id for n in neighbours.peers()}
    assert len(kept) == 40
    assert len(kept & honest) >= 30
    assert {"a", "b", "c", "d"} <= kept  # peers contacted directly are their own source


class FakeHost:
    """What Membership needs from a host that cannot reach anybody."""

    def __init__(self) -> None:
        self.settings = P2PSettings(neighbour_list_size=20)
        self.peer_id = "me"

    def remember(self, *args: object) -> None:
        pass

    def connected_peers(self) -> list[str]:
        return []

    def is_connected(self, peer: object) -> bool:
        return False

    async def connect(self, peer: object, addrs: object) -> None:
        raise P2PError(f"{peer} did not answer")

    async def trim_connections(self, *args: object) -> None:
        pass


def fake_membership() -> Membership:
    ledger = SimpleNamespace(is_blocked=lambda peer: False)
    protocols = SimpleNamespace(serve_neighbours=lambda answer: None, guard=SimpleNamespace(ledger=ledger))
    return Membership(FakeHost(), protocols, clock=FakeClock(), rng=random.Random(2))


def exchange(peer_ids: list[str], at: float) -> NeighbourExchange:
    return NeighbourExchange(tuple(NeighbourEntry(p, ("/ip4/127.0.0.1/tcp/9",), at) for p in peer_ids))


PEER_IDS = [ID(random.Random(i).randbytes(34)).to_base58() for i in range(300)]


def test_a_node_counts_the_exchanging_peer_as_the_source_of_what_it_sent():
    membership = fake_membership()
    honest, invented, liar = PEER_IDS[:20], PEER_IDS[20:274], PEER_IDS[299]
    for i in range(0, 20, 5):
        membership._learn(honest[i], exchange(honest[i : i + 5], 999.0))
    membership._learn(liar, exchange(invented, 1000.0))
    assert len(set(membership.peer_ids()) & set(honest)) >= 15


@pytest.mark.trio
async def test_a_neighbour_that_does_not_answer_an_exchange_is_dropped_at_once():
    membership = fake_membership()
    membership._learn(PEER_IDS[0], exchange(PEER_IDS[:3], 999.0))
    dead = await membership.exchange_once()
    assert dead in PEER_IDS[:3]
    assert dead not in membership.peer_ids()
    assert len(membership.peer_ids()) == 2


def test_a_source_keeps_a_fair_share_so_new_peers_still_come_in():
    neighbours = NeighbourList("me", 10, 600.0, FakeClock(), random.Random(4))
    neighbours.merge([Neighbour(f"old{i}", (), 999.0) for i in range(10)], source="old")
    neighbours.merge([Neighbour(f"new{i}", (), 999.0) for i in range(10)], source="new")
    kept = [n.peer_id for n in neighbours.peers()]
    assert sum(p.startswith("new") for p in kept) == 5


def test_snapshot_includes_self_contacted_now():
    clock = FakeClock(1234.0)
    neighbours = make_list(clock=clock)
    neighbours.touch("a", ["/ip4/127.0.0.1/tcp/9"])
    snapshot = neighbours.snapshot(["/ip4/127.0.0.1/tcp/1"])
    assert snapshot[0] == Neighbour("me", ("/ip4/127.0.0.1/tcp/1",), 1234.0)
    assert snapshot[1] == Neighbour("a", ("/ip4/127.0.0.1/tcp/9",), 1234.0)


def test_epidemic_spreads_over_many_lists_in_a_few_rounds():
    """Push-pull between random neighbours: 64 peers knowing only peer 0 all learn one another's ids."""
    clock = FakeClock()
    rng = random.Random(3)
    lists = {f"p{i}": NeighbourList(f"p{i}", 40, 600.0, clock, rng) for i in range(64)}
    for name, neighbours in lists.items():
        if name != "p0":
            neighbours.touch("p0")
    for _ in range(12):
        for neighbours in lists.values():
            target = neighbours.pick()
            if target is None:
                continue
            mine, theirs = neighbours.snapshot([]), lists[target.peer_id].snapshot([])
            lists[target.peer_id].merge(mine)
            neighbours.merge(theirs)
    assert all(len(neighbours) == 40 for neighbours in lists.values())
    assert len(set().union(*({n.peer_id for n in nl.peers()} for nl in lists.values()))) == 64


@pytest.mark.trio
async def test_three_peers_join_through_one_bootstrap_address_and_learn_each_other(start_services):
    with trio.fail_after(30):
        async with start_services(3) as nodes:
            ids = {n.peer_id for n in nodes}
            await wait_until(
                lambda: all(set(n.membership.peer_ids()) == ids - {n.peer_id} for n in nodes), timeout=20
            )


@pytest.mark.trio
@pytest.mark.slow
async def test_killed_peer_disappears_from_the_others_lists_after_the_ttl(start_services):
    ttl = 2.0
    with trio.fail_after(40):
        async with start_services(3, neighbour_ttl=ttl) as nodes:
            ids = {n.peer_id for n in nodes}
            await wait_until(
                lambda: all(set(n.membership.peer_ids()) == ids - {n.peer_id} for n in nodes), timeout=20
            )
            dead = nodes[2]
            dead.kill()
            await wait_until(lambda: all(dead.peer_id not in n.membership.peer_ids() for n in nodes[:2]), 20)
            assert nodes[1].peer_id in nodes[0].membership.peer_ids()


def test_exchange_pause_doubles_while_settled_up_to_its_cap_and_resets_on_a_change():
    settings = P2PSettings(exchange_period=10.0, max_exchange_period=60.0, neighbour_ttl=300.0)
    pauses = [10.0]
    for _ in range(4):
        pauses.append(next_exchange_pause(pauses[-1], True, settings))
    assert pauses == [10.0, 20.0, 40.0, 60.0, 60.0]
    assert next_exchange_pause(60.0, False, settings) == 10.0


def test_exchange_pause_stays_under_a_quarter_of_the_ttl_so_live_peers_stay_fresh():
    settings = P2PSettings(exchange_period=0.2, max_exchange_period=60.0, neighbour_ttl=2.0)
    assert next_exchange_pause(0.4, True, settings) == 0.5
    settings = P2PSettings(exchange_period=5.0, max_exchange_period=60.0, neighbour_ttl=8.0)
    assert next_exchange_pause(5.0, True, settings) == 5.0  # never shorter than exchange_period


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.trio
async def test_a_peer_whose_bootstrap_is_gone_rejoins_through_the_peers_it_recalls(start_services):
    from p2p.service import start_service
    from p2p.wire_testing import wire_key

    with trio.fail_after(40):
        async with start_services(2) as (first, second):
            await wait_until(lambda: second.peer_id in first.membership.peer_ids(), timeout=20)
            known = first.neighbours()
            gone = Neighbour(wire_key(1).peer_id, (f"/ip4/127.0.0.1/tcp/{closed_port()}",), 2e9)
            # most recently contacted first: the dead peer is dialled too, and costs no more than a timeout
            dead = f"/ip4/127.0.0.1/tcp/{closed_port()}/p2p/{wire_key(2).peer_id}"
            settings = dataclasses.replace(first.p2p.settings, bootstrap=(dead,))  # loopback, as in the test
            async with start_service(settings, recalled=[gone, *known]) as restarted:
                assert restarted.membership.recalled[0] == gone
                await wait_until(
                    lambda: {first.peer_id, second.peer_id} <= set(restarted.membership.peer_ids()), 20
                )
                assert gone.peer_id not in restarted.membership.peer_ids()


@pytest.mark.trio
async def test_recalled_peers_are_only_the_most_recent_others_with_addresses(start_hosts):
    from p2p.membership import MAX_RECALLED, Membership
    from p2p.protocols import Protocols
    from p2p.wire_testing import wire_key

    async with start_hosts(1) as (host,):
        membership = Membership(host, Protocols(host))
        addr = ("/ip4/127.0.0.1/tcp/1",)
        others = [Neighbour(wire_key(i).peer_id, addr, float(i)) for i in range(2, 2 + MAX_RECALLED + 3)]
        own = Neighbour(str(host.peer_id), addr, 1e9)
        silent = Neighbour(wire_key(99).peer_id, (), 1e9)
        membership.recall([own, silent, *others])
        assert membership.recalled == sorted(others, key=lambda n: -n.last_contact)[:MAX_RECALLED]
