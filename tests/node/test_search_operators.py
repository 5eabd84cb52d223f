"""The plain query language through the CLI and the control API: operators narrow the answer, and a
`site:` that names no host is a clear error, not a crash or an empty answer."""

from __future__ import annotations

import json

import pytest
import trio

from crawler.repository import Repository, StoredPage
from crawler.search import text_document
from node.cli import main
from node.client import AsyncNodeClient, NodeError
from node.config import Config, replace_settings
from node.datadir import DataDir
from node.service import NodeService

PAGES = {
    "http://docs.a.test/vacuum": "PostgreSQL vacuum reclaims storage from dead tuples",
    "http://b.test/vacuum": "Vacuum cleaners reclaim dust, not dead tuples",
}


@pytest.fixture
def data(tmp_path) -> DataDir:
    data = DataDir(tmp_path / "node").ensure()
    with Repository(data.repository) as repo, repo.transaction():
        for url, text in PAGES.items():
            repo.insert_page(
                StoredPage(text_document(url, "Vacuum", text, topic="Databases", confidence=0.8))
            )
    return data


def cli_urls(data: DataDir, capsys, query: str) -> list[str]:
    assert main(["search", "--data", str(data.root), "--json", query]) == 0
    return [json.loads(line)["url"] for line in capsys.readouterr().out.splitlines()]


def test_cli_search_reads_phrases_exclusions_and_sites(data, capsys):
    assert set(cli_urls(data, capsys, "dead tuples")) == set(PAGES)
    assert cli_urls(data, capsys, '"reclaims storage"') == ["http://docs.a.test/vacuum"]
    assert cli_urls(data, capsys, "tuples -dust") == ["http://docs.a.test/vacuum"]
    assert cli_urls(data, capsys, "tuples site:a.test") == ["http://docs.a.test/vacuum"]
    assert cli_urls(data, capsys, "tuples -site:a.test") == ["http://b.test/vacuum"]


def test_cli_search_without_words_lists_what_the_filters_leave(data, capsys):
    assert set(cli_urls(data, capsys, "")) == set(PAGES)
    assert cli_urls(data, capsys, "site:b.test") == ["http://b.test/vacuum"]
    assert main(["search", "--data", str(data.root), "--topic", "Databases"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("the most confident results of --topic Databases") and "2 of 2 results" in out


def test_cli_search_with_a_bad_site_says_what_to_give(data, capsys):
    assert main(["search", "--data", str(data.root), "tuples site:/docs"]) != 0
    assert "site: needs a host name such as site:docs.python.org" in capsys.readouterr().err


@pytest.mark.trio
async def test_api_search_reads_the_operators_and_answers_a_bad_site_with_bad_query(data):
    service = NodeService(data, replace_settings(Config(), node={"metrics_interval": 5.0}), offline=True)
    async with trio.open_nursery() as nursery:
        await nursery.start(service.run)
        async with AsyncNodeClient.from_data_dir(data) as client:
            narrowed = await client.search("vacuum -cleaners site:a.test")
            browsed = await client.search("-dust")
            everything = await client.search()
            with pytest.raises(NodeError) as failed:
                await client.search("tuples site:/docs")
        service.request_stop()
    assert [h["url"] for h in narrowed["hits"]] == ["http://docs.a.test/vacuum"]
    assert [h["url"] for h in browsed["hits"]] == ["http://docs.a.test/vacuum"]
    assert {h["url"] for h in everything["hits"]} == set(PAGES) and everything["total"] == 2
    assert failed.value.kind == "bad_query" and "site: needs a host name" in str(failed.value)
