"""Restrictive filtering of kept community runs measured again, at any loss.

    python -m simnet.scenarios.refilter --web devweb --bookmarks simnet/webs/devweb-bookmarks.html \
        --loss 0.3 KEEP_DIR [KEEP_DIR ...]

Each KEEP_DIR is what `simnet.scenarios.community --keep` left: node1, node2, ... with their repositories.
Every node's stored meta-classifiers and its local model alone are scored on the node's own documents as the
scenario scores them (`community.filter_figures`), at the loss given, so a run's figures at its own loss are
the ones it printed. A community run takes minutes; measuring its filters at other losses takes seconds.
The web is not served: its kept URLs name the loopback port the run served it on, and the ground truth is
that layout's. Prints one JSON line per run ({"run", "loss", "nodes": [{"filter_accuracy_local",
"filter_accuracy_meta", ...}]}, the scenario's per-topic figures included), then a summary line: the runs
where every node's meta-classifier filtered better than the node alone, the nodes better, equal and
worse, and those significantly better or worse (the scenario's sign test below 0.05).
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from crawler.taxonomy import TaxonomyError, bookmarks_html, parse_bookmarks
from node.cli.demo import map_bookmarks
from simnet.scenarios.community import filter_figures, read_only, topic_targets
from simnet.web.corpus import WebCorpus, load_web
from simnet.web.layout import WebLayout

FIGURES = (
    "filter_accuracy_local",
    "filter_accuracy_meta",
    "filter_accuracy_local_platt",
    "filter_decided",
    "meta_wins",
    "meta_losses",
    "meta_sign_test_p",
    "filter_topics",
)
SIGNIFICANCE = 0.05  # a node's sign test below it counts it significantly better or worse


def node_dirs(run: Path) -> list[Path]:
    """The run's node directories in node order (node2 before node10)."""
    found = [p for p in run.glob("node*") if re.fullmatch(r"node\d+", p.name) and p.is_dir()]
    return sorted(found, key=lambda p: int(p.name.removeprefix("node")))


def crawled_url(repository: Path) -> str:
    """A page the node crawled, to tell the web it was served from."""
    with read_only(repository) as repo:
        row = repo.db.execute("SELECT url FROM documents WHERE origin IS NULL ORDER BY id LIMIT 1").fetchone()
    if row is None:
        raise ValueError(f"{repository} holds no crawled page to tell the web's port by")
    return str(row[0])


def run_layout(corpus: WebCorpus, url: str) -> WebLayout:
    """The layout the run served `corpus` with, from a URL it crawled; an error when that URL is no page of
    this web (the run crawled another)."""
    port = urlsplit(url).port
    layout = WebLayout(corpus, port) if port is not None else None
    site = layout.site_of_url(url) if layout is not None else None
    path = unquote(urlsplit(url).path).lstrip("/")
    if site is None or not (site.root / (path or site.entry)).exists():
        raise ValueError(f"{url} is no page of the {corpus.name!r} web: give the web the runs crawled")
    return layout


def run_figures(run: Path, corpus: WebCorpus, bookmarks: str, loss: float) -> dict[str, Any]:
    """Every node's filtering figures of one kept run, at `loss`."""
    nodes = node_dirs(run)
    if not nodes:
        raise ValueError(f"{run} holds no node directory: give a community scenario's --keep directory")
    layout = run_layout(corpus, crawled_url(nodes[0] / "repository.db"))
    targets = topic_targets(parse_bookmarks(map_bookmarks(bookmarks, layout.map_upstream)), layout.label_of)
    if not targets:
        raise ValueError(f"no bookmark of the file lies on the {corpus.name!r} web: give the runs' bookmarks")
    figures = []
    for node in nodes:
        with read_only(node / "repository.db") as repo:
            measured = filter_figures(repo, targets, layout.label_of, loss)
        figures.append({"node": node.name, **{key: measured[key] for key in FIGURES}})
    return {"run": str(run), "loss": loss, "targets": targets, "nodes": figures}


def comparison(local: float | None, meta: float | None) -> str | None:
    if local is None or meta is None:
        return None
    return "better" if meta > local else "equal" if meta == local else "worse"


def summary(runs: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """How often the meta-classifier filtered better than the node alone: by run (every node) and by node,
    the nodes where its sign test (`meta_sign_test_p`) says the difference is more than chance, both means
    over the nodes measured and the meta-classifier's worst difference from the node alone."""
    counts = {"better": 0, "equal": 0, "worse": 0, "unmeasured": 0}
    significant = {"better": 0, "worse": 0}
    pairs: list[tuple[float, float]] = []
    every_node_better = total = 0
    for run in runs:
        total += 1
        verdicts = []
        for node in run["nodes"]:
            local, meta = node["filter_accuracy_local"], node["filter_accuracy_meta"]
            verdicts.append(comparison(local, meta))
            counts[verdicts[-1] or "unmeasured"] += 1
            if local is not None and meta is not None:
                pairs.append((local, meta))
            if verdicts[-1] in significant and node["meta_sign_test_p"] < SIGNIFICANCE:
                significant[verdicts[-1]] += 1
        every_node_better += bool(verdicts) and all(v == "better" for v in verdicts)
    return {
        "runs": total,
        "every_node_better": every_node_better,
        "nodes": counts,
        "significantly": significant,
        "mean_local": sum(p[0] for p in pairs) / len(pairs) if pairs else None,
        "mean_meta": sum(p[1] for p in pairs) / len(pairs) if pairs else None,
        "worst_difference": min((m - lo for lo, m in pairs), default=None),
    }


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m simnet.scenarios.refilter", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--web", required=True, help="the web the runs crawled: fixture, devweb, webkb or a folder"
    )
    parser.add_argument(
        "--bookmarks", type=Path, required=True, help="the bookmarks file the runs were given"
    )
    parser.add_argument("--loss", type=float, default=0.2, help="share of documents dismissed (default 0.2)")
    parser.add_argument("runs", type=Path, nargs="+", metavar="KEEP_DIR", help="a community run's --keep dir")
    return parser.parse_args(argv)


def print_line(line: str) -> None:
    print(line, flush=True)


def main(argv: Sequence[str] | None = None, out: Callable[[str], None] = print_line) -> int:
    args = parse_args(argv)
    if not 0.0 <= args.loss < 1.0:
        print(f"--loss must be in [0, 1), not {args.loss}", file=sys.stderr)
        return 2
    runs = []
    try:
        corpus = load_web(args.web)
        bookmarks = bookmarks_html(args.bookmarks)
        for run in args.runs:  # each printed when measured: a hundred kept runs take minutes
            runs.append(run_figures(run, corpus, bookmarks, args.loss))
            out(json.dumps(runs[-1]))
    except (ValueError, OSError, sqlite3.Error, TaxonomyError) as exc:
        print(f"refilter failed: {exc}", file=sys.stderr)
        return 2
    out(json.dumps({"loss": args.loss, **summary(runs)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
