"""Latent class fits on one thread against the libraries' default threads, side by side.

`metamodels.latent_class` fits a two-component Gaussian mixture per topic, per meta build and per fold of a
held-out curve; scikit-learn seeds each with a k-means whose OpenMP threads cost more to start than a few
thousand points do to cluster. Each round fits the same log-odds (two classes, `--views` views of
`--documents` documents, drawn afresh per round) under both settings, alternating, and one JSON line gives
the median milliseconds of each and their ratio.

    python -m simnet.bench.latent_fit --documents 1000 --views 4 --rounds 30
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from metamodels import latent_class


def two_class_log_odds(rng: np.random.Generator, documents: int, views: int) -> np.ndarray:
    """Log-odds of `views` noisy views of documents, 35% of them on topic."""
    positive = rng.random(documents) < 0.35
    centre = np.where(positive, 2.5, -2.5)[:, None]
    return centre + rng.normal(0.0, 1.5, size=(documents, views))


def timed_fit(F: np.ndarray, threads: int | None) -> float:
    latent_class.FIT_THREADS = threads
    started = time.perf_counter()
    latent_class.fit_latent_class(F, list(range(F.shape[1])), 0)
    return (time.perf_counter() - started) * 1000.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--views", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    default_ms, one_ms = [], []
    saved = latent_class.FIT_THREADS
    try:
        for _ in range(args.rounds):
            F = two_class_log_odds(rng, args.documents, args.views)
            default_ms.append(timed_fit(F, None))
            one_ms.append(timed_fit(F, 1))
    finally:
        latent_class.FIT_THREADS = saved
    default, one = statistics.median(default_ms), statistics.median(one_ms)
    print(
        f"fit of {args.documents} documents x {args.views} views: default threads {default:.1f} ms, "
        f"one thread {one:.1f} ms (medians of {args.rounds})"
    )
    print(
        json.dumps(
            {
                "default_threads_ms": round(default, 2),
                "one_thread_ms": round(one, 2),
                "ratio": round(default / one, 2) if one else None,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
