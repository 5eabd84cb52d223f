"""A lockstep crawl with one fetch at a time fetches the same pages in the same order every time."""

import dataclasses
from pathlib import Path

import pytest

from crawler.apprentice import ApprenticeSettings
from crawler.engine import Crawler
from crawler.focus import FocusSettings, TopicFocus
from crawler.policy import PageVerdict
from crawler.repository import Repository
from crawler.taxonomy import read_taxonomy
from simnet.experiments import apprentice as experiment
from simnet.experiments.webrun import prepare_training, sequential_settings
from simnet.web import serve_web_in_subprocess

FIXTURE_BOOKMARKS = Path(__file__).resolve().parents[2] / "simnet" / "webs" / "fixture-bookmarks.html"


class KeywordCritic:
    """Pages that mention 'sql' are relevant and their links come first: priorities depend on content."""

    def score_pages(self, pages):
        return [
            PageVerdict("SQL", 0.9, True) if "sql" in p.parsed.text.lower() else PageVerdict(None, 0.1, False)
            for p in pages
        ]

    def link_priority(self, page, link, verdict):
        return 0.9 if verdict.accepted else 0.3


async def fetch_order(tmp_path: Path, name: str, web, policy, pages: int, delay: float = 0.0) -> list[str]:
    """The URLs a lockstep crawl with one fetch at a time stores, in fetch order."""
    repo = Repository(tmp_path / f"{name}.db")
    settings = dataclasses.replace(sequential_settings(), download_delay=delay)
    crawler = Crawler(repo, settings, policy=policy, lockstep=True)
    try:
        attach = getattr(policy, "attach", None)
        if attach is not None:
            attach(crawler)
        crawler.add_seeds([web.hub_url])
        await crawler.run(pages)
        return [row[0] for row in repo.db.execute("SELECT url FROM documents ORDER BY id")]
    finally:
        await crawler.aclose()
        repo.close()


@pytest.mark.trio
async def test_two_lockstep_crawls_of_the_fixture_web_fetch_the_same_pages_in_the_same_order(tmp_path):
    with serve_web_in_subprocess("fixture") as web:
        first = await fetch_order(tmp_path, "first", web, KeywordCritic(), 120)
        second = await fetch_order(tmp_path, "second", web, KeywordCritic(), 120)
    assert len(first) == 120 and len(set(first)) == 120
    assert second == first


@pytest.mark.trio
async def test_politeness_delays_slow_a_lockstep_crawl_without_changing_its_fetch_order(tmp_path):
    with serve_web_in_subprocess("fixture") as web:
        undelayed = await fetch_order(tmp_path, "undelayed", web, KeywordCritic(), 40)
        delayed = await fetch_order(tmp_path, "delayed", web, KeywordCritic(), 40, delay=0.03)
    assert len({url.split("/")[2] for url in undelayed}) > 1  # several hosts: politeness could reorder
    assert delayed == undelayed


@pytest.mark.slow
@pytest.mark.trio
async def test_the_apprentice_experiment_crawls_a_topic_in_the_same_order_twice(tmp_path):
    """The experiment's own crawl (critic, one-topic focus, learning apprentice, refits and rescoring)."""
    focus = FocusSettings(strategy="classifier_bfs", retrain=False)
    apprentice = ApprenticeSettings(retrain_every=40)
    with serve_web_in_subprocess("fixture") as web:
        taxonomy, targets = await prepare_training(web, read_taxonomy(FIXTURE_BOOKMARKS))
        critic = experiment.with_critic_examples(
            taxonomy, experiment.critic_examples(web.corpus, targets, per_group=10)
        )
        orders = []
        for name in ("first", "second"):
            repo = Repository(tmp_path / f"{name}.db")
            try:
                policy = await experiment.crawl_topic(
                    "with", repo, TopicFocus(critic, focus), "Databases", web.hub_url, 150, apprentice
                )
                orders.append([row[0] for row in experiment.fetched_rows(repo)])
            finally:
                repo.close()
    assert len(orders[0]) == 150 and policy.apprentice.refits > 0
    assert orders[1] == orders[0]
