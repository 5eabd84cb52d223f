"""Membership by epidemic push-pull neighbour exchange (thesis 3.3.1).

Each peer keeps a bounded list of (peer id, addresses, last contact time). Every `exchange_period` it picks a
random neighbour and both send their lists (each includes itself, contacted now); both merge, keeping the
younger timestamp of an entry they share, drop entries older than the TTL and trim randomly to the bound.
One live address is enough to join; leaving needs nothing: a dead peer is contacted by nobody, its newest
timestamp stops growing and every list drops it once the TTL has passed.

Two departures from the thesis keep one hostile peer from filling the list with invented ids:
- the trim takes entries from the peer whose list brought the most first (Bitcoin's address manager buckets
  addresses by source for the same reason); a peer contacted directly within the TTL is a group of its own;
- a neighbour an exchange fails with is dropped at once (as in Cyclon), not after the TTL.

`NeighbourList` is the pure logic (a clock is injected; timestamps are unix seconds since they cross
machines); `Membership` runs it over the `/topicswarm/neighbours/1.0.0` protocol.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import trio

from p2p.errors import P2PError
from p2p.message_limits import MAX_ADDRS_PER_PEER, MAX_NEIGHBOURS
from p2p.messages.membership import NeighbourEntry, NeighbourExchange
from p2p.settings import P2PSettings

log = logging.getLogger(__name__)

Clock = Callable[[], float]


@dataclass(frozen=True)
class Neighbour:
    peer_id: str
    addrs: tuple[str, ...]
    last_contact: float


class NeighbourList:
    """The bounded neighbour list of one peer and the thesis's merge rules; no I/O."""

    def __init__(
        self, own_id: str, bound: int, ttl: float, clock: Clock = time.time, rng: random.Random | None = None
    ) -> None:
        if bound < 1 or ttl <= 0:
            raise ValueError("the neighbour list needs bound >= 1 and ttl > 0")
        self.own_id = own_id
        self.bound = min(bound, MAX_NEIGHBOURS - 1)
        self.ttl = ttl
        self.clock = clock
        self.rng = rng or random.Random()
        self._entries: dict[str, Neighbour] = {}
        self._sources: dict[str, str | None] = {}
        """The peer whose list first brought each entry."""
        self._contacted: dict[str, float] = {}
        """When this peer last contacted an entry itself: within the TTL, each is a trim group of its own."""

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, peer_id: object) -> bool:
        return peer_id in self._entries

    def get(self, peer_id: str) -> Neighbour | None:
        return self._entries.get(peer_id)

    def peers(self) -> list[Neighbour]:
        return list(self._entries.values())

    def touch(self, peer_id: str, addrs: Sequence[str] = ()) -> None:
        """Record a direct contact with `peer_id` now (its addresses replace older ones when given)."""
        if peer_id == self.own_id:
            return
        old = self._entries.get(peer_id)
        kept = tuple(addrs)[:MAX_ADDRS_PER_PEER] or (old.addrs if old else ())
        self._entries[peer_id] = Neighbour(peer_id, kept, self.clock())
        self._sources.setdefault(peer_id, peer_id)
        self._contacted[peer_id] = self.clock()
        self._settle()

    def merge(self, entries: Iterable[Neighbour], source: str | None = None) -> None:
        """Take a peer's list (`source`: that peer): shared entries keep the younger timestamp; stale ones
        go, then trim.

        A timestamp from the future (a skewed or lying clock) counts as now, so no entry can outlive the
        TTL by more than one exchange after its last real contact."""
        now = self.clock()
        for entry in entries:
            if entry.peer_id == self.own_id:
                continue
            stamped = Neighbour(entry.peer_id, entry.addrs[:MAX_ADDRS_PER_PEER], min(entry.last_contact, now))
            old = self._entries.get(entry.peer_id)
            if old is None:
                self._sources[entry.peer_id] = source
            if old is None or stamped.last_contact > old.last_contact:
                self._entries[entry.peer_id] = (
                    stamped if stamped.addrs or old is None else _with(old, stamped)
                )
        self._settle()

    def remove(self, peer_id: str) -> None:
        self._entries.pop(peer_id, None)
        self._sources.pop(peer_id, None)
        self._contacted.pop(peer_id, None)

    def expire(self) -> list[str]:
        """Drop entries whose last contact is older than the TTL; their peer ids."""
        horizon = self.clock() - self.ttl
        stale = [p for p, n in self._entries.items() if n.last_contact < horizon]
        for peer_id in stale:
            self.remove(peer_id)
        return stale

    def pick(self) -> Neighbour | None:
        """A random neighbour to exchange with (the thesis picks uniformly)."""
        return self.rng.choice(list(self._entries.values())) if self._entries else None

    def snapshot(self, own_addrs: Sequence[str]) -> list[Neighbour]:
        """What this peer sends: its list plus itself, contacted now."""
        own = Neighbour(self.own_id, tuple(own_addrs)[:MAX_ADDRS_PER_PEER], self.clock())
        return [own, *self._entries.values()]

    def _settle(self) -> None:
        """Expire, then trim to the bound: each entry dropped is a random one of the source that brought
        the most (with one source, as in the thesis, a random entry)."""
        self.expire()
        excess = len(self._entries) - self.bound
        if excess <= 0:
            return
        by_source: dict[tuple[str, str | None], list[str]] = {}
        for peer_id in sorted(self._entries):
            by_source.setdefault(self._trim_group(peer_id), []).append(peer_id)
        groups = list(by_source.values())
        for _ in range(excess):
            largest = max(len(group) for group in groups)
            group = self.rng.choice([group for group in groups if len(group) == largest])
            self.remove(group.pop(self.rng.randrange(len(group))))

    def _trim_group(self, peer_id: str) -> tuple[str, str | None]:
        if self._contacted.get(peer_id, float("-inf")) >= self.clock() - self.ttl:
            return "contacted", peer_id
        return "sent by", self._sources.get(peer_id)


def _with(old: Neighbour, newer: Neighbour) -> Neighbour:
    return Neighbour(old.peer_id, old.addrs, newer.last_contact)


def to_message(entries: Iterable[Neighbour]) -> NeighbourExchange:
    return NeighbourExchange(tuple(NeighbourEntry(n.peer_id, n.addrs, n.last_contact) for n in entries))


def from_message(message: NeighbourExchange) -> list[Neighbour]:
    return [Neighbour(e.peer_id, e.addrs, e.last_contact) for e in message.entries]


def next_exchange_pause(pause: float, settled: bool, settings: P2PSettings) -> float:
    """The pause before the next neighbour exchange: doubled while exchanges leave the node's view of its
    neighbours unchanged and its connections within the bound, up to `max_exchange_period` (and a quarter
    of the TTL, so live peers' contact times stay fresh); back to `exchange_period` on any change. A
    settled community then exchanges rarely, and a joining, moving or dead peer brings the pace back."""
    longest = max(settings.exchange_period, min(settings.max_exchange_period, settings.neighbour_ttl / 4))
    return min(pause * 2, longest) if settled else settings.exchange_period


MAX_RECALLED = 8
"""Most peers of an earlier run a restarting node dials (the most recently contacted): all at once, so a
dead one costs at most `connect_timeout` before the node is up."""


class MembershipError(P2PError):
    """Joining failed: no bootstrap address, and no peer of an earlier run, answered."""


class Membership:
    """Runs the push-pull exchange for one host (`p2p.host.P2PHost`) over `p2p.protocols.Protocols`."""

    def __init__(self, p2p: Any, protocols: Any, clock: Clock = time.time, rng: random.Random | None = None):
        settings = p2p.settings
        self.p2p = p2p
        self.protocols = protocols
        self.settings = settings
        self.neighbours = NeighbourList(
            str(p2p.peer_id), settings.neighbour_list_size, settings.neighbour_ttl, clock, rng
        )
        self.rng = self.neighbours.rng
        self.rounds = 0
        self.recalled: list[Neighbour] = []
        """Peers of an earlier run (`recall`), dialled when no bootstrap address answers."""
        self._remembered: dict[str, tuple[tuple[str, ...], float]] = {}
        """Addresses last put in the peerstore per neighbour and when (refreshed at half the TTL)."""
        protocols.serve_neighbours(self._answer)
        if settings.enable_mdns:
            self._listen_to_mdns()

    def peer_ids(self) -> list[str]:
        return [n.peer_id for n in self.neighbours.peers()]

    def recall(self, entries: Iterable[Neighbour]) -> None:
        """Peers this node knew when it last ran (its saved neighbour list): when no bootstrap address
        answers, or none is given, `join` dials them instead. A restarted node then rejoins without
        `--bootstrap`, and through the others when its bootstrap peer is gone for good."""
        own, blocked = str(self.p2p.peer_id), self.protocols.guard.ledger.is_blocked
        known = [e for e in entries if e.peer_id != own and e.addrs and not blocked(e.peer_id)]
        self.recalled = sorted(known, key=lambda e: e.last_contact, reverse=True)[:MAX_RECALLED]

    async def join(self, bootstrap: Sequence[str] | None = None) -> str:
        """Exchange lists with the first bootstrap address that answers, else with the recalled peers
        that do; the peer id joined through."""
        addrs = list(self.settings.bootstrap if bootstrap is None else bootstrap)
        failures = []
        for addr in addrs:
            try:
                peer = await self.p2p.connect_addr(addr)
                await self.exchange_with(str(peer))
                return str(peer)
            except P2PError as exc:
                failures.append(f"{addr}: {exc}")
                log.warning("bootstrap %s failed: %s", addr, exc)
        joined = await self._rejoin()
        if joined is not None:
            return joined
        if self.recalled:
            failures.append(f"none of the {len(self.recalled)} peers of the last run answered")
        raise MembershipError("no bootstrap address answered: " + "; ".join(failures or ["none given"]))

    async def _rejoin(self) -> str | None:
        """Dial every recalled peer at once and exchange lists with each that answered; the first of them."""
        answered: list[str] = []

        async def dial(entry: Neighbour) -> None:
            try:
                await self.p2p.connect(_peer(entry.peer_id), entry.addrs)
            except P2PError as exc:
                log.info("peer %s of the last run did not answer: %s", entry.peer_id, exc)
                return
            answered.append(entry.peer_id)

        async with trio.open_nursery() as nursery:
            for entry in self.recalled:
                nursery.start_soon(dial, entry)
        joined = None
        for peer_id in answered:
            try:
                await self.exchange_with(peer_id)
            except P2PError as exc:
                log.info("neighbour exchange with %s of the last run failed: %s", peer_id, exc)
                continue
            joined = joined or peer_id
        if joined is not None:
            log.info("rejoined through %d of %d peers of the last run", len(answered), len(self.recalled))
        return joined

    async def exchange_with(self, peer_id: str) -> None:
        """One push-pull exchange with `peer_id` (dialled first if not connected)."""
        entry = self.neighbours.get(peer_id)
        if not self._connected(peer_id) and entry is not None:
            await self.p2p.connect(_peer(peer_id), entry.addrs)
        reply = await self.protocols.exchange_neighbours(peer_id, self._mine())
        self._learn(peer_id, reply)
        self.rounds += 1

    async def exchange_once(self) -> str | None:
        """Expire, pick a neighbour and exchange with it (dropping it if that fails), then close surplus
        connections; the peer contacted, or None."""
        self.neighbours.expire()
        await self.drop_blocked()
        target = self.pick_target()
        if target is not None:
            try:
                await self.exchange_with(target.peer_id)
            except P2PError as exc:  # dead or invented: dropped now (as Cyclon does), not after the TTL
                log.info("neighbour exchange with %s failed, dropped from the list: %s", target.peer_id, exc)
                self.neighbours.remove(target.peer_id)
        await self.p2p.trim_connections(self.settings.max_connections, self._last_contact)
        return target.peer_id if target is not None else None

    def pick_target(self) -> Neighbour | None:
        """A random connected neighbour once the node has gossip_degree of them, else any neighbour.

        The thesis picks uniformly from the whole list; over a network of N peers that dials a new peer
        on most exchanges and, with connections kept, ends with every node connected to its whole list.
        Exchanging over open connections costs a stream instead of a handshake; a node short of
        connections still picks from the whole list, which is how the overlay stays random and connected.
        """
        connected = [n for n in self.neighbours.peers() if self._connected(n.peer_id)]
        if len(connected) >= min(self.settings.gossip_degree, self.settings.max_connections):
            return self.rng.choice(connected)
        return self.neighbours.pick()

    async def drop_blocked(self) -> None:
        """Close the connections of peers the user blocked (one may dial this node: its requests are
        refused, and its connection does not stay)."""
        blocked = self.protocols.guard.ledger.is_blocked
        for peer in [p for p in self.p2p.connected_peers() if blocked(str(p))]:
            await self.p2p.disconnect(peer)

    def _last_contact(self, peer: Any) -> float:
        entry = self.neighbours.get(str(peer))
        return entry.last_contact if entry is not None else float("-inf")

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Join (through the bootstrap addresses or the recalled peers) and exchange every `exchange_period`
        until cancelled."""
        if self.settings.bootstrap or self.recalled:
            try:
                await self.join()
            except MembershipError as exc:
                log.warning("%s; waiting to be contacted", exc)
        task_status.started()
        pause, view = self.settings.exchange_period, self._view()
        while True:
            # jitter keeps a crowd started together from exchanging in lock step
            await trio.sleep(pause * self.rng.uniform(0.5, 1.5))
            if not len(self.neighbours) and (self.settings.bootstrap or self.recalled):
                with contextlib.suppress(MembershipError):  # alone again: the bootstrap may be back
                    await self.join()
            await self.exchange_once()
            seen, bounded = self._view(), len(self.p2p.connected_peers()) <= self.settings.max_connections
            pause, view = next_exchange_pause(pause, bounded and seen == view, self.settings), seen

    def _view(self) -> frozenset[tuple[str, tuple[str, ...]]]:
        """The peers this node knows and their addresses (not contact times: every exchange moves them)."""
        return frozenset((n.peer_id, tuple(n.addrs)) for n in self.neighbours.peers())

    def _mine(self) -> NeighbourExchange:
        return to_message(self.neighbours.snapshot(self.p2p.transport_addrs()))

    async def _answer(self, peer: str, request: NeighbourExchange) -> NeighbourExchange:
        mine = self._mine()
        self._learn(peer, request)
        return mine

    def _learn(self, peer: str, message: NeighbourExchange) -> None:
        blocked = self.protocols.guard.ledger.is_blocked  # other peers still list a peer the user blocked
        entries = [e for e in from_message(message) if not blocked(e.peer_id)]
        self.neighbours.merge(entries, source=peer)
        own_entry = next((e for e in entries if e.peer_id == peer), None)
        if not blocked(peer):
            self.neighbours.touch(peer, own_entry.addrs if own_entry else ())
        now = self.neighbours.clock()
        ttl = self.settings.neighbour_ttl
        for entry in self.neighbours.peers():
            # re-adding every entry's addresses on every exchange parsed ~40 multiaddrs per exchange
            addrs, at = self._remembered.get(entry.peer_id, ((), float("-inf")))
            if addrs != entry.addrs or at < now - ttl / 2:
                self.p2p.remember(_peer(entry.peer_id), entry.addrs, ttl)
                self._remembered[entry.peer_id] = (entry.addrs, now)
        for gone in self._remembered.keys() - {n.peer_id for n in self.neighbours.peers()}:
            del self._remembered[gone]

    def _connected(self, peer_id: str) -> bool:
        return self.p2p.is_connected(_peer(peer_id))

    def _listen_to_mdns(self) -> None:
        from libp2p.discovery.events.peerDiscovery import peerDiscovery

        def discovered(info: Any) -> None:
            if not self.protocols.guard.ledger.is_blocked(str(info.peer_id)):
                self.neighbours.touch(str(info.peer_id), [str(a) for a in info.addrs])

        peerDiscovery.register_peer_discovered_handler(discovered)


def _peer(peer_id: str) -> Any:
    from libp2p.peer.id import ID

    return ID.from_base58(peer_id)
