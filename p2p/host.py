"""The one way to start a libp2p host for topicswarm: Noise only, Yamux, one connection per peer.

py-libp2p 0.8.1's `new_host` offers plaintext, secio and TLS besides Noise unless `sec_opt` names the
transports, so this factory always passes Noise alone: a dialer offering only plaintext gets no connection.
Pubsub is started before the host listens, because it ignores connections made before it runs; the
heartbeat is shortened from the library's 120 s so meshes form within seconds.

Gossipsub's "adaptive gossip" is switched off: every 30 s it scores the network's health and, below 0.7
(a mesh short of D peers is enough), sets the heartbeat to max(60, 0.75 x base) s, below 0.4 to 30-60 s
(py-libp2p 0.8.1 `GossipSub._adapt_heartbeat_parameters`, written for its 120 s default), and raises the
mesh degree bounds. With our 1 s heartbeat that meant mesh repair and IHAVE gossip once a minute,
first on the nodes whose mesh was thin: of 30 joining hosts on loopback 19 ran at 60 s and 11 at 30 s
after 35 s, all 30 at 60 s after 65 s (switched off: all at 1 s, meshes of 4-9 peers).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import multiaddr
import trio
from libp2p import new_host
from libp2p.abc import IHost
from libp2p.crypto.ed25519 import create_new_key_pair
from libp2p.crypto.keys import KeyPair
from libp2p.crypto.x25519 import create_new_key_pair as create_new_x25519_key_pair
from libp2p.custom_types import TProtocol
from libp2p.kad_dht.kad_dht import DHTMode, KadDHT
from libp2p.network.config import ConnectionConfig
from libp2p.peer.id import ID
from libp2p.peer.peerinfo import PeerInfo, info_from_p2p_addr
from libp2p.pubsub.gossipsub import PROTOCOL_ID, PROTOCOL_ID_V11, GossipSub
from libp2p.pubsub.pubsub import Pubsub
from libp2p.security.noise.transport import PROTOCOL_ID as NOISE_PROTOCOL_ID
from libp2p.security.noise.transport import Transport as NoiseTransport
from libp2p.stream_muxer.yamux.yamux import PROTOCOL_ID as YAMUX_PROTOCOL_ID
from libp2p.stream_muxer.yamux.yamux import Yamux
from libp2p.tools.anyio_service import background_trio_service

from p2p.addresses import advertised
from p2p.errors import P2PError
from p2p.settings import P2PSettings

log = logging.getLogger(__name__)

GOSSIP_PROTOCOLS = (TProtocol(PROTOCOL_ID_V11), TProtocol(PROTOCOL_ID))


class NetworkError(P2PError):
    """A peer could not be reached or answered wrongly; the message names the peer and the reason."""


def quiet_libp2p_logging() -> None:
    """libp2p logs at WARNING and up, into the node's own handlers instead of straight to stderr.

    The library sets its logger to not propagate and has no handler, so every warning (a closed DHT
    stream is one) reaches stderr through logging's last-resort handler.
    """
    lib = logging.getLogger("libp2p")
    lib.setLevel(logging.WARNING)
    lib.propagate = True
    if not any(isinstance(h, logging.NullHandler) for h in lib.handlers):
        lib.addHandler(logging.NullHandler())
    dht = logging.getLogger("libp2p.kad_dht.kad_dht")
    if not any(isinstance(f, _ClosedDhtStream) for f in dht.filters):
        dht.addFilter(_ClosedDhtStream())
    tcp = logging.getLogger("libp2p.transport.tcp.tcp")
    if not any(isinstance(f, _FailedDial) for f in tcp.filters):
        tcp.addFilter(_FailedDial())


class _ClosedDhtStream(logging.Filter):
    """Drops libp2p's warning for a DHT stream the other side closed or reset (the exception has no text):
    a peer ending its query does that, and a one-hour soak logged it 108 times per node, burying what
    matters in node.log. A read failing with a reason still shows."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "Failed to read DHT message from stream: "


class _FailedDial(logging.Filter):
    """A dial that found no listener is logged by libp2p as an ERROR, and then raised to the caller, which
    says what it means ("none of the 2 peers of the last run answered"). Restarted after its peers left, a
    node printed eight such ERROR lines on the terminal before it was ready: they go to node.log at INFO."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage().startswith("Failed to open TCP stream"):
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


@dataclass
class P2PHost:
    """A running host with its pubsub router and DHT; what membership, communities and protocols use."""

    host: IHost
    pubsub: Pubsub
    gossipsub: GossipSub
    dht: KadDHT | None
    settings: P2PSettings
    _first_seen: dict[ID, float] = field(default_factory=dict)
    """When `trim_connections` first saw each connected peer (trio clock)."""

    @property
    def peer_id(self) -> ID:
        return self.host.get_id()

    def addrs(self) -> list[str]:
        """Addresses ending in /p2p/<peer id>: what another node needs to join through this one."""
        return [f"{addr}/p2p/{self.peer_id}" for addr in self.transport_addrs()]

    def transport_addrs(self) -> list[str]:
        """The addresses others can dial, without the peer id (what neighbour lists carry next to the id):
        the listen addresses, every-interface ones replaced by the machine's (`p2p.addresses`)."""
        own = multiaddr.Multiaddr(f"/p2p/{self.peer_id}")
        listen = [str(a.decapsulate(own)) for a in self.host.get_addrs()]
        return advertised(listen)

    def remember(self, peer: ID, addrs: Sequence[str], ttl: float = 3600.0) -> None:
        """Keep a peer's addresses in the peerstore so a later stream to it can dial."""
        if peer != self.peer_id and addrs:
            with contextlib.suppress(Exception):  # a malformed address from a peer is simply not kept
                self.host.get_peerstore().add_addrs(peer, [multiaddr.Multiaddr(a) for a in addrs], int(ttl))

    def is_connected(self, peer: ID) -> bool:
        return peer in self.host.get_network().connections

    def connected_peers(self) -> list[ID]:
        return list(self.host.get_network().connections)

    def mesh_peers(self) -> set[ID]:
        """Peers in this node's gossipsub mesh of any topic: the ones its announcements travel through."""
        return {peer for peers in self.gossipsub.mesh.values() for peer in peers}

    async def trim_connections(self, limit: int, rank: Callable[[ID], float]) -> list[ID]:
        """Close connections beyond `limit`, lowest `rank` first; the peers disconnected.

        A connection that carries a gossip mesh link or an open request stream is kept: closing it would
        break the topic's mesh or an exchange under way. So is one first seen less than `request_timeout`
        ago: a joining peer's or a fetcher's connection is dialled before its stream opens, and closing it
        in between made joins through a busy bootstrap fail over and over. Without a bound every peer a
        node ever exchanged with stays connected, so connections, pubsub streams and mesh work grow with N."""
        network = self.host.get_network()
        now = trio.current_time()
        first_seen = {p: self._first_seen.get(p, now) for p in network.connections}
        self._first_seen = first_seen
        excess = len(network.connections) - limit
        if excess <= 0:
            return []
        keep = self.mesh_peers()
        settled = now - self.settings.request_timeout
        idle = [
            p
            for p, conns in network.connections.items()
            if p not in keep and first_seen[p] <= settled and not _busy(conns)
        ]
        closed = sorted(idle, key=rank)[:excess]
        async with trio.open_nursery() as nursery:  # at once: one by one, a bootstrap 60 over took minutes
            for peer in closed:
                nursery.start_soon(self.disconnect, peer)
        return closed

    async def disconnect(self, peer: ID) -> None:
        """Close every connection to `peer` (at most 2 s; a peer already gone is no error)."""
        with trio.move_on_after(2), contextlib.suppress(Exception):
            await self.host.disconnect(peer)

    async def connect(self, peer: ID, addrs: Sequence[str]) -> None:
        """Dial `peer` (a no-op when connected); NetworkError when no address answers in time."""
        if peer == self.peer_id or self.is_connected(peer):
            return
        info = PeerInfo(peer, [multiaddr.Multiaddr(a) for a in addrs])
        await self._dial(info)

    async def connect_addr(self, full_addr: str) -> ID:
        """Dial a `/ip4/.../tcp/.../p2p/<id>` address; the peer id it names."""
        try:
            info = info_from_p2p_addr(multiaddr.Multiaddr(full_addr))
        except Exception as exc:
            raise NetworkError(f"{full_addr!r} is not a multiaddr ending in /p2p/<peer id>: {exc}") from exc
        if info.peer_id != self.peer_id and not self.is_connected(info.peer_id):
            await self._dial(info)
        return info.peer_id

    async def _dial(self, info: PeerInfo) -> None:
        try:
            with trio.fail_after(self.settings.connect_timeout):
                await self.host.connect(info)
        except trio.TooSlowError as exc:
            raise NetworkError(
                f"peer {info.peer_id} did not answer within {self.settings.connect_timeout}s"
            ) from exc
        except Exception as exc:
            raise NetworkError(f"peer {info.peer_id} unreachable: {exception_reason(exc)}") from exc
        if self.dht is not None:
            await self.dht.add_peer(info.peer_id, skip_server_mode_check=True)


def _busy(conns: Sequence[Any]) -> bool:
    """A connection with a stream open besides gossipsub's own (a request/response exchange)."""
    for conn in conns:
        for stream in conn.get_streams():
            if stream.get_protocol() not in GOSSIP_PROTOCOLS:
                return True
    return False


def exception_reason(exc: BaseException) -> str:
    """The innermost message of libp2p's nested exception groups and chains."""
    while True:
        if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        elif exc.__cause__ is not None:
            exc = exc.__cause__
        else:
            return f"{type(exc).__name__}: {exc}"


async def _stop_auto_connector(host: IHost) -> None:
    """Membership chooses whom to dial; libp2p's auto-connector would dial up to 200 peerstore entries."""
    auto_connector = getattr(host.get_network(), "auto_connector", None)
    if auto_connector is not None:
        await auto_connector.stop()


async def _close_connections(host: IHost) -> None:
    """Close connections explicitly: cancelling the swarm leaves dialled sockets for the garbage collector."""
    with trio.move_on_after(2) as scope:
        scope.shield = True
        await host.get_network().close()


def connection_config(settings: P2PSettings) -> ConnectionConfig:
    """One connection per peer; stream protocol negotiation may take as long as a request.

    py-libp2p gives up negotiating a new stream after 10 s whatever the caller's own deadline. On a busy
    process (50-100 in-process hosts, a loaded machine) negotiation took longer than that while the
    exchange still had time left (`request_timeout`), so requests, pubsub and identify streams failed and
    were retried, which added to the load. The request's own deadline bounds the exchange instead."""
    defaults = ConnectionConfig()
    return ConnectionConfig(
        max_connections_per_peer=1,
        outbound_stream_protocol_negotiation_timeout=max(
            defaults.outbound_stream_protocol_negotiation_timeout, settings.request_timeout
        ),
        inbound_stream_protocol_negotiation_timeout=max(
            defaults.inbound_stream_protocol_negotiation_timeout, settings.request_timeout
        ),
    )


def build_libp2p_host(key_pair: KeyPair, settings: P2PSettings, listen_addrs: Sequence[str]) -> IHost:
    """A host offering Noise alone for security and Yamux alone for multiplexing."""
    noise = NoiseTransport(key_pair, noise_privkey=create_new_x25519_key_pair().private_key)
    return new_host(
        key_pair=key_pair,
        sec_opt={NOISE_PROTOCOL_ID: noise},
        muxer_opt={YAMUX_PROTOCOL_ID: Yamux},
        listen_addrs=[multiaddr.Multiaddr(a) for a in listen_addrs],
        connection_config=connection_config(settings),
        enable_mDNS=settings.enable_mdns,
    )


@asynccontextmanager
async def start_host(
    settings: P2PSettings | None = None,
    key_pair: KeyPair | None = None,
    *,
    listen_addrs: Sequence[str] | None = None,
) -> AsyncIterator[P2PHost]:
    """Run a host under trio until the block exits; a fresh identity when `key_pair` is None (tests)."""
    quiet_libp2p_logging()
    settings = settings or P2PSettings()
    key_pair = key_pair or create_new_key_pair()
    addrs = list(listen_addrs or settings.listen_addrs)
    host = build_libp2p_host(key_pair, settings, addrs)
    degree = settings.gossip_degree
    gossipsub = GossipSub(
        protocols=list(GOSSIP_PROTOCOLS),
        degree=degree,
        degree_low=max(1, degree - 2),
        degree_high=degree * 2,
        heartbeat_interval=settings.gossip_heartbeat,
        heartbeat_initial_delay=0.1,
        adaptive_gossip_enabled=False,  # see the module docstring
    )
    pubsub = Pubsub(host, gossipsub, max_subscriptions_per_peer=settings.max_topics_per_peer)
    dht = KadDHT(host, DHTMode.SERVER) if settings.dht_enabled else None
    async with AsyncExitStack() as stack:
        await stack.enter_async_context(background_trio_service(pubsub))
        await stack.enter_async_context(background_trio_service(gossipsub))
        await pubsub.wait_until_ready()
        await stack.enter_async_context(host.run([multiaddr.Multiaddr(a) for a in addrs]))
        stack.push_async_callback(_close_connections, host)
        await _stop_auto_connector(host)
        if dht is not None:
            await stack.enter_async_context(background_trio_service(dht))
        log.info("host %s listening on %s", host.get_id(), ", ".join(str(a) for a in host.get_addrs()))
        yield P2PHost(host, pubsub, gossipsub, dht, settings)
