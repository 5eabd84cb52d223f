"""What the focus's training memo saves: one crawl from a generated many-topic bookmarks file, then further
re-organisations on copies of its state, with the memo the crawl left (as the next one in the crawl would
run) and with an empty one (a full retrain, as before the memo), taking turns.

    python -m simnet.bench.retrain_memo --web devweb --topics 150 [--pages 400] [--rounds 3]

Prints per re-organisation the topics that gained archetypes, the parts trained and reused and the seconds,
the medians, and whether both variants gave equal models.
"""

from __future__ import annotations

import argparse
import copy
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio

from crawler.engine import Crawler
from crawler.focus import SEED_PRIORITY, TopicFocus
from crawler.repository import Repository
from crawler.taxonomy import parse_bookmarks
from metamodels.memo import TrainingMemo
from simnet.bench.topic_crawl import crawl_settings
from simnet.experiments.webrun import prepare_training
from simnet.web.bookmarks import generated_bookmarks


async def crawled_focus(web: Any, html: str, pages: int, folder: Path) -> TopicFocus:
    """The focus after a crawl of `pages` pages into `folder`/repository.db (detached from the crawl)."""
    taxonomy, _ = await prepare_training(web, parse_bookmarks(html))
    policy = TopicFocus(taxonomy)
    repo = Repository(folder / "repository.db")
    crawler = Crawler(repo, crawl_settings("node"), policy=policy)
    policy.attach(crawler)
    for topic, urls in policy.seeds().items():
        crawler.add_seeds(urls, topic=topic, priority=SEED_PRIORITY)
    try:
        await crawler.run(pages)
    finally:
        await crawler.aclose()
        repo.close()
    policy.crawler = policy.repo = None
    return policy


def reorganised_copy(policy: TopicFocus, memo: TrainingMemo, repository: Path) -> tuple[TopicFocus, float]:
    """A copy of the focus re-organised on `repository` with `memo`, and the seconds it took."""
    focus = copy.copy(policy)
    focus.archetypes = copy.deepcopy(policy.archetypes)
    focus._pending = type(policy._pending)()
    focus.recent = dict(policy.recent)
    focus.training_memo = memo
    focus.repo = Repository(repository)
    try:
        started = time.perf_counter()
        added = focus.reorganise()
        seconds = time.perf_counter() - started
    finally:
        focus.repo.close()
    print(
        f"  {len(added)} topics gained {sum(added.values())} archetypes; parts trained {memo.trained},"
        f" reused {memo.reused}; {seconds:.3f} s",
        flush=True,
    )
    return focus, seconds


def main(argv: Sequence[str] | None = None) -> int:
    from simnet.web import serve_web_in_subprocess

    parser = argparse.ArgumentParser(
        prog="python -m simnet.bench.retrain_memo", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--web", default="devweb")
    parser.add_argument("--topics", type=int, default=150)
    parser.add_argument("--per-topic", type=int, default=4)
    parser.add_argument("--pages", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="retrain-memo-"))
    try:
        with serve_web_in_subprocess(args.web) as web:
            html = generated_bookmarks(web.corpus, args.topics, args.per_topic, base_url=web.base_url)
            policy = trio.run(crawled_focus, web, html, args.pages, work)
        seconds: dict[str, list[float]] = {"memo": [], "full": []}
        models = {}
        for round_ in range(args.rounds):
            for variant in seconds:
                print(f"round {round_ + 1}, {variant}:")
                memo = policy.training_memo.copy() if variant == "memo" else TrainingMemo()
                repository = work / f"{variant}-{round_}.db"
                shutil.copy(work / "repository.db", repository)
                focus, spent = reorganised_copy(policy, memo, repository)
                seconds[variant].append(spent)
                models[variant] = focus.model
        memo_s, full_s = (statistics.median(seconds[v]) for v in ("memo", "full"))
        print(f"median: with the memo {memo_s:.3f} s, full retrain {full_s:.3f} s ({full_s / memo_s:.2f}x)")
        print(f"equal models: {models['memo'] == models['full']}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
