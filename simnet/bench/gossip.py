"""How fast a model spreads through a topic community of N real libp2p hosts on loopback, in one process.

    python -m simnet.bench.gossip --peers 100

The hosts start in batches of `START_BATCH` and join through one bootstrap address, the first host
(membership push-pull, thesis 3.3.1), then hold one topic. Background periods are the node's defaults
(`--exchange-period`, `--gossip-heartbeat`, printed in the result), and every host keeps at most
`max_connections` connections, so the idle load of the process grows with N rather than N^2. Once the
overlay has settled past the star around the bootstrap that joining builds (every host has a mesh peer
for the topic, the median host gossipsub's D_low, `ready_mesh_degree`, and the bootstrap is down to
`max_connections`), the last host started (not the bootstrap, the busiest host) publishes a signed
linear model (a few thousand nonzero weights of a 2^18 feature space plus its training document ids,
~34 KB on the wire). Dissemination, and what a "round" is here:

- one gossip announcement, the publisher's, tells the community that version v exists. Holders do not
  re-announce (`gossip_messages_published` counts every gossip publish on the topic during the spread:
  the announcement, its one resend when the publisher's mesh was thin, and the hosts' periodic
  re-announcements of the topic that fall in the spread);
- the model spreads by pull: a peer that knows v exists and lacks it asks one neighbour at a time over
  the model protocol (`ask_order`: its gossip mesh, then its other connections, each shuffled),
  `--ask-gap` apart; a peer without the model answers "none" and, learning from the request that v
  exists, starts pulling itself (`heard_from_request`: peers the announcement missed). After a round in
  which every neighbour said none the peer backs off (the service's jittered doubling from
  `--retry-delay`, at most 4x). The publisher is asked like any neighbour when connected; a peer not
  connected to it dials it only after `--dial-patience` (`dials`);
- a holder uploads to at most `--fanout` askers per `--fanout-window` seconds and answers "none" beyond,
  so the spread is a tree rather than a star from the publisher. The window is there because an upload
  that dies half-way (at 100 hosts exchanges time out after 30 s) otherwise used a slot for good and the
  spread stopped at 3-7 holders.

Each peer records the peer it got the model from. A peer's hop is its supplier's hop + 1 (the publisher is
hop 0); `rounds_to_all` is the depth of that tree, the number of fetch rounds until every peer has the
model. If every holder served one peer per round the depth would be about log2(N); asks that hit a
peer without the model, or a full holder, add rounds. `start_seconds` is the time to start and join every
host until the overlay has settled, `seconds_to_all` the time from publishing until the last peer has the
model; `--timeout` covers both. Prints one JSON line, with the machine's 1-minute load average at the end
(the machine is shared).

All hosts share one Python thread: from about 50 hosts the process is CPU-bound (`spread_cpu_seconds`
close to `seconds_to_all`; the progress lines print the CPU share of one core), mostly in yamux/Noise
framing of pubsub traffic. With the node's default `--reannounce-rate` (1 message a second over the
community, each delivered to every member about D times) 100 hosts spend the whole core on the periodic
re-announcements and model exchanges time out: the spread stalls at a few holders. `--reannounce-rate
0.1` lets 100 hosts finish. The event-loop lag only measures one scheduling pass.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import logging
import math
import os
import random
import sys
import time

import numpy as np
import trio

from simnet.measure import peak_rss_mb

FEATURES = 1 << 18
TOPIC = "bench/topic"
START_BATCH = 5
PROGRESS_EVERY = 30.0
"""Seconds between progress lines on stderr while the model spreads."""
log = logging.getLogger(__name__)


def bench_model(origin: str, nonzero: int, training_docs: int, seed: int = 0):
    from p2p.schemas import ModelPayload, pack_weights

    rng = np.random.default_rng(seed)
    matrix = np.zeros((1, FEATURES), dtype=np.float32)
    matrix[0, rng.choice(FEATURES, nonzero, replace=False)] = rng.normal(size=nonzero).astype(np.float32)
    packed = pack_weights(matrix)
    return ModelPayload(
        topic=TOPIC,
        version=1,
        kind="linear",
        feature_config={"n_features": FEATURES},
        rows=1,
        weights=packed["weights"],
        indices=packed["indices"],
        values=packed["values"],
        biases=(0.1,),
        training_doc_ids=tuple(f"http://127.0.0.3/doc/{i:06d}" for i in range(training_docs)),
        origin=origin,
        created=time.time(),
    )


@dataclasses.dataclass(frozen=True)
class BenchConfig:
    fanout: int
    nonzero: int
    training_docs: int
    exchange_period: float
    gossip_heartbeat: int
    gossip_degree: int
    reannounce_rate: float
    retry_delay: float
    dial_patience: float
    ask_gap: float
    fanout_window: float


@dataclasses.dataclass
class PeerState:
    model: object | None = None
    supplier: str | None = None
    got_at: float | None = None
    uploads: int = 0
    upload_times: list[float] = dataclasses.field(default_factory=list)
    """When the uploads of the last --fanout-window seconds started (trio clock)."""
    version: int = 0
    """The newest version this peer knows exists (from the announcement, or from a peer asking for it)."""
    announcer: str | None = None
    """The peer whose announcement told this one: the last resort to ask after --dial-patience."""
    heard_from_request: bool = False
    """Learned of the version from a peer asking for it, not from the gossip announcement."""
    asked: int = 0
    """Model requests this peer sent."""
    nones: int = 0
    """Model requests answered "none" (the asked peer lacks the model or has served its fan-out)."""
    failures: int = 0
    failure_reasons: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    dials: int = 0
    """Requests to a peer this one was not connected to (the announcer, after --dial-patience)."""
    rounds_of_none: int = 0
    """Rounds in which every neighbour asked said none (each followed by a back-off)."""


def p2p_settings(config: BenchConfig, bootstrap: tuple[str, ...] = ()):
    from p2p.settings import P2PSettings

    return P2PSettings(
        listen_addrs=("/ip4/127.0.0.1/tcp/0",),
        bootstrap=bootstrap,
        exchange_period=config.exchange_period,
        neighbour_ttl=120.0,
        request_timeout=30.0,
        connect_timeout=10.0,
        gossip_heartbeat=config.gossip_heartbeat,
        gossip_degree=config.gossip_degree,
        reannounce_rate_per_topic=config.reannounce_rate,
        announce_interval=60.0,
        requests_per_second=1000.0,
        request_burst=1000,
        fetch_retry_delay=config.retry_delay,
        dht_enabled=False,
    )


async def start_hosts(nursery: trio.Nursery, settings, count: int) -> list:
    """Start `count` services in batches of START_BATCH at once; they run until `nursery` is cancelled."""
    from p2p.service import start_service

    async def keep(*, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with start_service(settings) as service:
            task_status.started(service)
            await trio.sleep_forever()

    services: list = []

    async def start_one() -> None:
        services.append(await nursery.start(keep))

    for first in range(0, count, START_BATCH):
        async with trio.open_nursery() as batch:
            for _ in range(min(START_BATCH, count - first)):
                batch.start_soon(start_one)
    return services


def ask_order(mesh: set[str], connected: set[str], last_resort: str | None, patience_over: bool) -> list[str]:
    """Whom a peer lacking the model asks in one round, in order: its gossip mesh neighbours, then its
    other connections, each group shuffled; the announcer (the publisher) only when it is one of these,
    or at the end once `patience_over`.

    Random order spreads the askers of one round over the holders instead of herding them at one; the
    mesh comes first because its links are the ones gossipsub keeps open. Dialling the publisher from
    every peer is the star this pull replaces, so a peer that is not connected to it asks it only after
    --dial-patience, when a whole neighbourhood failed to serve."""
    near = [p for p in mesh if p in connected]
    random.shuffle(near)
    rest = sorted(connected - set(near))
    random.shuffle(rest)
    order = near + rest
    if patience_over and last_resort is not None and last_resort not in order:
        order.append(last_resort)
    return order


class Puller:
    """One peer's side of the spread: it serves the model to at most `fanout` askers and, once it knows a
    version exists that it lacks, asks its neighbours for it until one serves."""

    def __init__(self, service, me: PeerState, addrs: dict[str, list[str]], config: BenchConfig, nursery):
        self.service, self.me, self.addrs, self.config, self.nursery = service, me, addrs, config, nursery
        self.pulling = False

    async def provide(self, topic_key: str, version: int | None):
        """The model protocol's provider: the model while the fan-out lasts, else None ("none").

        A request for a version this peer has not heard of tells it that version exists (a peer the
        gossip announcement missed still joins the spread)."""
        me = self.me
        if me.model is None:
            if version:
                me.heard_from_request = me.heard_from_request or me.version < version
                self.learn(version)
            return None
        now = trio.current_time()
        me.upload_times = [t for t in me.upload_times if now - t < self.config.fanout_window]
        if len(me.upload_times) >= self.config.fanout:
            return None
        me.upload_times.append(now)
        me.uploads += 1
        return me.model

    async def heard(self, announcement) -> None:
        """The gossip announcement handler: only the publisher announces a version."""
        if announcement.model_version and announcement.peer_id in self.addrs:
            if self.me.announcer is None:
                self.me.announcer = announcement.peer_id
            self.learn(announcement.model_version)

    def learn(self, version: int) -> None:
        self.me.version = max(self.me.version, version)
        if self.me.model is None and not self.pulling:
            self.pulling = True
            self.nursery.start_soon(self.pull)

    def neighbours(self) -> tuple[set[str], set[str]]:
        from p2p.communities import gossip_topic

        p2p = self.service.p2p
        mesh = {str(p) for p in p2p.gossipsub.mesh.get(gossip_topic(TOPIC), ())}
        return mesh, {str(p) for p in p2p.connected_peers()}

    async def pull(self) -> None:
        """Ask neighbours one at a time (`ask_order`), --ask-gap apart, until one serves; after a round in
        which all said none, back off (the service's jittered doubling from --retry-delay, at most 4x).

        Asking the whole neighbourhood back to back, with only the back-off between rounds, was a storm
        of its own: 100 peers x 12 connections made some 2,000 stream setups a second, the process sat at
        100% of a core and in 500 s not one fetch from the publisher got through."""
        me = self.me
        patience_at = trio.current_time() + self.config.dial_patience * random.uniform(0.5, 1.5)
        idle_rounds = 0
        while me.model is None:
            mesh, connected = self.neighbours()
            order = ask_order(mesh, connected, me.announcer, trio.current_time() >= patience_at)
            for n, peer in enumerate(order):
                if n:
                    await trio.sleep(self.config.ask_gap * random.uniform(0.5, 1.5))
                if me.model is not None or await self.fetch(peer, peer in self.neighbours()[1]):
                    break
            else:
                idle_rounds += 1
                me.rounds_of_none += 1
                await trio.sleep(self.service.retry_delay(min(idle_rounds, 3)))

    async def fetch(self, peer: str, connected: bool) -> bool:
        """Ask `peer` for the known version; True when this peer has the model now."""
        from libp2p.peer.id import ID

        from p2p.host import exception_reason

        me = self.me
        me.asked += 1
        try:
            if not connected:
                me.dials += 1
                await self.service.p2p.connect(ID.from_base58(peer), self.addrs[peer])
            model = await self.service.protocols.fetch_model(peer, TOPIC, me.version)
        except Exception as exc:
            log.info("fetch from %s failed: %s", peer, exc)
            me.failures += 1
            me.failure_reasons[exception_reason(exc.__cause__ or exc)] += 1
            return me.model is not None
        if model is None:
            me.nones += 1
        elif me.model is None:
            me.model, me.supplier, me.got_at = model, peer, time.time()
        return me.model is not None


class GossipCount:
    """Gossip messages published on the bench topic by one host (its pubsub's publish, wrapped)."""

    def __init__(self, pubsub) -> None:
        self.messages = 0
        self._publish = pubsub.publish
        pubsub.publish = self.publish

    async def publish(self, topic_id, data: bytes) -> None:
        self.messages += 1
        await self._publish(topic_id, data)


class BenchTimeout(Exception):
    """The run did not finish within --timeout; the message says at which stage."""


def hops_of(suppliers: dict[str, str | None]) -> dict[str, int]:
    """Each peer's depth in the dissemination tree (the publisher, with no supplier, is 0)."""
    hops: dict[str, int] = {}

    def hop(peer: str) -> int:
        if peer not in hops:
            supplier = suppliers[peer]
            hops[peer] = 0 if supplier is None else hop(supplier) + 1
        return hops[peer]

    for peer in suppliers:
        hop(peer)
    return hops


async def wait_for_meshes(services: list, degree: int, max_connections: int) -> None:
    """Until the overlay has settled: every host has a gossip mesh peer for the topic, the median host
    `degree`, and the bootstrap is down to `max_connections`.

    Waiting for one mesh peer published into a star: every host had joined through the bootstrap and
    most had it as their only mesh peer, so the model spread through one host (and the bootstrap still
    held a connection to every host). `degree` is gossipsub's D_low, the size its heartbeat keeps a mesh
    above once a node has enough connections; waiting for every host to have it took minutes at 100
    hosts (7-9 stayed below it, grafts refused during prune back-off)."""
    from p2p.communities import gossip_topic

    topic = gossip_topic(TOPIC)
    next_note = time.monotonic() + PROGRESS_EVERY
    while True:
        sizes = sorted(len(s.p2p.gossipsub.mesh.get(topic, ())) for s in services)
        hub = services[0].peers_online()
        if sizes[0] > 0 and sizes[len(sizes) // 2] >= degree and hub <= max_connections:
            return
        await trio.sleep(0.2)
        if time.monotonic() >= next_note:
            next_note += PROGRESS_EVERY
            short = sum(size < degree for size in sizes)
            print(
                f"waiting for the gossip mesh: {short} hosts with fewer than {degree} mesh peers, "
                f"{sizes.count(0)} with none; bootstrap connections {hub}",
                file=sys.stderr,
            )


def ready_degree(config: BenchConfig) -> int:
    """Mesh peers every host has before the model is published: gossipsub's D_low (p2p.host)."""
    return max(1, config.gossip_degree - 2)


class LoopLag:
    """The longest time a 0.1 s sleep overslept: how far the event loop ran behind (CPU saturation)."""

    def __init__(self) -> None:
        self.worst = 0.0

    async def watch(self) -> None:
        while True:
            began = time.monotonic()
            await trio.sleep(0.1)
            self.worst = max(self.worst, time.monotonic() - began - 0.1)


async def run(peers: int, config: BenchConfig, timeout: float) -> dict:
    from p2p.codec import encode_frame
    from p2p.schemas import ModelResponse
    from p2p.signing import sign_model

    stage = "starting and joining hosts"
    state: dict[str, PeerState] = {}
    gossip: list[GossipCount] = []
    try:
        with trio.fail_after(timeout):
            async with trio.open_nursery() as nursery:
                lag = LoopLag()
                nursery.start_soon(lag.watch)
                began = time.monotonic()
                services = await start_hosts(nursery, p2p_settings(config), 1)
                bootstrap = (services[0].addrs()[0],)
                services += await start_hosts(nursery, p2p_settings(config, bootstrap), peers - 1)
                addrs = {s.peer_id: s.p2p.transport_addrs() for s in services}
                for service in services:
                    me = state[service.peer_id] = PeerState()
                    puller = Puller(service, me, addrs, config, nursery)
                    service.set_model_provider(puller.provide)
                    service.communities.on_announcement = puller.heard
                    gossip.append(GossipCount(service.p2p.pubsub))
                    await service.communities.hold(TOPIC, 0)
                stage = "waiting for every host's gossip mesh to settle"
                await wait_for_meshes(services, ready_degree(config), p2p_settings(config).max_connections)
                start_seconds = time.monotonic() - began
                start_cpu = time.process_time()
                start_lag, lag.worst = lag.worst, 0.0
                stage = f"spreading the model (hosts were up after {start_seconds:.0f} s)"
                for service in services:
                    service.protocols.bytes_out.clear()
                for count in gossip:
                    count.messages = 0
                announcement_bytes_in = sum(s.communities.bytes["in"] for s in services)
                # not the bootstrap: every host joined through it and it stays the busiest; a model is
                # published by whichever node trained it
                publisher = services[-1]
                origin = state[publisher.peer_id]
                model = bench_model(publisher.peer_id, config.nonzero, config.training_docs)
                origin.model = sign_model(publisher.key, model)
                origin.version = 1
                t0 = origin.got_at = time.time()
                publisher.communities.announce(TOPIC, 1)
                next_note = time.monotonic() + PROGRESS_EVERY
                note_cpu = time.process_time()
                while any(p.model is None for p in state.values()):
                    await trio.sleep(0.05)
                    if time.monotonic() >= next_note:
                        next_note += PROGRESS_EVERY
                        have = sum(p.model is not None for p in state.values())
                        alone = sum(not s.membership.neighbours for s in services)
                        cpu_share = (time.process_time() - note_cpu) / PROGRESS_EVERY
                        note_cpu = time.process_time()
                        print(
                            f"{time.time() - t0:.0f} s: {have} of {peers} peers have the model; "
                            f"bootstrap connections {services[0].peers_online()}, peers with an empty "
                            f"neighbour list {alone}, event loop up to {lag.worst:.1f} s behind, "
                            f"CPU {cpu_share:.0%} of one core",
                            file=sys.stderr,
                        )
                sent = [sum(s.protocols.bytes_out.values()) for s in services]
                gossip_messages = [count.messages for count in gossip]
                announcement_bytes_in = (
                    sum(s.communities.bytes["in"] for s in services) - announcement_bytes_in
                )
                spread_cpu = time.process_time() - start_cpu
                nursery.cancel_scope.cancel()
    except trio.TooSlowError:
        have = sum(p.model is not None for p in state.values())
        raise BenchTimeout(
            f"no result within --timeout {timeout:.0f} s; it ran out while {stage}, "
            f"{have} of {peers} peers had the model, event loop up to {lag.worst:.1f} s behind; "
            f"{sum(p.asked for p in state.values())} model requests, "
            f"{sum(p.nones for p in state.values())} answered none, "
            f"{sum(count.messages for count in gossip)} gossip messages published, failed: "
            f"{dict(sum((p.failure_reasons for p in state.values()), collections.Counter()))}"
        ) from None
    hops = hops_of({peer: p.supplier for peer, p in state.items()})
    frame = ModelResponse(TOPIC, origin.model)
    return {
        "peers": peers,
        "seconds_to_all": round(max(p.got_at for p in state.values()) - t0, 3),
        "rounds_to_all": max(hops.values()),
        "log2_peers": round(math.log2(peers), 2),
        "bytes_sent_per_peer": round(sum(sent) / peers),
        "max_bytes_sent_by_one_peer": max(sent),
        "model_frame_bytes": len(encode_frame(frame, ModelResponse.MAX_FRAME)),
        "gossip_messages_published": sum(gossip_messages),
        "gossip_publishers": sum(1 for n in gossip_messages if n),
        "announcement_bytes_received": announcement_bytes_in,
        "heard_from_request": sum(p.heard_from_request for p in state.values()),
        "model_requests": sum(p.asked for p in state.values()),
        "none_answers": sum(p.nones for p in state.values()),
        "rounds_of_none": sum(p.rounds_of_none for p in state.values()),
        "failed_fetches": sum(p.failures for p in state.values()),
        "failed_fetch_reasons": dict(sum((p.failure_reasons for p in state.values()), collections.Counter())),
        "dials": sum(p.dials for p in state.values()),
        "fanout": config.fanout,
        "start_seconds": round(start_seconds, 2),
        "start_cpu_seconds": round(start_cpu, 1),
        "spread_cpu_seconds": round(spread_cpu, 1),
        "max_loop_lag_seconds": {"start": round(start_lag, 2), "spread": round(lag.worst, 2)},
        "workers": 1,
        "exchange_period": config.exchange_period,
        "gossip_heartbeat": config.gossip_heartbeat,
        "gossip_degree": config.gossip_degree,
        "reannounce_rate": config.reannounce_rate,
        "dial_patience": config.dial_patience,
        "ask_gap": config.ask_gap,
        "fanout_window": config.fanout_window,
        "max_uploads_by_one_peer": max(p.uploads for p in state.values()),
        "retry_delay": config.retry_delay,
        "ready_mesh_degree": ready_degree(config),
        "max_connections": p2p_settings(config).max_connections,
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "load_average": round(os.getloadavg()[0], 2),
    }


def main(argv: list[str] | None = None) -> int:
    from p2p.settings import P2PSettings

    defaults = P2PSettings()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--peers", type=int, default=100)
    parser.add_argument("--fanout", type=int, default=2, help="peers one holder uploads the model to")
    parser.add_argument("--nonzero", type=int, default=5000, help="nonzero weights of the linear model")
    parser.add_argument("--training-docs", type=int, default=2000, help="training document ids in the model")
    parser.add_argument(
        "--exchange-period",
        type=float,
        default=defaults.exchange_period,
        help="seconds between neighbour exchanges (the node's default)",
    )
    parser.add_argument(
        "--gossip-heartbeat",
        type=int,
        default=defaults.gossip_heartbeat,
        help="seconds between gossipsub heartbeats (the node's default)",
    )
    parser.add_argument(
        "--gossip-degree",
        type=int,
        default=defaults.gossip_degree,
        help="gossipsub mesh degree D: every announcement reaches each peer about D times",
    )
    parser.add_argument(
        "--reannounce-rate",
        type=float,
        default=defaults.reannounce_rate_per_topic,
        help="periodic re-announcements per second over the whole community",
    )
    parser.add_argument(
        "--retry-delay",
        type=float,
        default=2.0,
        help="back-off after a round in which every neighbour said none (x0.5-1.5, doubling, at most 4x)",
    )
    parser.add_argument(
        "--fanout-window",
        type=float,
        default=10.0,
        help="seconds over which one holder uploads at most --fanout times",
    )
    parser.add_argument(
        "--ask-gap",
        type=float,
        default=2.0,
        help="seconds between two requests of a peer lacking the model (x0.5-1.5): bounds the request rate",
    )
    parser.add_argument(
        "--dial-patience",
        type=float,
        default=10.0,
        help="seconds a peer asks only its neighbours before it also dials the publisher (x0.5-1.5)",
    )
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds (start-up included) before giving up"
    )
    args = parser.parse_args(argv)
    if args.peers < 2:
        parser.error("--peers must be at least 2")
    from p2p.host import quiet_libp2p_logging

    quiet_libp2p_logging()
    config = BenchConfig(
        args.fanout,
        args.nonzero,
        args.training_docs,
        args.exchange_period,
        args.gossip_heartbeat,
        args.gossip_degree,
        args.reannounce_rate,
        args.retry_delay,
        args.dial_patience,
        args.ask_gap,
        args.fanout_window,
    )
    try:
        result = trio.run(run, args.peers, config, args.timeout)
    except BenchTimeout as exc:
        print(json.dumps({"peers": args.peers, "error": str(exc)}), flush=True)
        return 1
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
