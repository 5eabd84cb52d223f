"""Topic communities: the peers that hold a topic key, found through gossipsub and DHT provider records.

A node subscribes to one gossipsub topic per key it holds (`topicswarm/topic/<key>`), so an announcement on
it reaches every peer of the community and no peer outside it. Announcements are small `TopicAnnouncement`
frames: changes are coalesced until the next send, each gossip topic gets at most
`announce_rate_per_topic` messages per second (gossipsub silently drops above about 10 per peer and topic)
and every frame stays far under gossipsub's silent 1 MiB cap. A newcomer finds a community through the
DHT's provider records for the key; the DHT can list one provider several times, so results are deduplicated.

Periodic re-announcements (what tells newcomers who holds a key) share one budget per topic: a member
re-announces every max(`announce_interval`, community size / `reannounce_rate_per_topic`) seconds, jittered.
With a fixed interval the topic's message rate grew with the community and every message reaches every
member, so the gossip work of a community grew as N^2: at 10 members re-announcing every 0.5 s each router
handled about 70 deliveries a second, in-process networks saturated the CPU and multiselect on a new stream
took seconds (model fetches timed out), and forwarders exceeded gossipsub's 10 messages/s spam limit.

Gossipsub sends a publish to the topic's mesh peers only, and a message sent to nobody is gone: a node
announcing right after joining often has a mesh of one peer (in the 30-host benchmark the publisher's mesh
was the bootstrap alone in 9 of 9 runs) or none for a moment (a PRUNE from a crowded peer). So a new
version is held back while the topic has no mesh peer to send it to (tried again every heartbeat), and sent
a second time after a heartbeat when its first announcement had fewer than gossip_degree - 2 mesh peers.
Without this, such a model waited for the periodic re-announcement, a minute or more.
"""

from __future__ import annotations

import hashlib
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import trio

from p2p.codec import decode_frame, encode_frame
from p2p.errors import WireError
from p2p.limits import RateLimiter
from p2p.message_limits import MAX_ANNOUNCED_TOPICS
from p2p.messages.membership import TopicAnnouncement, TopicEntry
from p2p.value_checks import check_topic

log = logging.getLogger(__name__)

GOSSIP_PREFIX = "topicswarm/topic/"
DHT_PREFIX = "topicswarm:topic:"
HEADER_SIZE = 4
MAX_MEMBERS = 256  # peers heard announcing one topic that are remembered; the longest unheard goes first
MAX_NEARBY = 20  # communities of connected peers listed to the user, the largest first


def gossip_topic(key: str) -> str:
    return GOSSIP_PREFIX + key


def provider_key(key: str) -> str:
    """A hex multihash-free key for the DHT: sha256 of the topic key (the DHT takes hex as raw bytes)."""
    return hashlib.sha256((DHT_PREFIX + key).encode()).hexdigest()


@dataclass(frozen=True)
class Announcement:
    """A peer of the community says it holds `key`, with its newest model version (0: none yet)."""

    key: str
    peer_id: str
    model_version: int


OnAnnouncement = Callable[[Announcement], Awaitable[None]]


class Communities:
    """The topic keys one node holds, announced on gossipsub and in the DHT; a callback hears the others."""

    def __init__(
        self, p2p: Any, guard: Any, on_announcement: OnAnnouncement | None = None, clock=time.monotonic
    ):
        self.p2p = p2p
        self.guard = guard
        self.settings = p2p.settings
        self.on_announcement = on_announcement
        self.clock = clock
        self.versions: dict[str, int] = {}
        self.members: dict[str, dict[str, float]] = {}
        self._dirty: set[str] = set()
        self._last_sent: dict[str, float] = {}
        self._refresh_at: dict[str, float] = {}
        """When each held key is re-announced next (periodic refresh, not a change)."""
        self._retry_at: dict[str, float] = {}
        """Keys whose new version waits for mesh peers, or is sent again, and when (see the module doc)."""
        self._fresh: set[str] = set()
        """Keys whose newest version has not reached a mesh peer yet."""
        self._subscriptions: dict[str, Any] = {}
        self._listeners: dict[str, trio.CancelScope] = {}  # key -> the task reading its subscription
        self._wake = trio.Event()
        self._nursery: trio.Nursery | None = None
        # what this node sends, over all its topics (`announce_rate_total`), and what it hears from each
        # peer: an announcement past a peer's budget is dropped without counting against it (gossip relays
        # bursts that are not the origin's doing, and a flood is cheap to drop)
        rate = self.settings.announce_rate_total
        self._sending = RateLimiter(rate, max(1.0, 2 * rate), clock=trio.current_time)
        self._hearing = RateLimiter(self.settings.requests_per_second, self.settings.request_burst)
        self.dropped = 0  # announcements dropped past their sender's budget
        self.bytes = {"in": 0, "out": 0}
        """Announcement bytes: each published frame once per subscribed peer it is sent to (gossip
        forwarding between peers is the router's and not counted), each delivered frame once."""

    @property
    def own_id(self) -> str:
        return str(self.p2p.peer_id)

    async def hold(self, key: str, model_version: int = 0) -> None:
        """Join the community of `key` (idempotent) and announce the version at the next send."""
        TopicAnnouncement(self.own_id, (TopicEntry(key, model_version),))  # the key must be a valid topic
        if key not in self._subscriptions:
            self._subscriptions[key] = await self.p2p.pubsub.subscribe(gossip_topic(key))
            if self._nursery is not None:
                self._nursery.start_soon(self._listen, key, self._subscriptions[key])
            self.members.setdefault(key, {})
        self._raise_version(key, model_version)

    async def leave(self, key: str) -> None:
        """Leave the community of a key the node no longer holds: no subscription, announcement or
        provider record for it from now on (the DHT's record of it expires)."""
        listener = self._listeners.pop(key, None)
        if listener is not None:
            listener.cancel()
        if self._subscriptions.pop(key, None) is not None:
            await self.p2p.pubsub.unsubscribe(gossip_topic(key))
        self.versions.pop(key, None)
        self.members.pop(key, None)
        self._refresh_at.pop(key, None)
        self._retry_at.pop(key, None)
        self._fresh.discard(key)
        self._dirty.discard(key)

    def announce(self, key: str, model_version: int) -> None:
        """A new model version of a held key: announced soon, coalesced with other changes."""
        self._raise_version(key, model_version)

    def _raise_version(self, key: str, model_version: int) -> None:
        if model_version > self.versions.get(key, 0):
            self._fresh.add(key)
        self.versions[key] = max(model_version, self.versions.get(key, 0))
        self._mark(key)

    def nearby(self, limit: int = MAX_NEARBY) -> dict[str, list[str]]:
        """Communities the connected peers are in and this node is not: key -> those peers, the largest
        `limit` (a hostile peer may subscribe to any number of made-up keys). Gossipsub tells connected
        peers each other's subscriptions, so a user whose folder has another name than a community's can
        see the community's key."""
        found: dict[str, list[str]] = {}
        for topic, peers in self.p2p.pubsub.peer_topics.items():
            key = topic[len(GOSSIP_PREFIX) :] if topic.startswith(GOSSIP_PREFIX) else None
            if key is None or key in self._subscriptions or not _showable(key):
                continue
            members = sorted({str(p) for p in peers} - {self.own_id})
            if members:
                found[key] = members
        largest = sorted(found, key=lambda k: (-len(found[k]), k))[:limit]
        return {key: found[key] for key in largest}

    def community(self, key: str) -> list[str]:
        """Peers heard announcing `key` (gossip subscribers seen by this node's router count too)."""
        heard = set(self.members.get(key, {}))
        heard.update(str(p) for p in self.p2p.pubsub.peer_topics.get(gossip_topic(key), ()))
        heard.discard(self.own_id)
        return sorted(heard)

    async def find_providers(self, key: str, count: int = 20) -> list[tuple[str, list[str]]]:
        """Peers the DHT lists as holding `key`, once each: (peer id, addresses)."""
        if self.p2p.dht is None:
            return []
        seen: dict[str, list[str]] = {}
        for info in await self.p2p.dht.find_providers(provider_key(key), count):
            peer = str(info.peer_id)
            if peer != self.own_id:
                seen.setdefault(peer, []).extend(
                    str(a) for a in info.addrs if str(a) not in seen.get(peer, [])
                )
        return list(seen.items())

    async def join_through_providers(self, key: str) -> list[str]:
        """Dial the peers the DHT lists as holding `key`, but those this node bans or the user blocked: a
        newcomer whose neighbours share none of its topics meets the community this way, and the gossip
        mesh of `key` forms over the new connections. The peers dialled."""
        from libp2p.peer.id import ID

        dialled = []
        for peer, addrs in await self.find_providers(key):
            if self.guard is not None and self.guard.ledger.is_banned(peer):
                continue
            try:
                await self.p2p.connect(ID.from_base58(peer), addrs)
            except Exception as exc:  # an unreachable provider is no error of this node's
                log.info("DHT provider %s of %s not reached: %s", peer, key, exc)
                continue
            dialled.append(peer)
        return dialled

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Listen to the held topics and send announcements until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for key, subscription in self._subscriptions.items():
                nursery.start_soon(self._listen, key, subscription)
            nursery.start_soon(self._provide_periodically)
            task_status.started()
            await self._announce_loop()

    # -- sending ----------------------------------------------------------------------------------------
    def _mark(self, key: str) -> None:
        self._dirty.add(key)
        self._wake.set()

    async def _announce_loop(self) -> None:
        min_gap = 1.0 / self.settings.announce_rate_per_topic
        while True:
            with trio.move_on_after(self._seconds_to_next_refresh()):
                await self._wake.wait()
            self._wake = trio.Event()
            now = self.clock()
            self._dirty.update(k for k in self.versions if self._refresh_due(k, now))
            self._dirty.update(k for k, at in list(self._retry_at.items()) if at <= now)
            due = [
                k
                for k in self._dirty
                if now - self._last_sent.get(k, -1e18) >= min_gap
                and k in self.versions
                and self._retry_at.get(k, now) <= now
            ]
            for key in due[: self.settings.announce_batch_max]:
                self._dirty.discard(key)
                self._retry_at.pop(key, None)
                reach = self.mesh_reach(key)
                if not reach and key in self._fresh:
                    self._retry_at[key] = now + self._heartbeat()  # nobody to send it to yet
                    continue
                self._last_sent[key] = now
                self._refresh_at[key] = now + self.refresh_interval(key)
                if reach:
                    while not self._sending.allow(self.own_id):
                        await trio.sleep(1.0 / self.settings.announce_rate_total)
                    await self._publish(key)
                if key in self._fresh:
                    self._fresh.discard(key)
                    if reach < max(1, self.settings.gossip_degree - 2):  # one thin path: send it again
                        self._retry_at[key] = now + self._heartbeat()
            if any(k not in self._retry_at for k in self._dirty):  # rate-limited keys wait for their gap
                await trio.sleep(min_gap / 2)
                self._wake.set()

    def _heartbeat(self) -> float:
        """Seconds until gossipsub may have grafted mesh peers (its heartbeat), at least half a second."""
        return max(float(self.settings.gossip_heartbeat), 0.5)

    def mesh_reach(self, key: str) -> int:
        """Connected peers gossipsub sends a publish on `key`'s topic to now (its mesh of the topic)."""
        topic = gossip_topic(key)
        router = self.p2p.gossipsub
        peers = router.mesh.get(topic) or router.fanout.get(topic) or ()
        return sum(1 for p in peers if p in self.p2p.pubsub.peers)

    def _refresh_due(self, key: str, now: float) -> bool:
        """Whether `key`'s periodic re-announcement is due, judged by the community size known now.

        The interval is fixed when an announcement is sent, and right after joining a node has heard of
        few members: a crowd that joined together re-announced after `announce_interval` although the
        community it learned of meanwhile called for a much longer one. A refresh that is early for the
        current size moves back instead of being sent."""
        if now < self._refresh_at.get(key, now):
            return False
        last = self._last_sent.get(key)
        if last is not None and now - last < 0.75 * self.refresh_interval(key, jitter=False):
            self._refresh_at[key] = last + self.refresh_interval(key)
            return False
        return True

    def refresh_interval(self, key: str, *, jitter: bool = True) -> float:
        """Seconds until `key`'s next periodic re-announcement: the community shares
        `reannounce_rate_per_topic`, so the topic's message rate stays flat as the community grows."""
        members = len(self.community(key)) + 1
        base = max(self.settings.announce_interval, members / self.settings.reannounce_rate_per_topic)
        return base * random.uniform(0.75, 1.25) if jitter else base  # a crowd drifts apart

    def _seconds_to_next_refresh(self) -> float:
        """Until the first held key may be sent: its retry while one is set (a new version waiting for
        mesh peers), else its periodic refresh, and never before its rate gap. Counting a key that waits
        for peers as due at once by its refresh, never set before a first send, kept a node without peers
        passing through the loop without waiting, at 100% CPU."""
        now = self.clock()
        min_gap = 1.0 / self.settings.announce_rate_per_topic
        pending = [
            max(
                self._retry_at.get(k, self._refresh_at.get(k, now)),
                self._last_sent.get(k, -math.inf) + min_gap,
            )
            for k in self.versions
        ]
        if not pending:
            return self.settings.announce_interval
        return max(0.0, min(pending) - now)

    async def _publish(self, key: str) -> None:
        message = TopicAnnouncement(self.own_id, (TopicEntry(key, self.versions[key]),))
        frame = encode_frame(message, TopicAnnouncement.MAX_FRAME)
        try:
            await self.p2p.pubsub.publish(gossip_topic(key), frame)
            self.bytes["out"] += len(frame) * len(self.p2p.pubsub.peer_topics.get(gossip_topic(key), ()))
        except Exception as exc:  # a publish with no peers yet must not stop the loop
            log.info("announcement of %s not sent: %s", key, exc)

    async def _provide_periodically(self) -> None:
        """Provider records expire in the DHT, so they are renewed (less often than gossip announcements);
        a held topic whose community this node has not heard of yet is looked up there and joined."""
        if self.p2p.dht is None:
            return
        while True:
            for key in list(self.versions):
                try:
                    await self.p2p.dht.provide(provider_key(key))
                    if not self.community(key):
                        await self.join_through_providers(key)
                except Exception as exc:
                    log.info("DHT provider records of %s not stored or read: %s", key, exc)
            await trio.sleep(max(self.settings.announce_interval, 1.0) * 5)

    # -- receiving --------------------------------------------------------------------------------------
    async def _listen(self, key: str, subscription: Any) -> None:
        with trio.CancelScope() as scope:  # `leave` cancels it: the left subscription's queue stays silent
            self._listeners[key] = scope
            try:
                while self._subscriptions.get(key) is subscription:
                    await self._hear(key, await subscription.get())
            finally:
                if self._listeners.get(key) is scope:
                    del self._listeners[key]

    async def _hear(self, key: str, message: Any) -> None:
        """One gossip message on a held topic: a peer announcing it holds the key."""
        sender = _peer_str(message.from_id)
        if sender == self.own_id:
            return  # gossipsub delivers a publisher its own messages
        announcement = self._decode(sender, key, message.data)
        self.bytes["in"] += len(message.data)
        if announcement is None:
            return
        heard = self.members.setdefault(key, {})
        heard[sender] = time.time()
        if len(heard) > MAX_MEMBERS:  # announcements signed by throwaway keys grew it without end
            del heard[min(heard, key=heard.__getitem__)]
        if self.on_announcement is not None:
            try:
                await self.on_announcement(announcement)
            except Exception:
                log.exception("announcement handler failed on %s from %s", key, sender)

    def _decode(self, sender: str, key: str, data: bytes) -> Announcement | None:
        try:
            self.guard.ledger.check(sender)  # a banned peer stays unheard
            if not self._hearing.allow(sender):
                self.dropped += 1
                return None
            if (
                len(data) < HEADER_SIZE
                or int.from_bytes(data[:HEADER_SIZE], "big") != len(data) - HEADER_SIZE
            ):
                raise WireError("truncated_frame", "announcement frame length does not match the message")
            message = decode_frame(data[HEADER_SIZE:], TopicAnnouncement)
            if message.origin != sender:
                raise WireError("wrong_origin", f"announcement claims origin {message.origin[:16]}...")
            entry = next((t for t in message.topics if t.key == key), None)
            if entry is None or len(message.topics) > MAX_ANNOUNCED_TOPICS:
                raise WireError("bad_value", f"announcement on {key!r} does not name that topic")
        except WireError as error:
            if error.reason not in ("banned", "rate_limited"):
                self.guard.reject(sender, error)
            return None
        return Announcement(key, sender, entry.model_version)


def _showable(key: str) -> bool:
    """A key a peer subscribed to that is a topic key as announcements carry them (length, no control
    characters): anything else is not shown to the user."""
    try:
        check_topic(key, "gossip topic")
    except WireError:
        return False
    return True


def _peer_str(raw: bytes) -> str:
    from libp2p.peer.id import ID

    return str(ID(raw))
