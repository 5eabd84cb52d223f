"""`topicswarm demo` (`make demo`): three cooperating nodes on a simulated web, then the UI or a summary.

Serves the committed fixture web (real documentation sites on loopback addresses) from a child process,
starts three `topicswarm node run` processes with their own temporary data directories that join one
network through the first node, imports a different subset of the fixture bookmarks into each (their
upstream URLs mapped to the simulated web), lets them crawl and cooperate (model exchange, meta-classifier,
pooled results, when the cooperation layer is installed), and then attaches the terminal UI to the first node
(on a terminal, when the `tui` package is installed) or prints a summary per node. Every process is stopped
on exit or Ctrl-C. Needs no network; about a minute without a terminal.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import tomli_w

from crawler.taxonomy import TaxonomyError, bookmarks_html
from node.cli.common import CliError
from node.cli.meta import each_topic, verdicts_text
from node.client import ClientError, NodeClient, NodeError, node_running
from node.datadir import DataDir
from node.wording import HARVEST_MEANS, RELEVANT_MEANS

BOOKMARKS = Path(__file__).resolve().parents[2] / "simnet" / "webs" / "fixture-bookmarks.html"
START_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0
META_LOSS = 0.2
MODELS_TIMEOUT = 60.0  # two cooperation rounds at the default interval and then some
_HREF = re.compile(r'HREF="([^"]+)"', re.IGNORECASE)
_FOLDER = re.compile(r"<H3[^>]*>(.*?)</H3>", re.IGNORECASE)


def demo_crawler_settings() -> dict[str, Any]:
    """Loopback pages cost the server little: a short delay keeps the demo brisk yet spaced per host."""
    return {
        "download_delay": 0.0,
        "autothrottle_enabled": False,
        "autothrottle_start_delay": 0.0,
        "concurrent_requests": 8,
        "concurrent_requests_per_domain": 2,
        "allowed_hosts": ["127.0.0.0/8"],
        "stats_interval": 1.0,
    }


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("demo", help="three cooperating nodes on a simulated web: the UI or a summary")
    parser.add_argument("--web", default="fixture", help="the simulated web to crawl (default: fixture)")
    parser.add_argument(
        "--bookmarks",
        type=Path,
        default=BOOKMARKS,
        help="a bookmarks file (any browser's) to split over the nodes",
    )
    parser.add_argument("--nodes", type=int, default=3, help="how many nodes (default 3)")
    parser.add_argument("--pages", type=int, default=120, metavar="N", help="pages each node crawls (120)")
    parser.add_argument("--timeout", type=float, default=45.0, help="seconds of crawling at most (45)")
    parser.add_argument("--offline", action="store_true", help="nodes crawl alone (no peer-to-peer network)")
    parser.add_argument(
        "--keep", type=Path, default=None, metavar="DIR", help="keep the data directories here"
    )
    parser.add_argument("--no-ui", action="store_true", help="print the summary even on a terminal")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON line")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.nodes < 1:
        raise CliError("--nodes must be at least 1")
    if not args.bookmarks.exists():
        raise CliError(f"no bookmarks file at {args.bookmarks}: give one with --bookmarks FILE")
    try:
        bookmarks = bookmarks_html(args.bookmarks)
    except TaxonomyError as exc:
        raise CliError(str(exc)) from exc
    with ExitStack() as stack:
        stack.enter_context(ended_by_signals())
        if args.keep is not None:
            root = args.keep
            root.mkdir(parents=True, exist_ok=True)
        else:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="topicswarm-demo-")))
        return _demo(root, args, bookmarks, stack)
    return 0  # pragma: no cover


@contextmanager
def ended_by_signals() -> Iterator[None]:
    """SIGTERM, or SIGHUP when its terminal closes, ends the demo as Ctrl-C does: through its clean-up,
    which stops the nodes and the simulated web. By default either killed the demo process alone, and its
    nodes (in sessions of their own) ran on."""

    def end(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    ending = (signal.SIGTERM, signal.SIGHUP)
    previous = {signum: signal.signal(signum, end) for signum in ending}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _demo(root: Path, args: argparse.Namespace, bookmarks: str, stack: ExitStack) -> int:
    from simnet.web import serve_web_in_subprocess

    web = stack.enter_context(serve_web_in_subprocess(args.web))
    say(f"serving the {args.web!r} web: {len(web.corpus.sites)} sites on loopback, hub {web.hub_url}")
    mapped = map_bookmarks(bookmarks, web.map_upstream)
    nodes = stack.enter_context(node_processes(root, args.nodes, args.pages, args.offline))
    clients = [stack.enter_context(NodeClient(n.url, n.token)) for n in nodes]
    for i, client in enumerate(clients):
        subset = bookmark_subset(mapped, i, args.nodes)
        answer = client.import_topics(bookmarks_html=subset)
        say(f"node {i + 1}: imported {len(answer['imported'])} topics, {answer['seeds']} seed pages")
    wait_for_crawl(clients, args.pages, args.timeout)
    if not args.offline:
        wait_for_exchange(clients, MODELS_TIMEOUT)
    cooperate(clients)
    truth = GroundTruth.of(mapped, web.label_of)
    summary = [node_summary(client, node.data, truth) for client, node in zip(clients, nodes, strict=True)]
    if sys.stdout.isatty() and not args.no_ui and not args.json and tui_available():
        say(f"attaching the UI to node 1 ({nodes[0].data.root}); quit it to stop the demo")
        subprocess.run(
            [sys.executable, "-m", "node.cli", "tui", "--data", str(nodes[0].data.root)], check=False
        )
        # the UI took the terminal: its figures were all the user saw, and quitting left an empty screen
        print(format_summary(summary))
        say("stopping the nodes and the simulated web")
        return 0
    if args.json:
        print(json.dumps({"nodes": summary, "loss": META_LOSS, "targets": truth.targets}))
    else:
        print(format_summary(summary))
    return 0


# -- bookmarks --------------------------------------------------------------------------------------------
def map_bookmarks(html: str, mapper: Callable[[str], str | None]) -> str:
    """The bookmarks file with each upstream URL replaced by its simulated-web URL (unmapped ones kept)."""
    return _HREF.sub(lambda m: f'HREF="{mapper(m.group(1)) or m.group(1)}"', html)


def bookmark_subset(html: str, node: int, nodes: int) -> str:
    """Node `node`'s seed subset: the community scenario's (simnet.scenarios.community.seed_subset), which
    keeps at least two positives per topic, the fewest a local model trains on; with fewer (the fixture has
    two bookmarks per topic) a node had no model of its own ('topic has no model yet')."""
    from simnet.scenarios.community import seed_subset

    return seed_subset(html, node, nodes)


# -- node processes ---------------------------------------------------------------------------------------
class NodeProcess:
    def __init__(self, data: DataDir, process: subprocess.Popen) -> None:
        self.data = data
        self.process = process
        self.url = ""
        self.token = ""
        self.addrs: list[str] = []


def write_demo_config(data: DataDir, pages: int) -> None:
    config = {
        "crawler": demo_crawler_settings(),
        "node": {"metrics_interval": 1.0, "max_pages": pages},
    }
    data.config.write_text(tomli_w.dumps(config), encoding="utf-8")


def start_node(data: DataDir, bootstrap: list[str], offline: bool) -> NodeProcess:
    command = [sys.executable, "-m", "node.cli", "node", "run", "--data", str(data.root)]
    command += ["--offline"] if offline else ["--listen", "/ip4/127.0.0.1/tcp/0"]
    for addr in bootstrap:
        command += ["--bootstrap", addr]
    log = open(data.root / "stdout.log", "wb")  # noqa: SIM115  (the child writes it; closed at exit)
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    return NodeProcess(data, process)


def wait_until_ready(node: NodeProcess, timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if node.process.poll() is not None:
            raise CliError(f"a demo node exited with {node.process.returncode}:\n{log_tail(node.data)}")
        if node_running(node.data):
            info = json.loads(node.data.api_address.read_text())
            node.url, node.token = info["url"], node.data.api_token.read_text().strip()
            try:
                with NodeClient(node.url, node.token) as client:
                    node.addrs = client.status()["addrs"]
                return
            except ClientError:
                pass
        time.sleep(0.2)
    raise CliError(
        f"a demo node did not start within {timeout:.0f} s; the end of its log:\n{log_tail(node.data)}\n"
        "(the demo removes its nodes' folders when it ends: --keep DIR keeps them)"
    )


def log_tail(data: DataDir, chars: int = 2000) -> str:
    """The end of a node's output and log, quoted in errors: a demo's folders are gone after it fails."""
    parts = []
    for path in (data.root / "stdout.log", data.log):
        if path.exists():
            parts.append(path.read_text(errors="replace")[-chars:].strip())
    return "\n".join(p for p in parts if p) or "(the node wrote nothing)"


@contextmanager
def node_processes(root: Path, count: int, pages: int, offline: bool) -> Iterator[list[NodeProcess]]:
    """`count` nodes joining through the first; all stopped (SIGTERM, then SIGKILL) at exit."""
    nodes: list[NodeProcess] = []
    try:
        for i in range(count):
            data = DataDir(root / f"node{i + 1}").ensure()
            write_demo_config(data, pages)
            bootstrap = nodes[0].addrs[:1] if nodes and not offline else []
            nodes.append(start_node(data, bootstrap, offline))
            wait_until_ready(nodes[-1])
            say(
                f"node {i + 1}: up, api {nodes[-1].url}"
                + (f", peer {nodes[-1].addrs[0]}" if nodes[-1].addrs else "")
            )
        yield nodes
    finally:
        stop_processes([n.process for n in nodes])


def stop_processes(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    for process in processes:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# -- the run ----------------------------------------------------------------------------------------------
def wait_for_crawl(clients: list[NodeClient], pages: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    last_line = 0.0
    while time.monotonic() < deadline:
        statuses = [c.status() for c in clients]
        done = [s["crawl"]["pages"] >= pages or not s["crawl"]["active"] for s in statuses]
        if time.monotonic() - last_line >= 5.0 or all(done):
            last_line = time.monotonic()
            say(
                "crawling: "
                + "  ".join(
                    f"node {i + 1} {s['crawl']['pages']} pages, {s['peers_online']} peers"
                    for i, s in enumerate(statuses)
                )
            )
        if all(done) and time.monotonic() > deadline - timeout + 3.0:
            return
        time.sleep(1.0)
    say(f"crawl time is up ({timeout:.0f} s)")


def wait_for_exchange(clients: list[NodeClient], timeout: float) -> None:
    """Until every node holds a model of each of its topics from every other node and pooled some peer
    results (bounded: the meta-classifiers are then built with what the nodes hold)."""
    wanted = len(clients) - 1
    deadline = time.monotonic() + timeout
    short: list[int] = []
    while wanted and time.monotonic() < deadline:
        short = [i + 1 for i, client in enumerate(clients) if not _exchanged(client, wanted)]
        if not short:
            return
        time.sleep(1.0)
    if short:
        say(f"models or pooled results still missing on node(s) {short} after {timeout:.0f} s")


def _exchanged(client: NodeClient, wanted: int) -> bool:
    try:
        held = Counter(m["topic"] for m in client.models()["models"] if _received(m))
    except NodeError:
        return True  # no cooperation layer: nothing to wait for
    topics = [t["key"] for t in client.topics()["topics"]]
    return all(held[t] >= wanted for t in topics) and client.status()["documents"]["pooled"] > 0


def _received(model: dict[str, Any]) -> bool:
    return model.get("origin") not in (None, "local") and model.get("kind", "linear") == "linear"


def cooperate(clients: list[NodeClient]) -> None:
    """With the cooperation layer: each node builds a meta-classifier per topic from its peers' models."""
    for i, client in enumerate(clients):
        try:
            built, failed = each_topic(client, None, partial(client.build_meta, loss=META_LOSS))
        except NodeError as exc:  # the node cannot cooperate at all: no other node will either
            say(f"node {i + 1}: no meta-classifier ({exc.detail})")
            return
        for topic, answer in built.items():
            say(build_line(i + 1, topic, answer))
        for topic, detail in failed.items():
            say(f"node {i + 1}: meta-classifier for {topic} failed: {detail}")


def build_line(node: int, topic: str, built: dict[str, Any]) -> str:
    used = int(built.get("peers_used") or 0)
    return (
        f"node {node}: meta-classifier for {topic} from its own model and {used} peer model"
        f"{'s' * (used != 1)}, {verdicts_text(built)}"
    )


# -- the summary ------------------------------------------------------------------------------------------
_OWN_URLS = "SELECT url FROM documents WHERE origin IS NULL"


@dataclass(frozen=True)
class GroundTruth:
    """What the simulated web knows: each page's group, and the group each topic's bookmarks point into."""

    label_of: Callable[[str], str | None]
    targets: dict[str, str]

    @classmethod
    def of(cls, bookmarks_html: str, label_of: Callable[[str], str | None]) -> GroundTruth:
        from crawler.taxonomy import parse_bookmarks
        from simnet.scenarios.community import topic_targets

        return cls(label_of, topic_targets(parse_bookmarks(bookmarks_html), label_of))


def node_summary(client: NodeClient, data: DataDir, truth: GroundTruth) -> dict[str, Any]:
    """Per node: what its API says, and the share of relevant pages and filtering accuracy against the web's
    ground truth."""
    from simnet.scenarios.community import filter_figures, read_only

    status = client.status()
    try:
        models = client.models()["models"]
    except NodeError:
        models = []
    metas: dict[str, Any] = {}
    for topic in client.topics()["topics"]:
        try:
            meta = client.meta(topic["key"])
        except NodeError as exc:
            metas[topic["key"]] = {"missing": exc.detail}
            continue
        members = meta.get("models") or []
        metas[topic["key"]] = {
            "loss": meta.get("loss"),
            "kept": meta.get("kept"),
            "rejected": meta.get("rejected"),
            "abstained": meta.get("abstained"),
            "peer_models": sum(1 for m in members if m.get("origin") != "local"),
            "own_model": any(m.get("origin") == "local" for m in members),
        }
    with read_only(data.repository) as repo:
        groups = set(truth.targets.values())
        fetched = [truth.label_of(url) for (url,) in repo.db.execute(_OWN_URLS)]
        filtering = filter_figures(repo, truth.targets, truth.label_of, META_LOSS)
    for topic, figures in filtering["filter_topics"].items():
        metas.setdefault(topic, {}).update(
            {
                "accuracy_local": figures["local"],
                "accuracy_meta": figures["meta"],
                "tested": figures["documents"],
            }
        )
    return {
        "peer_id": status["peer_id"],
        "pages": status["crawl"]["pages"],
        # the --json field names stay as scripts read them: `harvest` is the share relevant by the ground
        # truth (the printed summary says "relevant"), `accepted_share` the node's harvest per topic
        "harvest": sum(g in groups for g in fetched) / len(fetched) if fetched else None,
        "fetched": len(fetched),
        "accepted_share": status["harvest"],
        "peers": status["peers_online"],
        "models_received": sum(1 for m in models if _received(m)),
        "documents": status["documents"],
        "meta": metas,
    }


def format_summary(summary: list[dict[str, Any]]) -> str:
    """One block per node that fits 100 columns: its figures on one line, then one row per topic; what
    each column means is said once, above."""
    lines = [
        "",
        f"demo summary: ground truth is the simulated web's page groups; filtering at loss {META_LOSS:.2f}",
        f"  relevant   {RELEVANT_MEANS}",
        f"  harvest    {HARVEST_MEANS}",
        "  abstained  share of the topic's documents the meta-model leaves undecided at the loss",
        "  accuracy   filtering of the pages no model trained on: the node alone -> its meta-model",
    ]
    for i, node in enumerate(summary, start=1):
        lines.append(
            f"node {i} {(node['peer_id'] or 'offline')[:16]}: {node['pages']} pages, relevant "
            f"{_fmt(node['harvest'], 'no page fetched')}, {node['peers']} peers, "
            f"{node['models_received']} models received, {node['documents']['pooled']} pooled results"
        )
        lines.append(f"    {'topic':<13} {'harvest':<9} {'meta-model':<22} {'abstained':<12} accuracy")
        for topic in sorted(node["meta"]):
            harvest = _fmt(node["accepted_share"].get(topic), "no fetch")
            lines.append(f"    {topic[:13]:<13} {harvest:<9} {_topic_line(node['meta'][topic])}")
    return "\n".join(lines)


def _topic_line(meta: dict[str, Any]) -> str:
    """A topic's meta-model, its abstentions and its filtering accuracy, or why they are missing."""
    if "missing" in meta or "loss" not in meta:
        return f"n/a ({meta.get('missing', 'none built')})"
    judged = sum(meta.get(key) or 0 for key in ("kept", "rejected", "abstained"))
    realised = (meta["abstained"] or 0) / judged if judged else None
    peers = meta["peer_models"]
    own = "own + " if meta.get("own_model", True) else "no own, "
    members = f"{own}{peers} peer model{'s' * (peers != 1)}"
    tested = meta.get("tested")
    why_untested = "no local model to compare" if tested is None else "nothing decided"
    local = _fmt(meta.get("accuracy_local"), why_untested)
    if meta["peer_models"] == 0:
        accuracy = f"{local} (meta n/a: no peer model held, it is the local model)"
    else:
        accuracy = f"{local} -> {_fmt(meta.get('accuracy_meta'), why_untested)} on {tested or 0} pages"
    share = f"{_fmt(realised, 'no documents')} of {judged}"
    return f"{members:<22} {share:<12} {accuracy}"


def _fmt(value: float | None, why: str) -> str:
    return f"n/a ({why})" if value is None else f"{value:.2f}"


def tui_available() -> bool:
    return importlib.util.find_spec("tui") is not None and shutil.which(sys.executable) is not None
