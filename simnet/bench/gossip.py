"""How fast a model spreads through a topic community of N real libp2p hosts on loopback.

    python -m simnet.bench.gossip --peers 100 --workers 4

The hosts are split over `--workers` processes (one Python process cannot carry the idle load of 100 hosts
on a 2-core machine) that talk over loopback; each process starts its hosts concurrently in batches. All
hosts join through one bootstrap address, the first host of worker 0 (membership push-pull, thesis 3.3.1),
and hold one topic. Background periods are those of a joined network (`--exchange-period`,
`--gossip-heartbeat`, printed in the result), not the sub-second ones of the unit tests. Peer 0 publishes a
signed linear model (a few thousand nonzero weights of a 2^18 feature space plus its training document
ids, ~34 KB on the wire). Dissemination, and what a "round" is here:

- a peer that has the model announces it on the topic's gossipsub topic (a small frame);
- a peer that hears an announcement and lacks the model fetches it from that announcer over the model
  protocol, checks the signature, then announces it in turn;
- each peer uploads the model to at most `--fanout` peers and answers "none" beyond that (the fetcher
  waits for the next announcer), so the model spreads as a tree instead of a star from the publisher.

Each peer records the peer it got the model from; the parent joins these records into the dissemination
tree. A peer's hop is its supplier's hop + 1 (the publisher is hop 0); `rounds_to_all` is the depth of that
tree, i.e. the number of fetch rounds until every peer has the model. If every holder served k peers per
round the depth would be about log_(k+1)(N) (k = 1: log2(N)); announcements arrive in random order and a
full supplier makes a fetcher wait, which adds a few rounds. `start_seconds` is the time to start and join
every host, `seconds_to_all` the time from publishing until the last peer has the model; `--timeout`
covers both. Prints one JSON line.

Parent and workers exchange JSON lines: a worker prints its hosts' addresses once started, reads the
address map of all hosts, prints "ready" once its hosts have neighbours and hold the topic, reads "go",
prints each peer's supplier and arrival time once all its peers have the model, reads "stop" and prints
its byte counts and peak RSS.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import os
import subprocess
import sys
import time

import numpy as np
import trio

from simnet.measure import peak_rss_mb

FEATURES = 1 << 18
TOPIC = "bench/topic"
START_BATCH = 5
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
    """What every worker needs to know; crosses the process boundary as JSON."""

    fanout: int
    nonzero: int
    training_docs: int
    exchange_period: float
    gossip_heartbeat: int


@dataclasses.dataclass
class PeerState:
    model: object | None = None
    supplier: str | None = None
    got_at: float | None = None
    uploads: int = 0
    fetching: bool = False


class Lines:
    """JSON messages, one per line, read from a trio byte stream."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.buffer = b""

    async def next(self) -> dict:
        while b"\n" not in self.buffer:
            chunk = await self.stream.receive_some(65536)
            if not chunk:
                raise EOFError("the other side of the bench closed its pipe")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)


def say(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


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


async def worker(config: BenchConfig, index: int, count: int, bootstrap: str | None) -> None:
    """Host `count` peers of the bench; worker 0's first host is the bootstrap and the publisher."""
    from p2p.codec import encode_frame
    from p2p.schemas import ModelResponse
    from p2p.signing import sign_model

    commands = Lines(trio.lowlevel.FdStream(os.dup(sys.stdin.fileno())))
    state: dict[str, PeerState] = {}
    async with trio.open_nursery() as nursery:
        services = []
        if bootstrap is None:
            services = await start_hosts(nursery, p2p_settings(config), 1)
            bootstrap = services[0].addrs()[0]
        services += await start_hosts(nursery, p2p_settings(config, (bootstrap,)), count - len(services))
        say({"event": "started", "addrs": {s.peer_id: s.p2p.transport_addrs() for s in services}})
        addrs: dict[str, list[str]] = (await commands.next())["addrs"]
        total = len(addrs)
        while min(len(s.membership.neighbours) for s in services) < min(total - 1, 5):
            await trio.sleep(0.2)
        for service in services:
            state[service.peer_id] = PeerState()
            service.set_model_provider(provider_for(state[service.peer_id], config.fanout))
            service.communities.on_announcement = listener_for(service, state, addrs, nursery)
            await service.communities.hold(TOPIC, 0)
        say({"event": "ready"})
        await commands.next()  # go
        for service in services:
            service.protocols.bytes_out.clear()
        if index == 0:
            first = services[0]
            origin = state[first.peer_id]
            origin.model = sign_model(
                first.key, bench_model(first.peer_id, config.nonzero, config.training_docs)
            )
            origin.got_at = time.time()
            first.communities.announce(TOPIC, 1)
        while any(p.model is None for p in state.values()):
            await trio.sleep(0.02)
        say({"event": "arrived", "peers": {k: [p.supplier, p.got_at] for k, p in state.items()}})
        await commands.next()  # stop: until then this worker's peers keep serving the others
        sent = [sum(s.protocols.bytes_out.values()) for s in services]
        report = {"event": "stopped", "bytes_sent": sent, "peak_rss_mb": peak_rss_mb()}
        if index == 0:
            frame = ModelResponse(TOPIC, state[services[0].peer_id].model)
            report["model_frame_bytes"] = len(encode_frame(frame, ModelResponse.MAX_FRAME))
        say(report)
        nursery.cancel_scope.cancel()


def provider_for(me: PeerState, fanout: int):
    async def provide(topic_key, version):
        if me.model is None or me.uploads >= fanout:
            return None
        me.uploads += 1
        return me.model

    return provide


def listener_for(service, state: dict[str, PeerState], addrs: dict[str, list[str]], nursery: trio.Nursery):
    from libp2p.peer.id import ID

    me = state[service.peer_id]

    async def fetch(supplier: str) -> None:
        try:
            await service.p2p.connect(ID.from_base58(supplier), addrs[supplier])
            model = await service.protocols.fetch_model(supplier, TOPIC)
        except Exception as exc:
            log.info("fetch from %s failed: %s", supplier, exc)
            model = None
        me.fetching = False
        if model is None or me.model is not None:
            return
        me.model, me.supplier, me.got_at = model, supplier, time.time()
        service.communities.announce(TOPIC, 1)

    async def heard(announcement) -> None:
        if me.model is None and not me.fetching and announcement.model_version:
            me.fetching = True
            nursery.start_soon(fetch, announcement.peer_id)

    return heard


class BenchTimeout(Exception):
    """The run did not finish within --timeout; the message says at which stage."""


def split(peers: int, workers: int) -> list[int]:
    return [peers // workers + (1 if i < peers % workers else 0) for i in range(workers)]


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


async def run(peers: int, workers: int, config: BenchConfig, timeout: float) -> dict:
    command = [
        sys.executable,
        "-m",
        "simnet.bench.gossip",
        "--worker-config",
        json.dumps(dataclasses.asdict(config)),
    ]
    procs, lines = [], []
    stage = "starting and joining hosts"
    try:
        with trio.fail_after(timeout):
            began = time.monotonic()
            bootstrap = None
            addrs: dict[str, list[str]] = {}
            for index, count in enumerate(split(peers, workers)):
                extra = ["--worker-index", str(index), "--worker-peers", str(count)]
                if bootstrap:
                    extra += ["--bootstrap", bootstrap]
                proc = await trio.lowlevel.open_process(
                    command + extra, stdin=subprocess.PIPE, stdout=subprocess.PIPE
                )
                procs.append(proc)
                lines.append(Lines(proc.stdout))
                if index == 0:  # the others need the bootstrap address
                    started = await lines[0].next()
                    addrs.update(started["addrs"])
                    first_id, first_addrs = next(iter(started["addrs"].items()))
                    bootstrap = f"{first_addrs[0]}/p2p/{first_id}"
            for reader in lines[1:]:
                addrs.update((await reader.next())["addrs"])
            await broadcast(procs, {"addrs": addrs})
            for reader in lines:
                await reader.next()  # ready
            start_seconds = time.monotonic() - began
            stage = f"spreading the model (hosts were up after {start_seconds:.0f} s)"
            await trio.sleep(3 * config.gossip_heartbeat)  # gossip meshes form on heartbeats
            t0 = time.time()
            await broadcast(procs, {"go": t0})
            arrived: dict[str, list] = {}
            for reader in lines:
                arrived.update((await reader.next())["peers"])
            stage = "stopping"
            await broadcast(procs, {"stop": True})
            stopped = [await reader.next() for reader in lines]
            for proc in procs:
                await proc.wait()
    except trio.TooSlowError:
        raise BenchTimeout(f"no result within --timeout {timeout:.0f} s; it ran out while {stage}") from None
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    hops = hops_of({peer: supplier for peer, (supplier, _) in arrived.items()})
    sent = [b for report in stopped for b in report["bytes_sent"]]
    frame_bytes = next(r["model_frame_bytes"] for r in stopped if "model_frame_bytes" in r)
    return {
        "peers": peers,
        "seconds_to_all": round(max(at for _, at in arrived.values()) - t0, 3),
        "rounds_to_all": max(hops.values()),
        "log2_peers": round(math.log2(peers), 2),
        "bytes_sent_per_peer": round(sum(sent) / peers),
        "max_bytes_sent_by_one_peer": max(sent),
        "model_frame_bytes": frame_bytes,
        "fanout": config.fanout,
        "start_seconds": round(start_seconds, 2),
        "workers": workers,
        "exchange_period": config.exchange_period,
        "gossip_heartbeat": config.gossip_heartbeat,
        "peak_rss_mb": round(sum(r["peak_rss_mb"] for r in stopped), 1),
        "max_worker_rss_mb": round(max(r["peak_rss_mb"] for r in stopped), 1),
    }


async def broadcast(procs: list, message: dict) -> None:
    data = (json.dumps(message) + "\n").encode()
    for proc in procs:
        await proc.stdin.send_all(data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--peers", type=int, default=100)
    parser.add_argument("--workers", type=int, default=4, help="processes the hosts are split over")
    parser.add_argument("--fanout", type=int, default=2, help="peers one holder uploads the model to")
    parser.add_argument("--nonzero", type=int, default=5000, help="nonzero weights of the linear model")
    parser.add_argument("--training-docs", type=int, default=2000, help="training document ids in the model")
    parser.add_argument(
        "--exchange-period", type=float, default=3.0, help="seconds between neighbour exchanges"
    )
    parser.add_argument(
        "--gossip-heartbeat", type=int, default=1, help="seconds between gossipsub heartbeats"
    )
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds (start-up included) before giving up"
    )
    parser.add_argument("--worker-config", help=argparse.SUPPRESS)
    parser.add_argument("--worker-index", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--worker-peers", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    from p2p.host import quiet_libp2p_logging

    quiet_libp2p_logging()
    if args.worker_config:
        config = BenchConfig(**json.loads(args.worker_config))
        trio.run(worker, config, args.worker_index, args.worker_peers, args.bootstrap)
        return 0
    if args.peers < 2 or not 1 <= args.workers <= args.peers:
        parser.error("--peers must be at least 2 and --workers between 1 and --peers")
    config = BenchConfig(
        args.fanout, args.nonzero, args.training_docs, args.exchange_period, args.gossip_heartbeat
    )
    try:
        result = trio.run(run, args.peers, args.workers, config, args.timeout)
    except BenchTimeout as exc:
        print(json.dumps({"peers": args.peers, "error": str(exc)}), flush=True)
        return 1
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
