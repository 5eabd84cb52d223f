"""How fast a model spreads through a topic community of N real libp2p hosts on loopback, in one process.

    python -m simnet.bench.gossip --peers 100

The hosts are `P2PService`s, the node's own p2p layer: they start in batches of `START_BATCH` and join
through one bootstrap address, the first host (membership push-pull, thesis 3.3.1), then hold one topic.
Background periods are the node's defaults (`--exchange-period`, `--gossip-heartbeat`, printed in the
result), and every host keeps at most `max_connections` connections. Once the overlay has settled past
the star around the bootstrap that joining builds (every host has a mesh peer for the topic, the median
host gossipsub's D_low, `ready_mesh_degree`, and the bootstrap is down to `max_connections`), the last
host started (not the bootstrap, the busiest host) publishes a signed linear model with
`P2PService.publish_model` (a few thousand nonzero weights of a 2^18 feature space plus its training
document ids, ~34 KB on the wire). From there the bench only measures: the spread is the service's
(`p2p.dissemination`):

- one gossip announcement, the publisher's, tells the community that version v exists; members do not
  re-announce what they fetched (`gossip_messages_published` counts every gossip publish on the topic
  during the spread: the announcement, its one resend when the publisher's mesh was thin, and the hosts'
  periodic re-announcements of the topic that fall in the spread);
- each member pulls the model: it asks its connected community neighbours one at a time, gossip mesh
  first (`--ask-gap`, the node's `fetch_ask_gap`), naming the origin, and any neighbour that fetched it
  already serves it (relay; the fetcher checks the origin's signature and that the origin is the one
  announced). A neighbour without it answers "none" and, learning from the request that v exists, starts
  pulling itself (`heard_from_request`). After a round in which nobody served, the fetch backs off
  (`--retry-delay`, doubling, at most 4x). An unconnected origin is dialled only after `--dial-patience`
  (`dials`);
- a holder uploads at most `--fanout` models per `--fanout-window` seconds (the node's
  `model_uploads_per_window` / `model_upload_window`) and answers "busy" beyond (`busy_answers`), so the
  spread is a tree rather than a star from the publisher.

Each service records the peer it got the model from. A peer's hop is its supplier's hop + 1 (the
publisher is hop 0); `rounds_to_all` is the depth of that tree. If every holder served one peer per round
the depth would be about log2(N); asks that hit a peer without the model, or a busy holder, add rounds.
`start_seconds` is the time to start and join every host until the overlay has settled, `seconds_to_all`
the time from publishing until the last peer has the model; `--timeout` covers both. Prints one JSON
line, with the machine's 1-minute load average at the end (the machine is shared).

Background load, and why its default differs from the node's. All hosts share one Python thread, so the
process does the work of N machines on one core. The periodic re-announcements are the part that grows
with N: a community shares `reannounce_rate_per_topic` messages a second (node default 1.0), and each is
delivered to every member about D times, so every machine handles ~D deliveries a second but one core
emulating 100 machines handles ~600 (each a Noise-decrypted, yamux-framed, signature-checked pubsub
message): at the node's rate the core is saturated and model exchanges time out. The default
`--reannounce-rate` is therefore the node's rate scaled by min(1, `CORE_HOSTS`/N): the process then
carries the re-announcement load of `CORE_HOSTS` machines at the node's default, and each emulated host
sees CORE_HOSTS/N of its real-network share. The JSON prints both (`reannounce_rate`,
`node_reannounce_rate`); `--reannounce-rate 1.0` measures the node's figure unscaled: at 100 hosts it
does not finish (measured: 568 gossip messages in 536 s, the core at 95-100%, 1,385 of 1,706 model
requests timed out after 30 s and none was answered by the origin, so only the publisher held the model
at the 600 s timeout). From about 50 hosts
the process is CPU-bound even so (`spread_cpu_seconds` close to `seconds_to_all`; the progress lines
print the CPU share of one core). The event-loop lag only measures one scheduling pass.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import logging
import math
import os
import sys
import time

import numpy as np
import trio

from simnet.measure import peak_rss_mb

FEATURES = 1 << 18
TOPIC = "bench/topic"
START_BATCH = 5
CORE_HOSTS = 10
"""Hosts whose periodic re-announcement load at the node's rate one core carries (see the module doc)."""
PROGRESS_EVERY = 30.0
"""Seconds between progress lines on stderr while the model spreads."""
log = logging.getLogger(__name__)


def bench_model(origin: str, nonzero: int, training_docs: int, seed: int = 0):
    from p2p.messages.models import ModelPayload, pack_weights

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
class Arrival:
    """When a host's service delivered the model (its on_model callback)."""

    got_at: float | None = None


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
        fetch_ask_gap=config.ask_gap,
        fetch_dial_patience=config.dial_patience,
        model_uploads_per_window=config.fanout,
        model_upload_window=config.fanout_window,
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


class GossipCount:
    """Gossip messages published on the bench topic by one host (its pubsub's publish, wrapped)."""

    def __init__(self, pubsub) -> None:
        self.messages = 0
        self._publish = pubsub.publish
        pubsub.publish = self.publish

    async def publish(self, topic_id, data: bytes) -> None:
        self.messages += 1
        await self._publish(topic_id, data)


def bench_reannounce_rate(peers: int, node_rate: float) -> float:
    """The community's periodic re-announcement rate for `peers` hosts on one core: the node's rate
    scaled by min(1, CORE_HOSTS / peers), so the process carries the gossip load of CORE_HOSTS machines
    (see the module doc)."""
    return node_rate * min(1.0, CORE_HOSTS / peers)


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


def spread_figures(services: list) -> dict:
    """The services' own dissemination counters, summed over the hosts."""
    stats = [s.spread for s in services]
    return {
        "heard_from_request": sum(st.heard_from_request for st in stats),
        "model_requests": sum(st.requests for st in stats),
        "none_answers": sum(st.none_answers for st in stats),
        "busy_answers": sum(st.busy_answers for st in stats),
        "rounds_of_none": sum(st.rounds_of_none for st in stats),
        "failed_fetches": sum(sum(st.failures.values()) for st in stats),
        "failed_fetch_reasons": dict(sum((st.failures for st in stats), collections.Counter())),
        "dials": sum(st.dials for st in stats),
    }


def spread_note(services: list) -> str:
    figures = spread_figures(services)
    return (
        f"{figures['model_requests']} model requests, {figures['none_answers']} answered none, "
        f"{figures['busy_answers']} busy, failed: {figures['failed_fetch_reasons']}, "
        f"{figures['rounds_of_none']} rounds of none"
    )


async def run(peers: int, config: BenchConfig, timeout: float) -> dict:
    from p2p.codec import encode_frame
    from p2p.dissemination import SpreadStats
    from p2p.messages.models import ModelResponse

    stage = "starting and joining hosts"
    arrivals: dict[str, Arrival] = {}
    services: list = []
    gossip: list[GossipCount] = []
    try:
        with trio.fail_after(timeout):
            async with trio.open_nursery() as nursery:
                lag = LoopLag()
                nursery.start_soon(lag.watch)
                began = time.monotonic()
                services += await start_hosts(nursery, p2p_settings(config), 1)
                bootstrap = (services[0].addrs()[0],)
                services += await start_hosts(nursery, p2p_settings(config, bootstrap), peers - 1)
                for service in services:
                    arrival = arrivals[service.peer_id] = Arrival()
                    service.on_model(lambda model, origin, arrival=arrival: _arrived(arrival))
                    gossip.append(GossipCount(service.p2p.pubsub))
                    await service.hold_topic(TOPIC)
                stage = "waiting for every host's gossip mesh to settle"
                await wait_for_meshes(services, ready_degree(config), p2p_settings(config).max_connections)
                start_seconds = time.monotonic() - began
                start_cpu = time.process_time()
                start_lag, lag.worst = lag.worst, 0.0
                stage = f"spreading the model (hosts were up after {start_seconds:.0f} s)"
                for service in services:
                    service.protocols.bytes_out.clear()
                    service.spread = SpreadStats()
                for count in gossip:
                    count.messages = 0
                announcement_bytes_in = sum(s.communities.bytes["in"] for s in services)
                # not the bootstrap: every host joined through it and it stays the busiest; a model is
                # published by whichever node trained it
                publisher = services[-1]
                model = bench_model(publisher.peer_id, config.nonzero, config.training_docs)
                t0 = arrivals[publisher.peer_id].got_at = time.time()
                signed = await publisher.publish_model(TOPIC, model)
                next_note = time.monotonic() + PROGRESS_EVERY
                note_cpu = time.process_time()
                while any(a.got_at is None for a in arrivals.values()):
                    await trio.sleep(0.05)
                    if time.monotonic() >= next_note:
                        next_note += PROGRESS_EVERY
                        have = sum(a.got_at is not None for a in arrivals.values())
                        alone = sum(not s.membership.neighbours for s in services)
                        cpu_share = (time.process_time() - note_cpu) / PROGRESS_EVERY
                        note_cpu = time.process_time()
                        print(
                            f"{time.time() - t0:.0f} s: {have} of {peers} peers have the model; "
                            f"bootstrap connections {services[0].peers_online()}, peers with an empty "
                            f"neighbour list {alone}, event loop up to {lag.worst:.1f} s behind, "
                            f"CPU {cpu_share:.0%} of one core; {spread_note(services)}",
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
        have = sum(a.got_at is not None for a in arrivals.values())
        raise BenchTimeout(
            f"no result within --timeout {timeout:.0f} s; it ran out while {stage}, "
            f"{have} of {peers} peers had the model, event loop up to {lag.worst:.1f} s behind; "
            f"{spread_note(services)}; {sum(count.messages for count in gossip)} gossip messages published"
        ) from None
    key = (TOPIC, publisher.peer_id)
    hops = hops_of({s.peer_id: s.spread.suppliers.get(key) for s in services})
    frame = ModelResponse(TOPIC, signed)
    settings = p2p_settings(config)
    return {
        "peers": peers,
        "seconds_to_all": round(max(a.got_at for a in arrivals.values()) - t0, 3),
        "rounds_to_all": max(hops.values()),
        "log2_peers": round(math.log2(peers), 2),
        "bytes_sent_per_peer": round(sum(sent) / peers),
        "max_bytes_sent_by_one_peer": max(sent),
        "model_frame_bytes": len(encode_frame(frame, ModelResponse.MAX_FRAME)),
        "gossip_messages_published": sum(gossip_messages),
        "gossip_publishers": sum(1 for n in gossip_messages if n),
        "announcement_bytes_received": announcement_bytes_in,
        **spread_figures(services),
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
        "node_reannounce_rate": settings.__class__().reannounce_rate_per_topic,
        "dial_patience": config.dial_patience,
        "ask_gap": config.ask_gap,
        "fanout_window": config.fanout_window,
        "max_uploads_by_one_peer": max(s.spread.uploads for s in services),
        "retry_delay": config.retry_delay,
        "fetch_attempts": settings.fetch_attempts,
        "ready_mesh_degree": ready_degree(config),
        "max_connections": settings.max_connections,
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "load_average": round(os.getloadavg()[0], 2),
    }


def _arrived(arrival: Arrival) -> None:
    if arrival.got_at is None:
        arrival.got_at = time.time()


def main(argv: list[str] | None = None) -> int:
    from p2p.settings import P2PSettings

    defaults = P2PSettings()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--peers", type=int, default=100)
    parser.add_argument(
        "--fanout",
        type=int,
        default=defaults.model_uploads_per_window,
        help="models one holder uploads per --fanout-window (the node's model_uploads_per_window)",
    )
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
        default=None,
        help="periodic re-announcements per second over the whole community; default: the node's "
        f"rate scaled to what one core carries, x min(1, {CORE_HOSTS}/peers) (see the module doc)",
    )
    parser.add_argument(
        "--retry-delay",
        type=float,
        default=defaults.fetch_retry_delay,
        help="back-off after a round in which no neighbour served (x0.5-1.5, doubling, at most 4x)",
    )
    parser.add_argument(
        "--fanout-window",
        type=float,
        default=defaults.model_upload_window,
        help="seconds over which one holder uploads at most --fanout times",
    )
    parser.add_argument(
        "--ask-gap",
        type=float,
        default=defaults.fetch_ask_gap,
        help="seconds between two requests of one fetch (x0.5-1.5): bounds the request rate",
    )
    parser.add_argument(
        "--dial-patience",
        type=float,
        default=defaults.fetch_dial_patience,
        help="seconds a fetch asks only connected neighbours before it also dials the origin (x0.5-1.5)",
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
        bench_reannounce_rate(args.peers, defaults.reannounce_rate_per_topic)
        if args.reannounce_rate is None
        else args.reannounce_rate,
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
