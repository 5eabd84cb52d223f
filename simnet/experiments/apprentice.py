"""Irrelevant fetches of the focused crawler without and with the apprentice (seed 002, Fig. 10).

    python -m simnet.experiments.apprentice --web devweb --bookmarks simnet/webs/devweb-bookmarks.html \
        --pages 3000
    python -m simnet.experiments.apprentice --web webkb --bookmarks simnet/webs/webkb-bookmarks.html \
        --pages 2000

Both crawls start from the same seeds (the bookmarks, mapped to the served web, plus the web's hub page
unless `--no-hub`) with the same focus policy (topic model from the bookmarks, frozen unless `--retrain`
adds the focus loop's re-organisation); the second wraps it in `crawler.apprentice.ApprenticeFocus`. Per
topic, over the documents fetched from the topic's queues:

- irrelevant_without / irrelevant_with: fetched pages the critic (the same frozen topic model in both
  crawls) does not accept into the topic, the paper's loss; reduction = 1 - with / without;
- irrelevant_truth_* / reduction_truth: fetched pages whose ground-truth group (the web's labels) is not
  the topic's target group (the majority group of its bookmarks);
- fetched_without / fetched_with, and loss_rate_* (irrelevant / fetched): topic queues take turns, so
  the two crawls may spend different shares of the same page budget on one topic.

`curves` holds, for each variant, the cumulative harvest rate over all topic queues after every 250
stored pages, by the critic (`harvest_rate`) and by the ground truth (`harvest_rate_truth`). The last line
printed is one JSON object.
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

from crawler.apprentice import ApprenticeFocus, ApprenticeSettings
from crawler.engine import Crawler
from crawler.focus import SEED_PRIORITY, FocusSettings, TopicFocus, in_subtree
from crawler.repository import Repository
from crawler.taxonomy import Taxonomy, read_taxonomy
from simnet.experiments.harvest import crawl_settings, fetch_training, target_groups
from simnet.web import load_web, serve_web_in_subprocess

VARIANTS = ("without", "with")
CURVE_STEP = 250


async def crawl_variant(
    variant: str,
    repo: Repository,
    taxonomy: Taxonomy,
    hub_url: str | None,
    pages: int,
    focus: FocusSettings,
    apprentice: ApprenticeSettings,
) -> Any:
    base = TopicFocus(taxonomy, focus)
    policy: Any = ApprenticeFocus(base, apprentice) if variant == "with" else base
    crawler = Crawler(repo, crawl_settings(), policy=policy)
    try:
        policy.attach(crawler)
        for topic, urls in policy.seeds().items():
            crawler.add_seeds(urls, topic=topic, priority=SEED_PRIORITY)
        if hub_url:
            crawler.add_seeds([hub_url], priority=SEED_PRIORITY)
        await crawler.run(pages)
    finally:
        await crawler.aclose()
    policy.record_stats()
    return policy


def fetched_rows(repo: Repository) -> list[tuple[int, str, str | None, str | None, bool]]:
    """(id, final URL, queue topic, critic topic, accepted) of every stored document in fetch order."""
    return repo.db.execute(
        "SELECT d.id, d.final_url, f.topic, d.topic, d.accepted FROM documents d "
        "LEFT JOIN frontier f ON f.url = d.url ORDER BY d.id"
    ).fetchall()


def relevant_by_critic(row: tuple, topic: str) -> bool:
    return bool(row[4]) and in_subtree(row[3], topic)


def measure(rows: list[tuple], targets: dict[str, str], label_of: Any) -> dict[str, dict[str, int]]:
    result = {}
    for topic, target in sorted(targets.items()):
        mine = [row for row in rows if in_subtree(row[2], topic)]
        result[topic] = {
            "fetched": len(mine),
            "irrelevant": sum(1 for row in mine if not relevant_by_critic(row, topic)),
            "irrelevant_truth": sum(1 for row in mine if label_of(row[1]) != target),
        }
    return result


def harvest_curve(rows: list[tuple], targets: dict[str, str], label_of: Any, step: int = CURVE_STEP) -> dict:
    """Cumulative harvest rates over the topics' queues after every `step` stored pages."""
    curve: dict[str, list] = {"pages": [], "harvest_rate": [], "harvest_rate_truth": []}
    fetched = by_critic = by_truth = 0
    for n, row in enumerate(rows, start=1):
        topic = next((t for t in targets if in_subtree(row[2], t)), None)
        if topic is not None:
            fetched += 1
            by_critic += relevant_by_critic(row, topic)
            by_truth += label_of(row[1]) == targets[topic]
        if n % step == 0 or n == len(rows):
            curve["pages"].append(n)
            curve["harvest_rate"].append(round(by_critic / fetched, 4) if fetched else 0.0)
            curve["harvest_rate_truth"].append(round(by_truth / fetched, 4) if fetched else 0.0)
    return curve


def rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def reduction(without: int, with_: int) -> float | None:
    return round(1.0 - with_ / without, 4) if without else None


async def run_experiment(
    web_name: str,
    bookmarks: Path,
    pages: int,
    hub: bool,
    focus: FocusSettings,
    apprentice: ApprenticeSettings,
) -> dict:
    corpus = load_web(web_name)
    taxonomy = read_taxonomy(bookmarks)
    report: dict[str, Any] = {"web": corpus.name, "pages": pages, "topics": {}, "curves": {}, "seconds": {}}
    with serve_web_in_subprocess(
        web_name if web_name in ("fixture", "devweb", "webkb") else corpus.root
    ) as web:
        mapped = taxonomy.map_urls(web.map_upstream)
        unmapped = [d.url for d in mapped.documents if d.url and web.label_of(d.url) is None]
        if unmapped:
            print(f"bookmarks the web does not serve (ignored): {', '.join(unmapped)}", file=sys.stderr)
        fetched = await fetch_training(mapped, crawl_settings())
        targets = target_groups(fetched, web.label_of)
        report["targets"] = targets
        measured = {}
        for variant in VARIANTS:
            started = time.monotonic()
            with tempfile.TemporaryDirectory(prefix=f"apprentice-{variant}-") as tmp:
                repo = Repository(Path(tmp) / "repository.db")
                try:
                    policy = await crawl_variant(
                        variant, repo, fetched, web.hub_url if hub else None, pages, focus, apprentice
                    )
                    rows = fetched_rows(repo)
                finally:
                    repo.close()
            measured[variant] = measure(rows, targets, web.label_of)
            report["curves"][variant] = harvest_curve(rows, targets, web.label_of)
            report["seconds"][variant] = round(time.monotonic() - started, 1)
            if variant == "with":
                learner = policy.apprentice
                report["apprentice"] = {
                    "instances": {"relevant": learner.resolved[1], "irrelevant": learner.resolved[0]},
                    "refits": learner.refits,
                    "rescored_entries": policy.rescored_entries,
                }
            print(f"{variant}: {json.dumps(measured[variant])}", file=sys.stderr, flush=True)
    for topic in targets:
        without, with_ = measured["without"][topic], measured["with"][topic]
        report["topics"][topic] = {
            "irrelevant_without": without["irrelevant"],
            "irrelevant_with": with_["irrelevant"],
            "reduction": reduction(without["irrelevant"], with_["irrelevant"]),
            "irrelevant_truth_without": without["irrelevant_truth"],
            "irrelevant_truth_with": with_["irrelevant_truth"],
            "reduction_truth": reduction(without["irrelevant_truth"], with_["irrelevant_truth"]),
            "fetched_without": without["fetched"],
            "fetched_with": with_["fetched"],
            "loss_rate_without": rate(without["irrelevant"], without["fetched"]),
            "loss_rate_with": rate(with_["irrelevant"], with_["fetched"]),
            "loss_rate_truth_without": rate(without["irrelevant_truth"], without["fetched"]),
            "loss_rate_truth_with": rate(with_["irrelevant_truth"], with_["fetched"]),
        }
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m simnet.experiments.apprentice", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--web", default="fixture", help="fixture, devweb, webkb or a folder with sites.tsv")
    parser.add_argument(
        "--bookmarks", type=Path, required=True, help="a bookmarks export or topic folder tree"
    )
    parser.add_argument("--pages", type=int, default=3000, help="pages per crawl (default 3000)")
    parser.add_argument("--no-hub", action="store_true", help="do not start from the web's hub page")
    parser.add_argument("--strategy", default="classifier_bfs", help="the base link priority strategy")
    parser.add_argument(
        "--retrain", action="store_true", help="the focus loop's re-organisation in both crawls"
    )
    parser.add_argument(
        "--retrain-every", type=int, default=200, help="judged pages between apprentice refits"
    )
    parser.add_argument("--weight", type=float, default=1.0, help="apprentice weight in the priority (0..1)")
    parser.add_argument("--radius", type=int, default=5, help="DOM leaves either side of the anchor")
    args = parser.parse_args(argv)
    focus = FocusSettings(strategy=args.strategy, retrain=args.retrain, retrain_every=max(args.pages // 6, 1))
    apprentice = ApprenticeSettings(radius=args.radius, retrain_every=args.retrain_every, weight=args.weight)
    report = trio.run(
        run_experiment, args.web, args.bookmarks, args.pages, not args.no_hub, focus, apprentice
    )
    report["settings"] = {"focus": dataclasses.asdict(focus), "apprentice": dataclasses.asdict(apprentice)}
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
