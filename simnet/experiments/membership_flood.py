"""One peer floods neighbour exchanges with invented ids: the thesis's random trim against the trim by source.

A simulated network of `--peers` peers runs the real `p2p.membership.NeighbourList` merge rules in rounds of
`--period` seconds: every peer picks a random neighbour, both exchange lists (each touches the other), both
merge. All peers join through peer 0; one more peer, the liar, joined through peer 1 and answers every
exchange with itself and `--invented` ids nobody has (new ones each time). An exchange picked with an
invented id fails: under "by_source" the node drops it at once, as `Membership.exchange_once` does; under
"thesis" (uniform random trim, failures ignored until the TTL) it stays. After `--rounds` rounds it prints
one JSON line per rule and seed, then one summary line per rule:

    {"rule", "seed", "invented_share_mean", "invented_share_max", "peers_without_honest", "fewest_honest",
     "in_degree_min", "in_degree_sd"}

invented_share: the share of a peer's list that is invented ids; peers_without_honest: peers whose list
holds no honest peer (cut off from the network); in_degree: in how many honest lists each honest peer is
(how evenly the overlay knows its peers).

    python -m simnet.experiments.membership_flood --peers 100 --rounds 40 --seeds 6
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from collections.abc import Sequence
from typing import Any

from p2p.membership import Neighbour, NeighbourList

LIAR = "liar"


class ThesisTrim(NeighbourList):
    """The thesis's list: one trim group, so every entry is as likely to be trimmed."""

    def _trim_group(self, peer_id: str) -> tuple[str, str | None]:
        return "all", None


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def simulate(rule: str, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    clock, rng = Clock(), random.Random(seed)
    kind = ThesisTrim if rule == "thesis" else NeighbourList
    peers = {f"p{i}": kind(f"p{i}", args.bound, args.ttl, clock, rng) for i in range(args.peers)}
    for name, neighbours in peers.items():
        if name != "p0":
            neighbours.touch("p0")
    peers["p1"].touch(LIAR)
    invented = 0

    def liar_list() -> list[Neighbour]:
        nonlocal invented
        ids = [f"invented{invented + i}" for i in range(args.invented)]
        invented += args.invented
        return [Neighbour(LIAR, (), clock.now), *(Neighbour(i, (), clock.now) for i in ids)]

    for _ in range(args.rounds):
        clock.now += args.period
        for name, neighbours in peers.items():
            target = neighbours.pick()
            if target is None:
                continue
            if target.peer_id.startswith("invented"):
                if rule == "by_source":
                    neighbours.remove(target.peer_id)
                continue
            if target.peer_id == LIAR:
                theirs = liar_list()
            else:
                other = peers[target.peer_id]
                theirs = other.snapshot([])
                other.merge(neighbours.snapshot([]), source=name)
                other.touch(name)
            neighbours.merge(theirs, source=target.peer_id)
            neighbours.touch(target.peer_id)
    return measure(rule, seed, peers)


def measure(rule: str, seed: int, peers: dict[str, NeighbourList]) -> dict[str, Any]:
    shares, honest_counts = [], []
    in_degree = dict.fromkeys(peers, 0)
    for neighbours in peers.values():
        ids = [n.peer_id for n in neighbours.peers()]
        honest = [p for p in ids if p in peers]
        shares.append(sum(p.startswith("invented") for p in ids) / len(ids) if ids else 0.0)
        honest_counts.append(len(honest))
        for peer_id in honest:
            in_degree[peer_id] += 1
    return {
        "rule": rule,
        "seed": seed,
        "invented_share_mean": round(statistics.mean(shares), 3),
        "invented_share_max": round(max(shares), 3),
        "peers_without_honest": sum(count == 0 for count in honest_counts),
        "fewest_honest": min(honest_counts),
        "in_degree_min": min(in_degree.values()),
        "in_degree_sd": round(statistics.pstdev(in_degree.values()), 2),
    }


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--peers", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--bound", type=int, default=40, help="neighbour list size")
    parser.add_argument("--ttl", type=float, default=300.0)
    parser.add_argument("--period", type=float, default=10.0, help="seconds a round")
    parser.add_argument("--invented", type=int, default=254, help="invented ids in each of the liar's lists")
    args = parser.parse_args(argv)
    if args.peers < 3 or args.rounds < 1 or args.seeds < 1 or args.bound < 1 or args.invented < 0:
        parser.error("needs --peers >= 3, --rounds, --seeds and --bound >= 1, --invented >= 0")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    for rule in ("thesis", "by_source"):
        runs = [simulate(rule, seed, args) for seed in range(args.seeds)]
        for run in runs:
            print(json.dumps(run))
        print(
            json.dumps(
                {
                    "rule": rule,
                    "runs": len(runs),
                    "invented_share_mean": round(statistics.mean(r["invented_share_mean"] for r in runs), 3),
                    "invented_share_max": max(r["invented_share_max"] for r in runs),
                    "peers_without_honest": sum(r["peers_without_honest"] for r in runs),
                    "in_degree_sd_mean": round(statistics.mean(r["in_degree_sd"] for r in runs), 2),
                }
            )
        )


if __name__ == "__main__":
    main()
