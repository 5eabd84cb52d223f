"""Topic purity of the top authorities: plain HITS against DOM-aware distillation (seed 003, Fig. 10).

    python -m simnet.experiments.distillation --web devweb --bookmarks simnet/webs/devweb-bookmarks.html
    python -m simnet.experiments.distillation --web webkb --bookmarks simnet/webs/webkb-bookmarks.html

A focused crawl of `--pages` pages (the apprentice experiment's baseline crawl) collects the graph. Per
topic, the base set is the topic's pages (fetched from its queues or accepted into it) plus every crawled
page one link away. Four rankings: `hits` (Kleinberg, every link weight 1) and `domhits` (the same with hub
pages split by their stored link paths, `crawler.distillation.dom_hits`), and `hits_bh` / `domhits_bh`
with the project's Bharat-Henzinger weights (`crawler.linkanalysis.hits`), which ignore links within a
host and so rank little inside a simulated web whose sites are one host each. Of each method's
top 40 authorities outside the root set (the bookmarks), the report counts how many the classifier
accepts into the topic (the seed's measure; the critic is the crawl's frozen topic model) and how many
the web's ground truth puts in the topic's target group. The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import trio

from crawler.distillation import dom_hits, top_authorities
from crawler.focus import FocusSettings, in_subtree
from crawler.linkanalysis import LinkGraph, hits
from crawler.repository import Repository
from crawler.taxonomy import POSITIVE, read_taxonomy
from simnet.experiments.harvest import crawl_variant
from simnet.experiments.webrun import add_web_arguments, prepare_training
from simnet.web import load_web, serve_web_in_subprocess

TOP = 40
PLAIN_ITERATIONS = 50


def crawl_graph(repo: Repository) -> tuple[dict[int, tuple], dict[int, list[tuple[int, str]]]]:
    """Documents (id -> (final URL, host, queue topic, critic topic, accepted)) and each document's links
    to other crawled documents as (target id, element path) in document order."""
    docs = {
        row[0]: row[1:]
        for row in repo.db.execute(
            "SELECT d.id, d.final_url, d.host, f.topic, d.topic, d.accepted FROM documents d "
            "LEFT JOIN frontier f ON f.url = d.url WHERE d.duplicate_of IS NULL"
        )
    }
    by_url: dict[str, int] = {}
    for doc_id, row in docs.items():
        by_url.setdefault(row[0], doc_id)
    for doc_id, url in repo.db.execute("SELECT id, url FROM documents WHERE duplicate_of IS NULL"):
        by_url[url] = doc_id
    paths: dict[int, list[tuple[int, str]]] = {}
    for source, target, path in repo.db.execute(
        "SELECT source_id, target_url, dom_path FROM links WHERE kind = 'a' ORDER BY rowid"
    ):
        if source in docs and target in by_url:
            paths.setdefault(source, []).append((by_url[target], path))
    return docs, paths


def base_set(members: set[int], paths: dict[int, list[tuple[int, str]]]) -> set[int]:
    """The members and every page one link away from them, either way."""
    base = set(members)
    for source, links in paths.items():
        targets = {t for t, _ in links}
        if source in members:
            base |= targets
        elif targets & members:
            base.add(source)
    return base


def compare(
    docs: dict[int, tuple], paths: dict[int, list[tuple[int, str]]], topic: str, target: str, roots: set[str]
) -> dict[str, Any]:
    members = {
        i for i, row in docs.items() if in_subtree(row[2], topic) or (row[4] and in_subtree(row[3], topic))
    }
    base = base_set(members, paths)
    sub_paths = {s: [(t, p) for t, p in links if t in base] for s, links in paths.items() if s in base}
    graph = LinkGraph.build(
        {i: docs[i][1] for i in base}, [(s, t) for s, ls in sub_paths.items() for t, _ in ls]
    )
    root_nodes = [k for k, i in enumerate(graph.ids) if docs[i][0] in roots]
    result: dict[str, Any] = {"base_size": graph.size, "members": len(members)}
    methods = {"hits_bh": hits(graph).authority}
    bh = dom_hits(graph, sub_paths)
    methods["domhits_bh"] = bh.authority
    methods["hits"] = dom_hits(
        graph, sub_paths, PLAIN_ITERATIONS, segmented=False, weighting="plain"
    ).authority
    plain = dom_hits(graph, sub_paths, PLAIN_ITERATIONS, weighting="plain")
    methods["domhits"] = plain.authority
    if root_nodes:  # the book's start: authority on the root set only
        methods["hits_roots"] = dom_hits(
            graph, sub_paths, PLAIN_ITERATIONS, segmented=False, weighting="plain", roots=root_nodes
        ).authority
        rooted = dom_hits(graph, sub_paths, PLAIN_ITERATIONS, weighting="plain", roots=root_nodes)
        methods["domhits_roots"] = rooted.authority
        result["split_pages_roots"] = rooted.split_pages
    result["regions"], result["hub_pages"] = plain.regions, plain.hub_pages
    result["split_pages"], result["split_pages_bh"] = plain.split_pages, bh.split_pages
    for name, authority in methods.items():
        top = [graph.ids[k] for k in top_authorities(np.asarray(authority), TOP, root_nodes)]
        result[name] = {
            "top": len(top),
            "relevant": sum(1 for i in top if docs[i][4] and in_subtree(docs[i][3], topic)),
            "relevant_truth": sum(1 for i in top if docs[i][5] == target),
        }
    return result


async def run_experiment(web_name: str, bookmarks: Path, pages: int, focus: FocusSettings) -> dict:
    corpus = load_web(web_name)
    taxonomy = read_taxonomy(bookmarks)
    report: dict[str, Any] = {"web": corpus.name, "pages": pages, "top": TOP, "topics": {}}
    with serve_web_in_subprocess(corpus) as web:
        fetched, targets = await prepare_training(web, taxonomy)
        with tempfile.TemporaryDirectory(prefix="distillation-") as tmp:
            repo = Repository(Path(tmp) / "repository.db")
            try:
                await crawl_variant("focused", repo, fetched, web.hub_url, pages, focus)
                docs, paths = crawl_graph(repo)
            finally:
                repo.close()
        docs = {i: (*row, web.label_of(row[0])) for i, row in docs.items()}
        for topic, target in sorted(targets.items()):
            roots = {
                d.url for d in fetched.documents if d.polarity == POSITIVE and in_subtree(d.topic, topic)
            }
            report["topics"][topic] = compare(docs, paths, topic, target, roots)
            print(f"{topic}: {json.dumps(report['topics'][topic])}", file=sys.stderr, flush=True)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m simnet.experiments.distillation", description=__doc__.split("\n")[0]
    )
    add_web_arguments(parser, 1500, "pages of the crawl that collects the graph", hub=False)
    args = parser.parse_args(argv)
    focus = FocusSettings(retrain=False)
    print(json.dumps(trio.run(run_experiment, args.web, args.bookmarks, args.pages, focus)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
