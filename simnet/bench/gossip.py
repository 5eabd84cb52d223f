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

- a peer that has the model announces it on the topic's gossipsub topic (a small frame);
- a peer that hears an announcement and lacks the model fetches it over the model protocol from an
  announcer in its gossip mesh (connected, newest first), checks the signature, then announces it in
  turn; only when no mesh neighbour announced within `--dial-patience` does it ask any announcer it heard
  (at random). Asking the newest announcer heard, mesh or not, made every round a herd of N requests
  (most of them new connections) at one host, and 100 hosts jammed;
- each peer uploads the model to at most `--fanout` peers and answers "none" beyond that, so the model
  spreads as a tree instead of a star from the publisher; the fetcher moves on to the next announcer
  at once, and retries announcers that failed (timeout, reset) after `--retry-delay`.

Each peer records the peer it got the model from. A peer's hop is its supplier's hop + 1 (the publisher is
hop 0); `rounds_to_all` is the depth of that tree, the number of fetch rounds until every peer has the
model. If every holder served k peers per round the depth would be about log_(k+1)(N) (k = 1: log2(N));
announcements arrive in random order and a full supplier sends the fetcher on, which adds a few rounds.
`start_seconds` is the time to start and join every host until all have a gossip mesh, `seconds_to_all`
the time from publishing until the last peer has the model; `--timeout` covers both. Prints one JSON
line, with the machine's 1-minute load average at the end (the machine is shared).

All hosts share one Python thread: from about 30 hosts the process is CPU-bound while the model spreads
(`spread_cpu_seconds` close to `seconds_to_all`; the progress lines print the CPU share of one core),
mostly in yamux/Noise framing of gossip traffic, so every stream setup waits behind the other hosts'
frames. The event-loop lag only measures one scheduling pass and stays under a second meanwhile.
"""

from __future__ import annotations

import argparse
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


@dataclasses.dataclass
class PeerState:
    model: object | None = None
    supplier: str | None = None
    got_at: float | None = None
    uploads: int = 0
    fetching: bool = False
    heard: list[str] = dataclasses.field(default_factory=list)
    """Announcers of the model, in the order heard."""
    full: set[str] = dataclasses.field(default_factory=set)
    """Announcers that answered "none": they have served their fan-out."""
    failures: int = 0
    news: trio.Event = dataclasses.field(default_factory=trio.Event)
    """Set when a new announcer is heard (a fetcher waiting for one in its mesh wakes up)."""


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


def provider_for(me: PeerState, fanout: int):
    async def provide(topic_key, version):
        if me.model is None or me.uploads >= fanout:
            return None
        me.uploads += 1
        return me.model

    return provide


def pick_supplier(me: PeerState, asked: set[str], mesh: set[str], dial: bool) -> str | None:
    """The announcer to ask next: one in this peer's gossip mesh (newest first), else, when `dial`, a
    random one.

    Every peer hears an announcement at about the same time. When all of them asked the newest
    announcer (the previous rule) each round was a herd of N requests, most of them new connections
    (Noise handshake, identify, pubsub streams), at one host that serves `fanout` of them: the spread
    grew as N^2, and at 100 hosts the publisher and then the bootstrap (connected to every host that
    joined through it) timed out. A mesh neighbour is connected and has at most D_high such askers, so
    the model spreads along the mesh; dialling a random announcer is the fallback of a peer none of
    whose mesh neighbours announced within `dial_patience`."""
    candidates = [a for a in reversed(me.heard) if a not in asked and a not in me.full]
    near = [a for a in candidates if a in mesh]
    if near:
        return near[0]
    return random.choice(candidates) if dial and candidates else None


def listener_for(
    service, me: PeerState, addrs: dict[str, list[str]], config: BenchConfig, nursery: trio.Nursery
):
    """The announcement handler of one peer: fetch from the announcers heard until one serves."""
    from libp2p.peer.id import ID

    from p2p.communities import gossip_topic

    def mesh() -> set[str]:
        return {str(p) for p in service.p2p.gossipsub.mesh.get(gossip_topic(TOPIC), ())}

    async def fetch(supplier: str) -> str:
        """'ok', 'full' (the supplier served its fan-out) or 'failed'."""
        try:
            await service.p2p.connect(ID.from_base58(supplier), addrs[supplier])
            model = await service.protocols.fetch_model(supplier, TOPIC)
        except Exception as exc:
            log.info("fetch from %s failed: %s", supplier, exc)
            me.failures += 1
            return "failed"
        if model is None:
            return "full"
        if me.model is None:
            me.model, me.supplier, me.got_at = model, supplier, time.time()
            service.communities.announce(TOPIC, 1)
        return "ok"

    async def fetch_until_served() -> None:
        asked: set[str] = set()
        dial_after = trio.current_time() + config.dial_patience * random.uniform(0.5, 1.5)
        while me.model is None:
            dial = trio.current_time() >= dial_after
            supplier = pick_supplier(me, asked, mesh(), dial)
            if supplier is None:
                if dial and all(a in me.full for a in me.heard):
                    break  # every announcer heard is full: the next announcement starts a new loop
                if dial:  # only failed announcers left: ask them again
                    await trio.sleep(config.retry_delay)
                    asked.clear()
                    continue
                me.news = trio.Event()
                with trio.move_on_at(min(dial_after, trio.current_time() + 1.0)):
                    await me.news.wait()  # a new announcer, or the mesh changed (each heartbeat)
                continue
            asked.add(supplier)
            if await fetch(supplier) == "full":
                me.full.add(supplier)
        me.fetching = False

    async def heard(announcement) -> None:
        if not announcement.model_version or announcement.peer_id not in addrs:
            return
        if announcement.peer_id not in me.heard:
            me.heard.append(announcement.peer_id)
            me.news.set()
        if me.model is None and not me.fetching:
            me.fetching = True
            nursery.start_soon(fetch_until_served)

    return heard


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
                    service.set_model_provider(provider_for(me, config.fanout))
                    service.communities.on_announcement = listener_for(service, me, addrs, config, nursery)
                    await service.communities.hold(TOPIC, 0)
                stage = "waiting for every host's gossip mesh to settle"
                await wait_for_meshes(services, ready_degree(config), p2p_settings(config).max_connections)
                start_seconds = time.monotonic() - began
                start_cpu = time.process_time()
                start_lag, lag.worst = lag.worst, 0.0
                stage = f"spreading the model (hosts were up after {start_seconds:.0f} s)"
                for service in services:
                    service.protocols.bytes_out.clear()
                # not the bootstrap: every host joined through it and it stays the busiest; a model is
                # published by whichever node trained it
                publisher = services[-1]
                origin = state[publisher.peer_id]
                model = bench_model(publisher.peer_id, config.nonzero, config.training_docs)
                origin.model = sign_model(publisher.key, model)
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
                spread_cpu = time.process_time() - start_cpu
                nursery.cancel_scope.cancel()
    except trio.TooSlowError:
        have = sum(p.model is not None for p in state.values())
        raise BenchTimeout(
            f"no result within --timeout {timeout:.0f} s; it ran out while {stage}, "
            f"{have} of {peers} peers had the model, event loop up to {lag.worst:.1f} s behind"
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
        "failed_fetches": sum(p.failures for p in state.values()),
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
        "--retry-delay", type=float, default=2.0, help="seconds before asking failed announcers again"
    )
    parser.add_argument(
        "--dial-patience",
        type=float,
        default=10.0,
        help="seconds a peer waits for an announcer in its gossip mesh before asking any (x0.5-1.5)",
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
