"""`topicswarm show DOC` and `topicswarm feedback DOC relevant|irrelevant`: a search hit's stored page and
a mark on it, from the command line, the same with and without a running node."""

from __future__ import annotations

import json

import pytest
import trio

from crawler.repository import LinkRecord, Repository, StoredPage
from crawler.search import text_document
from crawler.taxonomy import NEGATIVE
from node.cli import main
from node.cli.documents import feedback_text
from node.cooperation import store
from node.datadir import DataDir
from node.service import NodeService
from node.stored_state import document_details
from p2p.messages.results import CrawlResult
from tests.node.test_cli_status import loopback_config

LONG_TEXT = "Write-ahead logging keeps the database consistent after a crash. " * 50
PEER = "12D3KooWPeer"
PREVIEW = "a peer's preview"


@pytest.fixture
def data(tmp_path) -> DataDir:
    """One page of the node's own crawl (doc 1, with a link) and one peer's result (doc 2)."""
    data = DataDir(tmp_path / "node").ensure()
    with Repository(data.repository) as repo:
        with repo.transaction():
            page = text_document("http://h.test/wal.html", "Write-Ahead Log", LONG_TEXT, topic="Databases")
            link = LinkRecord(target_url="http://h.test/next.html", target_host="h.test")
            repo.insert_page(StoredPage(page, (link,)))
        store.ensure_schema(repo)
        result = CrawlResult("http://p.test/vac.html", "Vacuum", PREVIEW, "Databases", 1.0, "ab", PEER, 0.0)
        store.pool_results(repo, PEER, "Databases", [result], 1)
    return data


def shown(capsys, data: DataDir, *args: str) -> list[str]:
    assert main(["show", "--data", str(data.root), *args]) == 0
    return capsys.readouterr().out.splitlines()


def test_a_page_of_the_nodes_crawl_shows_how_it_was_fetched_and_the_start_of_its_text(data, capsys):
    lines = shown(capsys, data, "1")
    assert lines[:2] == ["Write-Ahead Log", "url        http://h.test/wal.html"]
    assert lines[2].startswith("topic      Databases  conf ")
    assert lines[3] == "verdict    not filtered yet (no meta-classifier has judged it)"
    assert lines[4].startswith("fetched    ") and "HTTP 200  text/html" in lines[4] and "1 links" in lines[4]
    text_at = lines.index(
        f"text (the first 2,000 of {len(LONG_TEXT):,} characters; "
        "`topicswarm export --format jsonl` has all):"
    )
    assert " ".join(lines[text_at + 1 :]).startswith("Write-ahead logging keeps the database consistent")
    assert max(len(line) for line in lines[text_at + 1 :]) <= 100


def test_a_peers_result_says_the_node_holds_only_its_preview(data, capsys):
    lines = shown(capsys, data, "2")
    assert f"origin     a result of {PEER}, received" in "\n".join(lines)
    assert "this node holds its preview" in lines[4] and not any(line.startswith("fetched") for line in lines)
    assert lines[-2:] == [f"text (all {len(PREVIEW)} characters):", PREVIEW]


def test_json_is_the_apis_document_shape(data, capsys):
    (line,) = shown(capsys, data, "1", "--json")
    with Repository(data.repository) as repo:
        assert json.loads(line) == document_details(repo, 1)


def test_an_unknown_or_malformed_document_number_says_where_numbers_come_from(data, capsys):
    assert main(["show", "--data", str(data.root), "9"]) == 2
    assert "no document 9: take its number from a search hit (`doc N`)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["show", "--data", str(data.root), "abc"])
    assert "'abc' is not a document number" in capsys.readouterr().err


def test_a_page_stored_with_terminal_escapes_shows_without_them(tmp_path, capsys):
    # A repository filled before pages lost their control characters may still hold some
    data = DataDir(tmp_path / "old").ensure()
    with Repository(data.repository) as repo, repo.transaction():
        page = text_document("http://h.test/x", "T\x1b]0;owned\x07", "Text\x1b[2J here", topic="T")
        repo.insert_page(StoredPage(page))
    out = "\n".join(shown(capsys, data, "1"))
    assert "\x1b" not in out and "\x07" not in out and "Text [2J here" in out


def test_search_hits_carry_the_number_show_takes(data, capsys):
    assert main(["search", "--data", str(data.root), "write-ahead"]) == 0
    out = capsys.readouterr().out
    assert "    Databases  conf" in out and "from local  doc 1\n" in out
    assert out.rstrip().endswith("1 of 1 results (`topicswarm show DOC`: the stored page)")


def feedback_rows(data: DataDir) -> list[tuple]:
    with Repository(data.repository) as repo:
        if not repo.db["feedback"].exists():
            return []
        return repo.db.execute("SELECT doc_id, kind, query, signals IS NOT NULL FROM feedback").fetchall()


def test_a_mark_without_a_node_trains_the_topic_and_with_its_query_fits_the_ranking(data, capsys):
    argv = ["feedback", "--data", str(data.root), "1", "irrelevant", "--query", "write-ahead log"]
    assert main(argv) == 0
    assert capsys.readouterr().out.strip() == (
        "marked document 1 (Write-Ahead Log) irrelevant: a negative training document of Databases from the "
        "next retraining; found by 'write-ahead log', it fits your search ranking's weights"
    )
    assert feedback_rows(data) == [(1, "irrelevant", "write-ahead log", 1)]
    with Repository(data.repository) as repo:
        trained = repo.db.execute("SELECT topic, polarity FROM training_documents WHERE source = 'feedback'")
        assert trained.fetchall() == [("Databases", NEGATIVE)]


def test_a_mark_on_a_peers_result_without_a_node_is_refused_and_stores_nothing(data, capsys):
    assert main(["feedback", "--data", str(data.root), "2", "relevant"]) == 2
    err = capsys.readouterr().err
    assert "is a peer's result" in err and f"`topicswarm node run --data {data.root}`" in err
    assert feedback_rows(data) == []


@pytest.mark.trio
async def test_show_and_feedback_through_a_running_node_read_as_without_one(data, capsys):
    alone = shown(capsys, data, "1")
    service = NodeService(data, loopback_config(), offline=True, max_pages=0)
    async with trio.open_nursery() as nursery:
        await nursery.start(service.run)
        through = await trio.to_thread.run_sync(shown, capsys, data, "1")
        marked = await trio.to_thread.run_sync(main, ["feedback", "--data", str(data.root), "1", "relevant"])
        said = capsys.readouterr().out
        service.request_stop()
    assert through == alone
    assert marked == 0 and said.startswith("marked document 1 (Write-Ahead Log) relevant: a positive")
    assert feedback_rows(data) == [(1, "relevant", None, 0)]


def test_a_mark_that_fetches_a_peers_page_says_so():
    document = {"doc_id": 2, "title": "Vacuum", "url": "http://p.test/vacuum.html", "topic": "Databases"}
    said = feedback_text(document, "relevant", None, "http://p.test/vacuum.html")
    assert said.endswith("; its page is being fetched to train on (http://p.test/vacuum.html)")


@pytest.mark.trio
async def test_a_users_marks_fit_that_users_ranking_only(data, capsys):
    from crawler.feedback import personal_weights
    from crawler.query import DEFAULT_USER

    def mark(kind: str, user: str) -> list[str]:
        return ["feedback", "--data", str(data.root), "1", kind, "--query", "write-ahead", "--user", user]

    assert main(mark("relevant", "ana")) == 0  # without a node
    service = NodeService(data, loopback_config(), offline=True, max_pages=0)
    async with trio.open_nursery() as nursery:
        await nursery.start(service.run)
        assert await trio.to_thread.run_sync(main, mark("irrelevant", "bob")) == 0  # through the node
        service.request_stop()
    with Repository(data.repository) as repo:
        users = repo.db.execute("SELECT user, kind FROM feedback ORDER BY at").fetchall()
        default, ana = personal_weights(repo, DEFAULT_USER), personal_weights(repo, "ana")
    assert users == [("ana", "relevant"), ("bob", "irrelevant")]
    assert ana != default  # her mark weighs in her ranking, not in the default user's


@pytest.mark.trio
async def test_an_unknown_document_is_worded_the_same_with_a_node_running(data, capsys):
    """With a node the CLI printed the API's "take doc_id from a search hit", a field no CLI user sees."""
    without = [main(["show", "--data", str(data.root), "99999"]), capsys.readouterr().err]
    service = NodeService(data, loopback_config(), offline=True, max_pages=0)
    async with trio.open_nursery() as nursery:
        await nursery.start(service.run)
        for command in (["show"], ["feedback"]):
            argv = [
                *command,
                "--data",
                str(data.root),
                "99999",
                *(["relevant"] if command == ["feedback"] else []),
            ]
            code = await trio.to_thread.run_sync(main, argv)
            assert [code, capsys.readouterr().err] == without
        service.request_stop()
    assert without == [2, "topicswarm: no document 99999: take its number from a search hit (`doc N`)\n"]


def test_a_mark_left_out_is_named_by_what_to_give(capsys):
    """ "required: mark" named the argument's variable while the usage showed {relevant,irrelevant}."""
    with pytest.raises(SystemExit):
        main(["feedback", "40"])
    assert "the following arguments are required: relevant|irrelevant" in capsys.readouterr().err
