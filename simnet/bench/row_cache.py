"""Held-out curves of a node's topics with the featurizer's row cache off and on, side by side.

A node featurizes its newest thousand pages again for every topic's meta build and held-out curve
(`node.heldout.held_out_curve`), and its training documents for every topic. `metamodels.features.RowCache`
keeps counted rows by a digest of their text. Each round measures every topic's held-out curve of one
repository (a node's `repository.db`, e.g. from `simnet.scenarios.community --keep DIR`) from an empty cache,
once with the cache off and once on, alternating, and checks that both give the same curves; one JSON line
gives the median seconds of each and their ratio.

    python -m simnet.bench.row_cache --repository DIR/node1/repository.db --rounds 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from metamodels import features
from metamodels.features import FeatureConfig, Featurizer
from node.cooperation import store
from node.heldout import held_out_curve
from simnet.scenarios.community import read_only


def curves(repository: Path, cached: bool) -> tuple[float, dict[str, Any]]:
    """Seconds to measure every topic's held-out curve from an empty row cache, and the curves."""
    saved = features.ROW_CACHE_ENTRIES
    features.ROW_CACHE_ENTRIES = saved if cached else 0
    features._ROW_CACHES.clear()
    try:
        with read_only(repository) as repo:
            featurizer = Featurizer(FeatureConfig())
            started = time.perf_counter()
            measured = {topic: held_out_curve(repo, topic, featurizer) for topic in store.meta_topics(repo)}
            return time.perf_counter() - started, measured
    finally:
        features.ROW_CACHE_ENTRIES = saved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repository", type=Path, required=True, help="a node's repository.db")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if not args.repository.is_file():
        print(f"no repository at {args.repository}: give a node's repository.db", file=sys.stderr)
        return 2
    with read_only(args.repository) as repo:
        topics = store.meta_topics(repo) if repo.db["coop_meta"].exists() else []
    if not topics:
        print(
            f"{args.repository} has no meta-classifier: build one first (`topicswarm meta build`)",
            file=sys.stderr,
        )
        return 2
    off_s, on_s = [], []
    for _ in range(args.rounds):
        off, off_curves = curves(args.repository, cached=False)
        on, on_curves = curves(args.repository, cached=True)
        if off_curves != on_curves:
            print(
                "the curves differ with the row cache on: it changed what the featurizer gives",
                file=sys.stderr,
            )
            return 1
        off_s.append(off)
        on_s.append(on)
    off, on = statistics.median(off_s), statistics.median(on_s)
    print(
        f"held-out curves of {len(topics)} topics: row cache off {off:.2f} s, on {on:.2f} s "
        f"(medians of {args.rounds})"
    )
    print(
        json.dumps(
            {
                "topics": len(topics),
                "rounds": args.rounds,
                "off_s": round(off, 3),
                "on_s": round(on, 3),
                "ratio": round(off / on, 2) if on else None,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
