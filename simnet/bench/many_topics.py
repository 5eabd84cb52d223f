"""Many topics: a node (or a few cooperating ones) with a realistic bookmarks file of N topics, side by side
with the same node and web given a few-topic file, in one run.

    python -m simnet.bench.many_topics --web devweb --topics 20,60,150 [--nodes 2] [--pages 300]

Real users' bookmarks hold dozens to hundreds of nested folders; each run here imports a file generated from
the web (`simnet.web.bookmarks`: N folders, a few bookmarks each) and, first, the web's own bookmarks
(simnet/webs/WEB-bookmarks.html, or --baseline FILE; generated with 3 topics for a web without one). Each run
starts fresh node processes (the community scenario's: own data directories, loopback, node i importing its
seed subset of the file), and measures:

- import_s: `POST /api/topics/import` (fetching every bookmark, storing, training the crawl's focus);
- pages_per_s: pages stored from the import's answer until the crawl reached --pages (node 1);
- rss_mb_max: the node process's resident memory, largest sample (node 1, sampled each second);
- api_ms status/topics/search: GET /api/status, /api/topics and /api/search?q=... while the crawl runs
  (median and max of the samples, node 1);
- cli_status_s, cli_topics_s, topics_lines: `topicswarm status` and `topics list` run as a user would (their
  time, and how many lines `topics list` prints);
- with --nodes >= 2: models_s, the seconds after the crawl until every node holds every other node's model of
  each of its topics (null when that did not happen within --models-timeout), models_held/models_wanted at
  that point, bytes_per_topic (bytes node 1 sent its peers, per topic), meta_build_s (POST /api/meta/build,
  mean over up to three topics);
- after the nodes stopped, on node 1's repository (a copy): focus_train_s (the crawl's topic model trained
  from the stored taxonomy, as at an import or a start), retrain_s (one re-organisation of the focus loop, as
  every `retrain_every` pages: link analysis, archetypes, retraining; the crawl waits for it), and
  coop_train_s (what a cooperation round spends training every topic's local model, as
  `Exchange.refresh_local_models` does when the training documents changed, with the node's
  `FeatureCache`) beside coop_train_uncached_s (the same with every topic featurizing every document
  again, as before that cache).

Prints a table (one column per run, and N / baseline ratios), then one JSON line of every figure.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import psutil
import scipy.sparse as sp

from crawler.taxonomy import bookmarks_html, load_taxonomy
from node.cli.demo import map_bookmarks, say, wait_for_crawl
from node.client import NodeClient, NodeError, NodeUnreachable
from simnet.scenarios.community import Member, community, read_only, seed_subset
from simnet.web.bookmarks import generated_bookmarks

ROOT = Path(__file__).resolve().parents[2]
SEARCH = "function"


class Sampler:
    """Node 1's RSS and API latencies, sampled each second in a thread until stopped."""

    def __init__(self, member: Member) -> None:
        self.client = NodeClient(member.process.url, member.process.token)
        self.process = psutil.Process(member.process.process.pid)
        self.samples: dict[str, list[float]] = {"rss_mb": [], "status": [], "topics": [], "search": []}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _timed(self, name: str, call: Any) -> None:
        started = time.perf_counter()
        try:
            call()
        except NodeUnreachable:  # no answer within the client's timeout: counted at that time
            pass
        except NodeError:
            return
        self.samples[name].append((time.perf_counter() - started) * 1000)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples["rss_mb"].append(self.process.memory_info().rss / 2**20)
            self._timed("status", self.client.status)
            self._timed("topics", self.client.topics)
            self._timed("search", lambda: self.client.search(SEARCH, limit=20))
            self._stop.wait(1.0)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.client.close()


def cli_seconds(data: Path, *args: str) -> tuple[float, int]:
    """Seconds a `topicswarm` command took and the lines it printed."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "node.cli", *args, "--data", str(data)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    return time.perf_counter() - started, len(done.stdout.splitlines())


def held_models(members: Sequence[Member], topics: Sequence[str]) -> tuple[int, int]:
    """(peer models held, peer models wanted) of the given topics over all nodes."""
    wanted = held = 0
    for member in members:
        models = member.client.models()["models"]
        got = {
            (m["topic"], m["origin"]) for m in models if m.get("origin") != "local" and m["kind"] == "linear"
        }
        wanted += len(topics) * (len(members) - 1)
        held += sum(1 for topic, _ in got if topic in topics)
    return held, wanted


def wait_models(members: Sequence[Member], topics: Sequence[str], timeout: float) -> float | None:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        held, wanted = held_models(members, topics)
        if held >= wanted:
            return time.monotonic() - started
        time.sleep(2.0)
    return None


def offline_figures(repository: Path, work: Path) -> dict[str, Any]:
    """Training times measured in this process on a copy of node 1's repository."""
    from crawler.focus import TopicFocus
    from crawler.repository import Repository
    from metamodels.features import FeatureConfig, Featurizer
    from node.cooperation import training

    copy = work / "copy.db"
    with read_only(repository) as repo:
        target = sqlite3.connect(copy)
        repo.conn.backup(target)
        target.close()
    repo = Repository(copy)
    try:
        taxonomy = load_taxonomy(repo)
        started = time.perf_counter()
        focus = TopicFocus(taxonomy)
        focus_train_s = time.perf_counter() - started
        focus.repo = repo
        started = time.perf_counter()
        focus.reorganise()
        retrain_s = time.perf_counter() - started
        featurizer = Featurizer(FeatureConfig())
        cache = training.FeatureCache(featurizer)
        started = time.perf_counter()
        train_every_topic(
            taxonomy.topics,
            lambda topic: cache.labelled(repo, topic),
            lambda: cache.own(repo),
        )
        coop_train_s = time.perf_counter() - started
        started = time.perf_counter()
        train_every_topic(  # each topic featurizing every document again, as before the node's cache
            taxonomy.topics,
            lambda topic: training.labelled_data(training.training_rows(repo), topic, featurizer),
            lambda: training.own_documents(repo, featurizer),
        )
        coop_train_uncached_s = time.perf_counter() - started
    finally:
        repo.close()
    return {
        "focus_train_s": focus_train_s,
        "retrain_s": retrain_s,
        "coop_train_s": coop_train_s,
        "coop_train_uncached_s": coop_train_uncached_s,
        "coop_train_speedup": coop_train_uncached_s / coop_train_s if coop_train_s else None,
    }


def train_every_topic(topics: Sequence[str], labelled: Any, own: Any) -> None:
    """What a cooperation round spends training every topic's local model (as `Exchange._train`)."""
    from node.cooperation import training
    from node.cooperation.settings import CooperationSettings

    settings = CooperationSettings()
    for topic in topics:
        data = labelled(topic)
        model = training.train_local(data, settings.min_training_docs)
        if model is None:
            continue
        X = sp.vstack([own(), data.X], format="csr")
        training.pruned(model, data, X, settings.default_loss, settings.prune_agreement)


def run_one(web: Any, label: str, html: str, args: argparse.Namespace) -> dict[str, Any]:
    say(f"run {label}: {args.nodes} node(s), {args.pages} pages")
    figures: dict[str, Any] = {"run": label}
    with tempfile.TemporaryDirectory(prefix="topicswarm-many-") as tmp:
        root = Path(tmp)
        with community(root, args.nodes, args.pages, 0) as members:
            first = members[0]
            started = time.perf_counter()
            answer = first.client.import_topics(bookmarks_html=seed_subset(html, 0, args.nodes))
            figures["import_s"] = time.perf_counter() - started
            for member in members[1:]:
                member.client.import_topics(bookmarks_html=seed_subset(html, member.index, args.nodes))
            topics = answer["imported"]
            figures.update(topics=len(topics), bookmarks=answer["documents"], failed=answer["failed"])
            with Sampler(first) as sampler:
                started = time.monotonic()
                pages_before = first.client.status()["crawl"]["pages"]
                wait_for_crawl([m.client for m in members], args.pages, args.timeout)
                pages = first.client.status()["crawl"]["pages"] - pages_before
                figures["pages_per_s"] = pages / (time.monotonic() - started)
                figures["cli_status_s"], _ = cli_seconds(first.data.root, "status")
                figures["cli_topics_s"], figures["topics_lines"] = cli_seconds(
                    first.data.root, "topics", "list"
                )
            figures["rss_mb_max"] = max(sampler.samples["rss_mb"], default=None)
            for name in ("status", "topics", "search"):
                values = sampler.samples[name]
                figures[f"api_{name}_ms_median"] = statistics.median(values) if values else None
                figures[f"api_{name}_ms_max"] = max(values, default=None)
            if args.nodes >= 2:
                figures["models_s"] = wait_models(members, topics, args.models_timeout)
                figures["models_held"], figures["models_wanted"] = held_models(members, topics)
                status = first.client.status()
                figures["bytes_per_topic"] = status["bytes_exchanged"]["out"] / max(1, len(topics))
                built = []
                for topic in sorted(topics, key=lambda t: (t.count("/"), t))[-3:]:
                    started = time.perf_counter()
                    try:
                        first.client.build_meta(topic, 0.2)
                    except NodeError as exc:
                        say(f"meta build of {topic}: {exc.detail}")
                        continue
                    built.append(time.perf_counter() - started)
                figures["meta_build_s"] = statistics.mean(built) if built else None
            repository = first.data.repository
        figures.update(offline_figures(repository, root))
    say(json.dumps(figures))
    return figures


def table(runs: list[dict[str, Any]]) -> str:
    keys = [k for k in runs[0] if k != "run"]
    base = runs[0]
    head = ["metric", *(f"{r['run']}" for r in runs), *(f"{r['run']}/{base['run']}" for r in runs[1:])]
    lines = ["  ".join(f"{h:>14}" for h in head)]
    for key in keys:
        values = [r.get(key) for r in runs]
        cells = [key, *(_fmt(v) for v in values)]
        for v in values[1:]:
            b = base.get(key)
            cells.append(
                _fmt(v / b) + "x" if isinstance(v, int | float) and isinstance(b, int | float) and b else "-"
            )
        lines.append("  ".join(f"{c:>14}" for c in cells))
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m simnet.bench.many_topics", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--web", default="devweb", help="fixture, devweb, webkb or a folder holding sites.tsv"
    )
    parser.add_argument("--topics", default="20,60,150", help="topic counts to generate, comma-separated")
    parser.add_argument("--baseline", type=Path, default=None, help="the few-topic bookmarks to compare with")
    parser.add_argument("--per-topic", type=int, default=4, help="bookmarks per generated folder (4)")
    parser.add_argument("--nodes", type=int, default=1, help="node processes per run (1)")
    parser.add_argument("--pages", type=int, default=300, help="pages each node crawls (300)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds of crawling at most (300)")
    parser.add_argument(
        "--models-timeout", type=float, default=120.0, help="seconds to wait for models (120)"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    from simnet.web import serve_web_in_subprocess

    args = parse_args(argv)
    sizes = [int(n) for n in args.topics.split(",") if n.strip()]
    with ExitStack() as stack:
        web = stack.enter_context(serve_web_in_subprocess(args.web))
        baseline = args.baseline or ROOT / "simnet" / "webs" / f"{web.corpus.name}-bookmarks.html"
        if baseline.is_file():
            runs = [(f"{baseline.stem}", map_bookmarks(bookmarks_html(baseline), web.map_upstream))]
        else:
            runs = [("3", generated_bookmarks(web.corpus, 3, args.per_topic, base_url=web.base_url))]
        runs += [
            (str(n), generated_bookmarks(web.corpus, n, args.per_topic, base_url=web.base_url)) for n in sizes
        ]
        results = [run_one(web, label, html, args) for label, html in runs]
    print(table(results))
    print(json.dumps({"web": args.web, "nodes": args.nodes, "pages": args.pages, "runs": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
