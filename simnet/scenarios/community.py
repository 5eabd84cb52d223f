"""A topic community of real node processes on a simulated web, measured against the web's ground truth.

    python -m simnet.scenarios.community --web devweb --bookmarks simnet/webs/devweb-bookmarks.html \
        --nodes 4 --pages 400 [--hostile K] [--keep DIR]

Serves the web from a child process, starts N `topicswarm node run` processes (the demo's process
management: own data directories, loopback only, all joining through node 1's address, every process stopped
on exit or failure), imports a different seed subset of the bookmarks into each, lets them crawl P pages and
cooperate (model exchange, pooled results), builds every topic's meta-classifier on every node through
`POST /api/meta/build` at loss 0.2, and prints one JSON line:

    {"nodes": [{"pages", "harvest_local", "harvest_meta", "filter_accuracy_local", "filter_accuracy_meta",
                "models_received", "results_pooled", ...}], "bytes_exchanged", "bytes_crawled", ...}

Definitions (ground truth is the web's: `label_of(url)`, the group of the page's site, or of the page on a web
with page labels):
- Seeds: every node gets every topic. A topic with m bookmarks gives node i the s = min(m, max(2, ceil(m/N)))
  bookmarks starting at position floor(i*m/N), cyclically, in file order: different, overlapping subsets; a
  window an earlier node has already grows by the next bookmark until it differs (with m = 3 and N = 4 one
  node gets all three). Bookmarks outside topics (OTHERS, the negatives) go to every node.
- Target group of a topic: the majority group of its bookmarks' pages (over the whole file).
- Filter accuracy: restrictive filtering at loss 0.2 (thesis 3.2.1) of the node's own crawled documents (not
  pooled, no duplicates, not its training documents, label known): per topic, one-vs-rest (positive = the page
  is in the topic's target group), ranked as the node filters (`filtering.filtering_scores`: the topic's
  confidence less the strongest claim of a rival topic's classifier of the same kind,
  `filtering.rival_topics`, of every topic the node built one for), the 20% least
  confident documents are dismissed, the rest decided by the sign; accuracy = correct / decided,
  micro-averaged over the topics (filter_documents: the labelled documents per topic, filter_decided:
  decisions over all topics; meta_wins/meta_losses: documents the meta-classifier decided right and the local
  model did not, abstaining or wrong / the reverse; both abstain on the same number, so they mostly differ in
  which documents they dismiss; meta_sign_test_p: the exact two-sided sign test of the wins against the
  losses, the chance of a split at least that uneven if either model were as likely to be the one right on a
  document they decide differently, 1.0 when there are none). "meta" is the node's meta-classifier as stored
  after the build; "local" is what the same build makes of the node's local model alone
  (`latent_meta.meta_classifier` with no peer models: its Platt scaler from cross-validation on the node's
  labels, then its own latent class model of the node's documents), i.e. what the node decides without peers.
  filter_accuracy_local_platt: the local model with its Platt scaler only (the threshold its labels set), as
  nodes filtered before the latent class step. All score the same documents.
- Harvest: the share of the node's fetched pages whose group is a target of one of its topics. harvest_local
  counts the pages fetched before the node first held a peer model with weight > 0 (from then on its focus
  classifies with the meta-classifier), harvest_meta those fetched after (null when that never happened).
- bytes_exchanged: bytes every node sent to its peers (request/response frames and gossip announcements,
  each transferred byte counted once, by its sender; libp2p's own framing, Noise and gossip control traffic
  not included); bytes_by_message splits them by message type; bytes_crawled: bytes every node fetched from
  the web (each once).
- results_duplicates: results a peer sent for pages the node has too (its own crawl, of before or after the
  result came, or pooled from another peer): the held-URL filter saves those the node held when it asked
  (each costs ~200 B of result_sync_response).
- With --hostile K the last K nodes offer label-flipped models (`[cooperation] hostile = true`); every honest
  node reports `hostile_weights`, the weights it gave their models (GET /api/models).
Model and meta figures are read through the API and, after the nodes stopped, from their repositories
(read-only SQLite). Nothing here knows a particular web or bookmarks file. A run kept with --keep can be
measured again at another loss, without crawling: `simnet.scenarios.refilter`.
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import sqlite_utils
import tomli_w

from crawler.taxonomy import POSITIVE, Taxonomy, TaxonomyError, bookmarks_html, parse_bookmarks
from node.cli.demo import (
    cooperate,
    demo_crawler_settings,
    map_bookmarks,
    say,
    start_node,
    stop_processes,
    wait_for_crawl,
    wait_until_ready,
)
from node.client import NodeClient, NodeError
from node.datadir import DataDir

LOSS = 0.2
MIN_SEEDS = 2
SYNC_INTERVAL = 10.0  # the default: more frequent rounds contend with the crawler for the repository
MODELS_TIMEOUT = 90.0


# -- seeds and ground truth -------------------------------------------------------------------------------
def seed_positions(m: int, node: int, nodes: int) -> list[int]:
    """Which of a topic's m bookmarks (file order) node `node` of `nodes` gets (see the module docstring)."""
    return seed_position_sets(m, nodes)[node]


def seed_position_sets(m: int, nodes: int) -> list[list[int]]:
    """Every node's bookmark positions: windows of s from floor(i*m/N); a window an earlier node has
    already grows by the next bookmark until it differs (or is all m), so the nodes learn from different
    seeds wherever m allows. Fewer bookmarks than nodes used to give two nodes the same window, and those
    two then held near-copies of one model."""
    share = min(m, max(MIN_SEEDS, math.ceil(m / nodes)))
    subsets: list[list[int]] = []
    for node in range(nodes):
        start, size = (node * m) // nodes, share
        window = sorted({(start + r) % m for r in range(size)})
        while window in subsets and size < m:
            size += 1
            window = sorted({(start + r) % m for r in range(size)})
        subsets.append(window)
    return subsets


def seed_subset(html: str, node: int, nodes: int) -> str:
    """The bookmarks file as node `node` imports it: its share of every topic's bookmarks, all the rest."""
    taxonomy = parse_bookmarks(html)
    by_topic: dict[str, list[int]] = {}
    for doc in taxonomy.documents:
        if doc.polarity == POSITIVE:
            by_topic.setdefault(doc.topic, []).append(doc.line)
    kept_lines: set[int] = set()
    dropped_lines: set[int] = set()
    for lines in by_topic.values():
        keep = set(seed_positions(len(lines), node, nodes))
        for index, line in enumerate(lines):
            (kept_lines if index in keep else dropped_lines).add(line)
    drop = dropped_lines - kept_lines  # a line holding a kept bookmark stays whole
    return "".join(
        text for number, text in enumerate(html.splitlines(keepends=True), start=1) if number not in drop
    )


def topic_targets(taxonomy: Taxonomy, label_of: Callable[[str], str | None]) -> dict[str, str]:
    """Each topic's target group: the majority group of its bookmarked pages (topics without any left out)."""
    groups: dict[str, Counter[str]] = {}
    for doc in taxonomy.documents:
        label = label_of(doc.url) if doc.polarity == POSITIVE and doc.url else None
        if label is not None:
            groups.setdefault(doc.topic, Counter())[label] += 1
    return {topic: counts.most_common(1)[0][0] for topic, counts in sorted(groups.items())}


# -- node processes ---------------------------------------------------------------------------------------
@dataclass
class Member:
    """One node of the community as the scenario sees it."""

    index: int
    hostile: bool
    process: Any  # node.cli.demo.NodeProcess
    client: NodeClient | None = None

    @property
    def data(self) -> DataDir:
        return self.process.data


def write_config(data: DataDir, pages: int, hostile: bool) -> None:
    config = {
        "crawler": demo_crawler_settings(),
        "node": {"metrics_interval": 1.0, "max_pages": pages},
        "cooperation": {"sync_interval": SYNC_INTERVAL, "hostile": hostile},
    }
    data.config.write_text(tomli_w.dumps(config), encoding="utf-8")


@contextmanager
def community(root: Path, count: int, pages: int, hostile: int) -> Iterator[list[Member]]:
    """`count` networked nodes joining through node 1, the last `hostile` of them hostile; all stopped
    (SIGTERM, then SIGKILL) at exit, also when starting one fails."""
    members: list[Member] = []
    try:
        for i in range(count):
            data = DataDir(root / f"node{i + 1}").ensure()
            is_hostile = i >= count - hostile
            write_config(data, pages, is_hostile)
            bootstrap = members[0].process.addrs[:1] if members else []
            process = start_node(data, bootstrap, offline=False)
            members.append(Member(i, is_hostile, process))
            wait_until_ready(process)
            members[-1].client = NodeClient(process.url, process.token)
            say(f"node {i + 1}: up{' (hostile)' if is_hostile else ''}, api {process.url}")
        yield members
    finally:
        for member in members:
            if member.client is not None:
                member.client.close()
        stop_processes([m.process.process for m in members])


def received_linear(client: NodeClient) -> list[dict[str, Any]]:
    return [m for m in client.models()["models"] if m.get("origin") != "local" and m.get("kind") == "linear"]


def wait_for_models(members: Sequence[Member], topics: Sequence[str], timeout: float) -> None:
    """Until every node holds every other node's model of every topic it has (or the time is up)."""
    wanted = len(members) - 1
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        short = []
        for member in members:
            held = Counter(m["topic"] for m in received_linear(member.client))
            if any(held[t] < wanted for t in topics):
                short.append(member.index + 1)
        if not short:
            return
        time.sleep(1.0)
    say(f"models still missing on node(s) {short} after {timeout:.0f} s; building with what they hold")


def wait_for_pooled(members: Sequence[Member], timeout: float) -> None:
    """Until every node pooled some peer results (a round after the crawls ended), or the time is up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(m.client.status()["documents"]["pooled"] > 0 for m in members):
            return
        time.sleep(1.0)


# -- figures from the repositories --------------------------------------------------------------------------
class ReadOnlyRepository:
    """The `.db` a repository function reads, over a read-only SQLite connection."""

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        self.db = sqlite_utils.Database(self.conn)

    def close(self) -> None:
        self.conn.close()


@contextmanager
def read_only(path: Path) -> Iterator[ReadOnlyRepository]:
    repo = ReadOnlyRepository(path)
    try:
        yield repo
    finally:
        repo.close()


def sign_test_p(wins: int, losses: int) -> float:
    """Two-sided exact sign test of wins against losses (1.0 without either): whether one filter is right
    on more of the documents the two decide differently than a fair coin would make it."""
    from scipy.stats import binomtest

    return float(binomtest(wins, wins + losses).pvalue) if wins + losses else 1.0


def filter_figures(
    repo: ReadOnlyRepository, targets: dict[str, str], label_of: Callable[[str], str | None], loss: float
) -> dict[str, Any]:
    """Restrictive filtering accuracy of the local model alone and of the meta-classifier (see above)."""
    from metamodels.features import FeatureConfig, Featurizer
    from metamodels.meta_classifier import MetaClassifier
    from metamodels.meta_functions import ABSTAIN, ACCEPT
    from metamodels.restrictive import loss_targeted_decisions
    from node.cooperation import filtering, latent_meta, store, weighing
    from node.cooperation.training import labelled_data, own_documents, training_rows

    rows = training_rows(repo)
    training = {row[0] for row in rows}
    docs = [
        (label, f"{title}\n{text}")
        for url, title, text in repo.db.execute(
            "SELECT url, title, text FROM documents WHERE origin IS NULL AND duplicate_of IS NULL "
            "AND text != '' ORDER BY id"
        )
        if url not in training and (label := label_of(url)) is not None
    ]
    featurizer = Featurizer(FeatureConfig())
    X = featurizer.transform([text for _, text in docs]) if docs else None
    own = own_documents(repo, featurizer)
    labels = np.array([label for label, _ in docs])
    classifiers: dict[str, dict[str, MetaClassifier]] = {"local": {}, "meta": {}, "local_platt": {}}
    members: dict[str, list[dict[str, Any]]] = {}
    for topic in sorted(set(targets) | set(store.meta_topics(repo))):  # rivals filter as on the node
        row = store.load_meta(repo, topic) if repo.db["coop_meta"].exists() else None
        if X is None or row is None or not row["model"]:
            continue
        meta = MetaClassifier.from_dict(row["model"])
        origins = [m["origin"] for m in row["members"]]
        if "local" not in origins:
            continue
        i = origins.index("local")
        data = labelled_data(rows, topic, featurizer)
        member = weighing.local_member("local", 0, meta.models[i], data)
        classifiers["local"][topic] = latent_meta.meta_classifier([member], own, data)
        classifiers["meta"][topic] = meta
        members[topic] = row["members"]
        classifiers["local_platt"][topic] = MetaClassifier(
            models=[meta.models[i]], weights=[1.0], scalers=[meta.scalers[i]] if meta.scalers else None
        )
    scores = {
        name: {topic: latent_meta.meta_scores(meta, X) for topic, meta in metas.items()}
        for name, metas in classifiers.items()
    }
    totals = {name: [0, 0] for name in classifiers}
    changed = [0, 0]  # decided right by the meta-classifier but not by the local model, and the reverse
    per_topic: dict[str, Any] = {}
    for topic in (t for t in classifiers["meta"] if t in targets):
        truth = np.where(labels == targets[topic], ACCEPT, -1)
        figures: dict[str, Any] = {"documents": len(docs), "positives": int(np.sum(labels == targets[topic]))}
        right = {}
        for name, scored in scores.items():
            decisions = loss_targeted_decisions(filtering.filtering_margins(scored, topic), loss)
            decided = decisions != ABSTAIN
            correct = int(np.sum(decisions[decided] == truth[decided]))
            totals[name][0] += correct
            totals[name][1] += int(decided.sum())
            figures[name] = correct / int(decided.sum()) if decided.any() else None
            right[name] = decided & (decisions == truth)
        figures["meta_wins"] = int(np.sum(right["meta"] & ~right["local"]))
        figures["meta_losses"] = int(np.sum(right["local"] & ~right["meta"]))
        changed[0] += figures["meta_wins"]
        changed[1] += figures["meta_losses"]
        figures["meta_members"] = [
            {"origin": m["origin"], "weight": round(float(m["weight"]), 4)} for m in members[topic]
        ]
        per_topic[topic] = figures
    return {
        "filter_accuracy_local": totals["local"][0] / totals["local"][1] if totals["local"][1] else None,
        "filter_accuracy_meta": totals["meta"][0] / totals["meta"][1] if totals["meta"][1] else None,
        "filter_accuracy_local_platt": (
            totals["local_platt"][0] / totals["local_platt"][1] if totals["local_platt"][1] else None
        ),
        "filter_documents": len(docs),
        "filter_decided": {name: counts[1] for name, counts in totals.items()},
        "meta_wins": changed[0],
        "meta_losses": changed[1],
        "meta_sign_test_p": sign_test_p(*changed),
        "filter_topics": per_topic,
    }


def duplicate_results(repo: ReadOnlyRepository) -> int:
    """Results peers sent for pages the node has too: its own documents a peer's result named (before the
    node crawled the page or after), and pooled ones more than one peer sent (each document's `origins`
    lists every peer that sent it)."""
    query = (
        "SELECT count(*) FROM documents WHERE origins IS NOT NULL AND json_array_length(origins) > "
        "(CASE WHEN origin IS NULL THEN 0 ELSE 1 END)"
    )
    return int(repo.db.execute(query).fetchone()[0])


def harvest_figures(
    repo: ReadOnlyRepository,
    targets: dict[str, str],
    label_of: Callable[[str], str | None],
    switch: float | None,
) -> dict[str, float | None]:
    """Ground-truth harvest rate of the node's fetches before and after `switch` (a time, or None)."""
    relevant = set(targets.values())
    before = [0, 0]
    after = [0, 0]
    for url, fetched_at in repo.db.execute("SELECT url, fetched_at FROM documents WHERE origin IS NULL"):
        part = after if switch is not None and fetched_at >= switch else before
        part[0] += int(label_of(url) in relevant)
        part[1] += 1
    return {
        "harvest_local": before[0] / before[1] if before[1] else None,
        "harvest_meta": after[0] / after[1] if after[1] else None,
    }


# -- the run ----------------------------------------------------------------------------------------------
def node_api_figures(member: Member, hostile_ids: set[str]) -> dict[str, Any]:
    client = member.client
    status = client.status()
    received = received_linear(client)
    weighed = [m["weighted_at"] for m in received if m.get("weighted_at")]
    return {
        "peer_id": status["peer_id"],
        "hostile": member.hostile,
        "pages": status["crawl"]["pages"],
        "bytes_crawled": status["crawl"]["bytes_crawled"],
        "bytes_exchanged": status["bytes_exchanged"]["out"],
        "bytes_by_message": {
            k.removeprefix("out "): v
            for k, v in status.get("bytes_by_message", {}).items()
            if k.startswith("out ")
        },
        "models_received": len(received),
        "results_pooled": status["documents"]["pooled"],
        "peers_online": status["peers_online"],
        "meta_switch": min(weighed, default=None),
        "hostile_weights": None
        if member.hostile
        else [float(m.get("weight") or 0.0) for m in received if m["origin"] in hostile_ids],
    }


def run_community(
    web_name: str | Path,
    bookmarks: str,
    nodes: int,
    pages: int,
    hostile: int = 0,
    timeout: float = 900.0,
    root: Path | None = None,
) -> dict[str, Any]:
    """The whole scenario; the JSON-ready result."""
    from simnet.web import serve_web_in_subprocess

    if nodes < 2 or not 0 <= hostile < nodes:
        raise ValueError("a community needs at least 2 nodes and at least one honest node")
    started = time.monotonic()
    with ExitStack() as stack:
        if root is None:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="topicswarm-community-")))
        web = stack.enter_context(serve_web_in_subprocess(web_name))
        say(f"serving the {web.corpus.name!r} web: {len(web.corpus.sites)} sites on loopback")
        mapped = map_bookmarks(bookmarks, web.map_upstream)
        targets = topic_targets(parse_bookmarks(mapped), web.label_of)
        if not targets:
            raise ValueError("no bookmark of the file lies on this web: give the web's own bookmarks")
        say(f"topics and their target groups: {targets}")
        with community(root, nodes, pages, hostile) as members:
            for member in members:
                answer = member.client.import_topics(bookmarks_html=seed_subset(mapped, member.index, nodes))
                say(f"node {member.index + 1}: {len(answer['imported'])} topics, {answer['seeds']} seeds")
            wait_for_crawl([m.client for m in members], pages, timeout)
            wait_for_models(members, list(targets), MODELS_TIMEOUT)
            wait_for_pooled(members, 3 * SYNC_INTERVAL)
            cooperate([m.client for m in members])
            hostile_ids = {m.client.status()["peer_id"] for m in members if m.hostile}
            figures = [node_api_figures(m, hostile_ids) for m in members]
            repositories = [m.data.repository for m in members]
        for figure, repository in zip(figures, repositories, strict=True):
            with read_only(repository) as repo:
                figure.update(harvest_figures(repo, targets, web.label_of, figure.pop("meta_switch")))
                figure.update(filter_figures(repo, targets, web.label_of, LOSS))
                figure["results_duplicates"] = duplicate_results(repo)
    exchanged = sum(f["bytes_exchanged"] for f in figures)
    crawled = sum(f["bytes_crawled"] for f in figures)
    by_message: Counter[str] = Counter()
    for figure in figures:
        by_message.update(figure.pop("bytes_by_message"))
    return {
        "nodes": figures,
        "bytes_exchanged": exchanged,
        "bytes_crawled": crawled,
        "exchanged_share": exchanged / crawled if crawled else None,
        "bytes_by_message": dict(by_message.most_common()),
        "loss": LOSS,
        "targets": targets,
        "seconds": round(time.monotonic() - started, 1),
    }


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m simnet.scenarios.community", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--web", required=True, help="fixture, devweb, webkb or a folder holding sites.tsv")
    parser.add_argument("--bookmarks", type=Path, required=True, help="bookmarks.html with the topics")
    parser.add_argument("--nodes", type=int, default=4, help="node processes (default 4)")
    parser.add_argument("--pages", type=int, default=400, help="pages each node crawls (default 400)")
    parser.add_argument(
        "--hostile", type=int, default=0, metavar="K", help="the last K nodes send flipped models"
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds of crawling at most (900)")
    parser.add_argument(
        "--keep", type=Path, default=None, metavar="DIR", help="keep the data directories here"
    )
    return parser.parse_args(argv)


def scenario_main(args: argparse.Namespace, run: Callable[[str], dict[str, Any]], name: str) -> int:
    """A scenario's command line around `run(bookmarks_html)`: the bookmarks file checked, --keep made, one
    JSON line printed; a failure is one line and exit 2."""
    if not args.bookmarks.exists():
        print(f"no bookmarks file at {args.bookmarks}", file=sys.stderr)
        return 2
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    try:
        result = run(bookmarks_html(args.bookmarks))
    except (ValueError, FileNotFoundError, NodeError, TaxonomyError) as exc:
        print(f"{name} failed: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    return scenario_main(
        args,
        lambda bookmarks: run_community(
            args.web, bookmarks, args.nodes, args.pages, args.hostile, args.timeout, args.keep
        ),
        "community scenario",
    )


if __name__ == "__main__":
    sys.exit(main())
