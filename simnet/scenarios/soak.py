"""A community of node processes left running for a long time, watched for what grows.

    python -m simnet.scenarios.soak --web devweb --bookmarks simnet/webs/devweb-bookmarks.html \
        --nodes 3 --pages 2000 --minutes 60 [--every 30] [--keep DIR]

A node is meant to run headless for hours: memory, file descriptors, threads and API latency must level off
once its crawl is done, not climb with every sync round, re-announcement or meta-classifier build. This starts
the community scenario's nodes (`simnet.scenarios.community`: own data directories, loopback, different seed
subsets of the bookmarks), lets them crawl up to P pages each and cooperate for the given minutes while a user
would use them (a search and a meta-classifier build per node every `--use-every` samples), samples each
process every `--every` seconds, stops them with SIGTERM and prints one JSON line:

    {"minutes", "samples", "nodes": [{"pages", "rss_mb", "fds", "threads", "db_mb", "api_ms",
      "settled_samples", "rss_drift_mb_per_h", "fds_drift_per_h", "settled_cpu_percent", "exit_code"}]}

Each of rss_mb, fds, threads, db_mb, api_ms is {"first", "last", "max"} over the samples. The drift figures
compare the two halves of the settled samples (those taken once every node's crawl had ended): the median of
the later half less the median of the earlier half, per hour between the halves' middles (null with fewer
than 4 samples). Medians, because a node's RSS swings by tens of MB between samples (meta-classifier builds,
sync rounds): a least-squares slope over half an hour of such samples read +/-50 MB/h on flat series.
settled_cpu_percent is the share of one core the node's process used between the first and the last settled
sample, the user's searches and builds included (null with fewer than 2): a node with nothing to do should
be near 0 (an announce loop that never waited held one at 100%, meta-classifiers rebuilt every round at 7%).
exit_code is the node's on SIGTERM (0: it shut down cleanly). Nothing here knows a particular web or
bookmarks file.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from crawler.taxonomy import parse_bookmarks
from node.cli.demo import META_LOSS, map_bookmarks, say
from node.client import NodeError
from simnet.scenarios.community import Member, community, scenario_main, seed_subset, topic_targets

SEARCHES = ("configuration", "install", "function", "server", "matrix")
MIN_SETTLED = 4


def sample(member: Member) -> dict[str, float]:
    """One look at a node: its process, its repository files and how fast its API answers."""
    process = psutil.Process(member.process.process.pid)
    started = time.perf_counter()
    status = member.client.status()
    api_ms = (time.perf_counter() - started) * 1000
    repository = member.data.repository
    db_bytes = sum(p.stat().st_size for p in repository.parent.glob(repository.name + "*") if p.is_file())
    return {
        "t": time.monotonic(),
        "pages": status["crawl"]["pages"],
        "crawling": bool(status["crawl"]["active"]),
        "pooled": status["documents"]["pooled"],
        "peers": status["peers_online"],
        "cpu_s": sum(process.cpu_times()[:2]),  # user + system
        "rss_mb": process.memory_info().rss / 2**20,
        "fds": process.num_fds(),
        "threads": process.num_threads(),
        "db_mb": db_bytes / 2**20,
        "api_ms": api_ms,
    }


def use(member: Member, round_: int) -> None:
    """What a user does now and then: a search, and a meta-classifier built again for one topic."""
    member.client.search(SEARCHES[round_ % len(SEARCHES)], limit=20)
    topics = [t["key"] for t in member.client.topics()["topics"]]
    if topics:
        try:
            member.client.build_meta(topics[round_ % len(topics)], META_LOSS)
        except NodeError as exc:  # no peer models yet: a user would see this, and so does the log
            say(f"node {member.index + 1}: meta build: {exc.detail}")


def drift_per_hour(times: Sequence[float], values: Sequence[float]) -> float | None:
    """Median of the later half of values less that of the earlier half, per hour between the halves'
    middle times (seconds); None below `MIN_SETTLED` samples."""
    if len(times) < MIN_SETTLED:
        return None
    half = len(times) // 2
    early, late = (slice(0, half), slice(half, None))
    hours = (float(np.median(times[late])) - float(np.median(times[early]))) / 3600
    return float(np.median(values[late]) - np.median(values[early])) / hours


def spread(values: Sequence[float]) -> dict[str, float]:
    return {"first": round(values[0], 1), "last": round(values[-1], 1), "max": round(max(values), 1)}


def node_figures(samples: list[dict[str, Any]], settled_from: float | None) -> dict[str, Any]:
    settled = [s for s in samples if settled_from is not None and s["t"] >= settled_from]
    times = [s["t"] for s in settled]
    return {
        "pages": samples[-1]["pages"],
        "pooled": samples[-1]["pooled"],
        **{key: spread([s[key] for s in samples]) for key in ("rss_mb", "fds", "threads", "db_mb", "api_ms")},
        "settled_samples": len(settled),
        "rss_drift_mb_per_h": drift_per_hour(times, [s["rss_mb"] for s in settled]),
        "fds_drift_per_h": drift_per_hour(times, [s["fds"] for s in settled]),
        "settled_cpu_percent": cpu_percent(settled),
    }


def cpu_percent(samples: Sequence[dict[str, Any]]) -> float | None:
    """CPU seconds the process used from the first sample to the last, per wall second, in percent."""
    if len(samples) < 2 or samples[-1]["t"] <= samples[0]["t"]:
        return None
    used = samples[-1]["cpu_s"] - samples[0]["cpu_s"]
    return round(100 * used / (samples[-1]["t"] - samples[0]["t"]), 1)


def run_soak(
    web_name: str | Path,
    bookmarks: str,
    nodes: int,
    pages: int,
    minutes: float,
    every: float,
    use_every: int,
    root: Path | None = None,
) -> dict[str, Any]:
    """The whole soak; the JSON-ready result."""
    from simnet.web import serve_web_in_subprocess

    if nodes < 2:
        raise ValueError("a community needs at least 2 nodes")
    with ExitStack() as stack:
        if root is None:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="topicswarm-soak-")))
        web = stack.enter_context(serve_web_in_subprocess(web_name))
        mapped = map_bookmarks(bookmarks, web.map_upstream)
        if not topic_targets(parse_bookmarks(mapped), web.label_of):
            raise ValueError("no bookmark of the file lies on this web: give the web's own bookmarks")
        samples: list[list[dict[str, Any]]] = [[] for _ in range(nodes)]
        settled_from: float | None = None
        with community(root, nodes, pages, 0) as members:
            for member in members:
                member.client.import_topics(bookmarks_html=seed_subset(mapped, member.index, nodes))
            deadline = time.monotonic() + minutes * 60
            round_ = 0
            while True:
                for member, taken in zip(members, samples, strict=True):
                    taken.append(sample(member))
                latest = [taken[-1] for taken in samples]
                if settled_from is None and not any(s["crawling"] for s in latest) and round_ > 0:
                    settled_from = latest[0]["t"]
                    say("every crawl has ended: the samples from here on measure drift")
                say(
                    f"sample {round_ + 1}: "
                    + "  ".join(
                        f"node {i + 1} {s['pages']} pages {s['rss_mb']:.0f} MB {s['fds']} fds "
                        f"{s['api_ms']:.0f} ms {s['cpu_s']:.0f} cpu-s"
                        for i, s in enumerate(latest)
                    )
                )
                round_ += 1
                if time.monotonic() + every > deadline:
                    break
                if use_every and round_ % use_every == 0:
                    for member in members:
                        use(member, round_ // use_every)
                time.sleep(max(0.0, every - (time.monotonic() - latest[-1]["t"])))
            processes = [m.process.process for m in members]
        exit_codes = [p.returncode for p in processes]  # community() stopped them with SIGTERM
    return {
        "minutes": minutes,
        "samples": len(samples[0]),
        "nodes": [
            {**node_figures(taken, settled_from), "exit_code": code}
            for taken, code in zip(samples, exit_codes, strict=True)
        ],
    }


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m simnet.scenarios.soak", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--web", required=True, help="fixture, devweb, webkb or a folder holding sites.tsv")
    parser.add_argument("--bookmarks", type=Path, required=True, help="bookmarks.html with the topics")
    parser.add_argument("--nodes", type=int, default=3, help="node processes (default 3)")
    parser.add_argument("--pages", type=int, default=2000, help="pages each node crawls at most (2000)")
    parser.add_argument("--minutes", type=float, default=60.0, help="how long the nodes run (60)")
    parser.add_argument("--every", type=float, default=30.0, help="seconds between samples (30)")
    parser.add_argument(
        "--use-every", type=int, default=4, metavar="K", help="a search and a meta build every K samples (4)"
    )
    parser.add_argument(
        "--keep", type=Path, default=None, metavar="DIR", help="keep the data directories here"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    return scenario_main(
        args,
        lambda bookmarks: run_soak(
            args.web, bookmarks, args.nodes, args.pages, args.minutes, args.every, args.use_every, args.keep
        ),
        "soak",
    )


if __name__ == "__main__":
    sys.exit(main())
