"""How fast a model spreads through a topic community of N real libp2p hosts on loopback, in one process.

    python -m simnet.bench.gossip --peers 100

All hosts join through one bootstrap address (membership push-pull, thesis 3.3.1) and hold one topic. Peer 0
publishes a signed linear model (a few thousand nonzero weights of a 2^18 feature space plus its training
document ids, ~100 KB on the wire). Dissemination, and what a "round" is here:

- a peer that has the model announces it on the topic's gossipsub topic (a small frame);
- a peer that hears an announcement and lacks the model fetches it from that announcer over the model
  protocol, checks the signature, then announces it in turn;
- each peer uploads the model to at most `--fanout` peers and answers "none" beyond that (the fetcher
  waits for the next announcer), so the model spreads as a tree instead of a star from the publisher.

A peer's hop is its supplier's hop + 1 (the publisher is hop 0); `rounds_to_all` is the depth of that
dissemination tree, i.e. the number of fetch rounds until every peer has the model. If every holder served
k peers per round the depth would be about log_(k+1)(N) (k = 1: log2(N)); announcements arrive in random
order and a full supplier makes a fetcher wait, which adds a few rounds. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import sys
import time
from contextlib import AsyncExitStack

import numpy as np
import trio

from simnet.measure import peak_rss_mb

FEATURES = 1 << 18
log = logging.getLogger(__name__)


def bench_model(origin: str, nonzero: int, training_docs: int, seed: int = 0):
    from p2p.schemas import ModelPayload, pack_weights

    rng = np.random.default_rng(seed)
    matrix = np.zeros((1, FEATURES), dtype=np.float32)
    matrix[0, rng.choice(FEATURES, nonzero, replace=False)] = rng.normal(size=nonzero).astype(np.float32)
    packed = pack_weights(matrix)
    return ModelPayload(
        topic="bench/topic",
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


@dataclasses.dataclass
class PeerState:
    model: object | None = None
    hop: int | None = None
    got_at: float | None = None
    uploads: int = 0
    fetching: bool = False


async def run(peers: int, fanout: int, nonzero: int, training_docs: int, timeout: float) -> dict:
    from p2p.codec import encode_frame
    from p2p.communities import Announcement
    from p2p.schemas import ModelResponse
    from p2p.service import start_service
    from p2p.settings import P2PSettings
    from p2p.signing import sign_model

    settings = P2PSettings(
        listen_addrs=("/ip4/127.0.0.1/tcp/0",),
        exchange_period=0.5,
        neighbour_ttl=120.0,
        request_timeout=30.0,
        connect_timeout=10.0,
        announce_interval=0.5,
        requests_per_second=1000.0,
        request_burst=1000,
        dht_enabled=False,
    )
    topic = "bench/topic"
    state: dict[str, PeerState] = {}
    by_id: dict[str, object] = {}
    async with AsyncExitStack() as stack:
        first = await stack.enter_async_context(start_service(settings))
        joined = dataclasses.replace(settings, bootstrap=(first.addrs()[0],))
        services = [first]
        for _ in range(peers - 1):
            services.append(await stack.enter_async_context(start_service(joined)))
        for service in services:
            state[service.peer_id] = PeerState()
            by_id[service.peer_id] = service
        started = time.monotonic()
        with trio.fail_after(timeout):  # the overlay: everyone knows a few peers
            while min(len(s.membership.neighbours) for s in services) < min(peers - 1, 5):
                await trio.sleep(0.1)
        joined_after = time.monotonic() - started

        def provider_for(service):
            async def provide(topic_key, version):
                me = state[service.peer_id]
                if me.model is None or me.uploads >= fanout:
                    return None
                me.uploads += 1
                return me.model

            return provide

        async def fetch(service, announcement: Announcement) -> None:
            me = state[service.peer_id]
            try:
                supplier = by_id[announcement.peer_id]
                await service.p2p.connect(supplier.p2p.peer_id, supplier.p2p.transport_addrs())
                model = await service.protocols.fetch_model(announcement.peer_id, topic)
            except Exception as exc:
                log.info("fetch from %s failed: %s", announcement.peer_id, exc)
                model = None
            me.fetching = False
            if model is None or me.model is not None:
                return
            me.model = model
            me.hop = state[announcement.peer_id].hop + 1
            me.got_at = time.monotonic()
            service.communities.announce(topic, 1)

        def listener_for(service, nursery):
            async def heard(announcement: Announcement) -> None:
                me = state[service.peer_id]
                if me.model is None and not me.fetching and announcement.model_version:
                    me.fetching = True
                    nursery.start_soon(fetch, service, announcement)

            return heard

        async with trio.open_nursery() as nursery:
            for service in services:
                service.set_model_provider(provider_for(service))
                service.communities.on_announcement = listener_for(service, nursery)
                await service.communities.hold(topic, 0)
            await trio.sleep(3 * settings.gossip_heartbeat)  # gossip meshes form on heartbeats
            payload = bench_model(first.peer_id, nonzero, training_docs)
            signed = sign_model(first.key, payload)
            frame_bytes = len(encode_frame(ModelResponse(topic, signed), ModelResponse.MAX_FRAME))
            for s in services:
                s.protocols.bytes_out.clear()
            t0 = time.monotonic()
            origin = state[first.peer_id]
            origin.model, origin.hop, origin.got_at = signed, 0, t0
            first.communities.announce(topic, 1)
            with trio.fail_after(timeout):
                while any(p.model is None for p in state.values()):
                    await trio.sleep(0.02)
            seconds = max(p.got_at for p in state.values()) - t0
            nursery.cancel_scope.cancel()
        sent = [sum(s.protocols.bytes_out.values()) for s in services]
    hops = [p.hop for p in state.values()]
    return {
        "peers": peers,
        "seconds_to_all": round(seconds, 3),
        "rounds_to_all": max(hops),
        "log2_peers": round(math.log2(peers), 2),
        "bytes_sent_per_peer": round(sum(sent) / peers),
        "max_bytes_sent_by_one_peer": max(sent),
        "model_frame_bytes": frame_bytes,
        "fanout": fanout,
        "join_seconds": round(joined_after, 2),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--peers", type=int, default=100)
    parser.add_argument("--fanout", type=int, default=2, help="peers one holder uploads the model to")
    parser.add_argument("--nonzero", type=int, default=5000, help="nonzero weights of the linear model")
    parser.add_argument("--training-docs", type=int, default=2000, help="training document ids in the model")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before the run is abandoned")
    args = parser.parse_args(argv)
    if args.peers < 2:
        parser.error("--peers must be at least 2")
    from p2p.host import quiet_libp2p_logging

    quiet_libp2p_logging()
    result = trio.run(run, args.peers, args.fanout, args.nonzero, args.training_docs, args.timeout)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
