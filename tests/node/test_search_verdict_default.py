"""`topicswarm search` and the API's /api/search under their default verdict filter "accepted": pages the
focus accepted into a topic, not pages no topic accepted (stored with no topic and confidence 0)."""

from __future__ import annotations

import json

import pytest
import trio

from crawler.repository import Repository, StoredPage
from crawler.search import text_document
from node.cli import main
from node.client import AsyncNodeClient
from node.config import Config, replace_settings
from node.datadir import DataDir
from node.service import NodeService

TEXT = "postgresql vacuum reclaims storage from dead tuples"


def store_crawl(data: DataDir) -> None:
    """One page accepted into Databases and one the focus rejected, as the engine stores them."""
    with Repository(data.repository) as repo, repo.transaction():
        accepted = text_document("http://a.test/kept", "Vacuum", TEXT, topic="Databases", confidence=0.8)
        rejected = text_document(
            "http://b.test/noise", "Vacuum", TEXT + " noise", topic=None, confidence=0.0, accepted=False
        )
        for record in (accepted, rejected):
            repo.insert_page(StoredPage(record))


def cli_urls(data: DataDir, capsys, *extra: str) -> list[str]:
    assert main(["search", "--data", str(data.root), "--json", "vacuum", *extra]) == 0
    return [json.loads(line)["url"] for line in capsys.readouterr().out.splitlines()]


def test_cli_search_shows_accepted_pages_unless_any_verdict_is_asked(tmp_path, capsys):
    data = DataDir(tmp_path / "node").ensure()
    store_crawl(data)
    assert cli_urls(data, capsys) == ["http://a.test/kept"]
    assert set(cli_urls(data, capsys, "--verdict", "any")) == {"http://a.test/kept", "http://b.test/noise"}


@pytest.mark.trio
async def test_api_search_shows_accepted_pages_unless_any_verdict_is_asked(tmp_path):
    data = DataDir(tmp_path / "node").ensure()
    store_crawl(data)
    service = NodeService(data, replace_settings(Config(), node={"metrics_interval": 5.0}), offline=True)
    async with trio.open_nursery() as nursery:
        await nursery.start(service.run)
        async with AsyncNodeClient.from_data_dir(data) as client:
            default = await client.search("vacuum")
            every = await client.search("vacuum", verdict="any")
        service.request_stop()
    assert [h["url"] for h in default["hits"]] == ["http://a.test/kept"] and default["total"] == 1
    assert {h["url"] for h in every["hits"]} == {"http://a.test/kept", "http://b.test/noise"}


@pytest.mark.trio
async def test_an_empty_answer_from_a_running_node_counts_the_results_without_its_filters(tmp_path, capsys):
    data = DataDir(tmp_path / "node").ensure()
    store_crawl(data)
    service = NodeService(data, replace_settings(Config(), node={"metrics_interval": 5.0}), offline=True)
    async with trio.open_nursery() as nursery:
        await nursery.start(service.run)
        argv = ["search", "--data", str(data.root), "noise", "--origin", "pooled"]
        assert await trio.to_thread.run_sync(main, argv) == 0
        service.request_stop()
    said = capsys.readouterr().out.strip()
    assert said == (
        "no hits for 'noise' with --origin pooled (try --origin any), "
        "--verdict accepted (try --verdict any); 1 result without them"
    )
