"""Harvest rate of breadth-first vs focused crawling on a simulated web (thesis 2.2.3, 2.5).

    python -m simnet.experiments.harvest --web devweb --bookmarks simnet/webs/devweb-bookmarks.html \
        --pages 3000

Crawls the served web from the bookmarks' pages (upstream URLs mapped to the local hosts) and the web's hub
page (`--no-hub` leaves it out) with three variants: `bfs` (breadth-first, accept everything), `focused`
(topic model from the bookmarks, no retraining) and `focused_retrain` (archetypes from link analysis and
retraining, hubs to the front). Per topic it reports:

- fetched: pages crawled on the topic's behalf: from the topic's queues for focused crawls, every page for
  breadth-first (its effort is not split by topic);
- harvest_rate: the fraction of those pages whose site group is the topic's target group (the majority
  group of its bookmarks' sites), from the web's ground truth;
- precision, recall: of the variant's final topic model on all the variant's fetched pages, against the
  same ground truth (breadth-first uses the bookmarks' model).

The last line printed is one JSON object `{"variants": {VARIANT: {TOPIC: {...}}}, ...}`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from crawler.engine import Crawler
from crawler.focus import SEED_PRIORITY, FocusSettings, TopicFocus, in_subtree
from crawler.repository import Repository
from crawler.settings import CrawlSettings
from crawler.taxonomy import Taxonomy, read_taxonomy
from simnet.experiments.webrun import add_web_arguments, crawl_settings, prepare_training
from simnet.web import load_web, serve_web_in_subprocess

VARIANTS = ("bfs", "focused", "focused_retrain")


async def crawl_variant(
    variant: str,
    repo: Repository,
    taxonomy: Taxonomy,
    hub_url: str | None,
    pages: int,
    focus: FocusSettings,
    settings: CrawlSettings | None = None,
    lockstep: bool = False,
) -> TopicFocus:
    """Crawl `pages` pages with the variant's policy; `lockstep` (with one fetch at a time:
    `sequential_settings`) makes the fetch order a function of the seeds, web and policy alone."""
    settings = settings or crawl_settings()
    policy = TopicFocus(taxonomy, dataclasses.replace(focus, retrain=variant == "focused_retrain"))
    crawler = Crawler(repo, settings, policy=None if variant == "bfs" else policy, lockstep=lockstep)
    try:
        if variant == "bfs":
            crawler.add_seeds([url for urls in policy.seeds().values() for url in urls])
        else:
            policy.attach(crawler)
            for topic, urls in policy.seeds().items():
                crawler.add_seeds(urls, topic=topic, priority=SEED_PRIORITY)
        if hub_url:
            crawler.add_seeds([hub_url], priority=SEED_PRIORITY)
        await crawler.run(pages)
    finally:
        await crawler.aclose()
    if variant != "bfs":
        policy.record_stats()
    return policy


def measure(
    repo: Repository, policy: TopicFocus, variant: str, targets: dict[str, str], label_of: Any
) -> dict:
    rows = repo.db.execute(
        "SELECT d.final_url, d.title, d.text, f.topic FROM documents d LEFT JOIN frontier f ON f.url = d.url"
    ).fetchall()
    groups = [label_of(final_url) for final_url, _, _, _ in rows]
    verdicts = policy.model.classify_texts([f"{title}\n{text}" for _, title, text, _ in rows])
    result = {}
    for topic, target in sorted(targets.items()):
        mine = [i for i, row in enumerate(rows) if variant == "bfs" or in_subtree(row[3], topic)]
        relevant = sum(1 for i in mine if groups[i] == target)
        predicted = [i for i, v in enumerate(verdicts) if v.accepted and in_subtree(v.topic, topic)]
        true_positive = sum(1 for i in predicted if groups[i] == target)
        actual = sum(1 for g in groups if g == target)
        result[topic] = {
            "target_group": target,
            "fetched": len(mine),
            "harvest_rate": round(relevant / len(mine), 4) if mine else 0.0,
            "precision": round(true_positive / len(predicted), 4) if predicted else 0.0,
            "recall": round(true_positive / actual, 4) if actual else 0.0,
        }
    return result


async def run_experiment(
    web_name: str, bookmarks: Path, pages: int, hub: bool, variants: tuple[str, ...], focus: FocusSettings
) -> dict:
    corpus = load_web(web_name)
    taxonomy = read_taxonomy(bookmarks)
    report: dict[str, Any] = {"web": corpus.name, "pages": pages, "hub": hub, "variants": {}, "seconds": {}}
    with serve_web_in_subprocess(corpus) as web:
        fetched, targets = await prepare_training(web, taxonomy)
        report["targets"] = targets
        for variant in variants:
            started = time.monotonic()
            with tempfile.TemporaryDirectory(prefix=f"harvest-{variant}-") as tmp:
                repo = Repository(Path(tmp) / "repository.db")
                try:
                    policy = await crawl_variant(
                        variant, repo, fetched, web.hub_url if hub else None, pages, focus
                    )
                    report["variants"][variant] = measure(repo, policy, variant, targets, web.label_of)
                    report.setdefault("reorganisations", {})[variant] = policy.reorganisations
                    report.setdefault("archetypes", {})[variant] = {
                        t: len(a) for t, a in policy.archetypes.items()
                    }
                finally:
                    repo.close()
            report["seconds"][variant] = round(time.monotonic() - started, 1)
            print(f"{variant}: {json.dumps(report['variants'][variant])}", file=sys.stderr, flush=True)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m simnet.experiments.harvest", description=__doc__.split("\n")[0]
    )
    add_web_arguments(parser, 3000, "pages per variant (default 3000)")
    parser.add_argument(
        "--variants", default=",".join(VARIANTS), help="comma-separated subset of " + ", ".join(VARIANTS)
    )
    parser.add_argument("--strategy", default="classifier_bfs", help="focused link priority strategy")
    parser.add_argument(
        "--learning-pages", type=int, default=None, help="learning phase length (default pages/5)"
    )
    parser.add_argument(
        "--retrain-every", type=int, default=None, help="pages between retrainings (default pages/6)"
    )
    args = parser.parse_args(argv)
    variants = tuple(v for v in args.variants.split(",") if v)
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        parser.error(f"unknown variants {sorted(unknown)}")
    focus = FocusSettings(
        strategy=args.strategy,
        learning_pages=args.learning_pages if args.learning_pages is not None else args.pages // 5,
        retrain_every=args.retrain_every or max(args.pages // 6, 1),
    )
    report = trio.run(run_experiment, args.web, args.bookmarks, args.pages, not args.no_hub, variants, focus)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
