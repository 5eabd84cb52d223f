"""The user blocks a peer through the control API and the CLI: saved in blocked.json, refused from the start
of every run, and what it sent removed; a blocked.json that cannot be read stops the node with its name."""

from __future__ import annotations

import json
from contextlib import contextmanager

import pytest
import trio

from crawler.repository import Repository
from node.cli import build_parser
from node.cli.node import service_error_in
from node.cli.peers import blocked_lines, run_peer_block
from node.client import AsyncNodeClient, NodeError
from node.config import Config, replace_settings
from node.cooperation import store
from node.cooperation.testing import crawl_result
from node.datadir import DataDir
from node.service import NodeService
from p2p.signing import peer_id_from_public_key as peer_id_of

PEER = peer_id_of(bytes(range(32)))
OTHER = peer_id_of(bytes(range(1, 33)))


def pooled(data: DataDir) -> dict[str, str]:
    with Repository(data.repository) as repo:
        return dict(repo.db.execute("SELECT url, origin FROM documents WHERE origin IS NOT NULL").fetchall())


@pytest.fixture
def data(tmp_path) -> DataDir:
    data = DataDir(tmp_path / "node").ensure()
    with Repository(data.repository) as repo:
        store.ensure_schema(repo)
        for peer, url in ((PEER, "http://a.test/p"), (OTHER, "http://b.test/o")):
            store.pool_results(repo, peer, "T", [crawl_result(url, peer, "T")], 1)
    return data


async def run_node(data: DataDir, body) -> None:
    service = NodeService(data, replace_settings(Config(), node={"metrics_interval": 5.0}), offline=True)
    async with trio.open_nursery() as nursery:
        await nursery.start(service.run)
        async with AsyncNodeClient.from_data_dir(data) as client:
            await body(client)
        service.request_stop()


@pytest.mark.trio
async def test_blocking_a_peer_by_the_start_of_its_id_saves_it_and_removes_its_results(data):
    answers = {}

    async def block(client) -> None:
        answers["block"] = await client.block_peer(PEER[:14])
        answers["peers"] = await client.peers()

    await run_node(data, block)
    assert answers["block"] == {
        "peer_id": PEER,
        "blocked": True,
        "models_forgotten": 0,
        "results_removed": 1,
        "results_kept": 0,
        "meta_rebuilt": [],
    }
    assert [row["peer_id"] for row in answers["peers"]["blocked"]] == [PEER]
    assert pooled(data) == {"http://b.test/o": OTHER}
    saved = json.loads(data.blocked_peers.read_text())
    assert [row["peer_id"] for row in saved["blocked"]] == [PEER]

    async def unblock(client) -> None:  # a restarted node knows the list, and lets the peer in again
        answers["before"] = await client.peers()
        answers["unblock"] = await client.unblock_peer(PEER)
        answers["after"] = await client.peers()

    await run_node(data, unblock)
    assert [row["peer_id"] for row in answers["before"]["blocked"]] == [PEER]
    assert answers["unblock"] == {"peer_id": PEER, "blocked": False}
    assert answers["after"]["blocked"] == []
    assert json.loads(data.blocked_peers.read_text()) == {"blocked": []}


@pytest.mark.trio
async def test_an_offline_node_that_never_cooperated_blocks_a_peer_by_its_full_id(tmp_path):
    data = DataDir(tmp_path / "fresh").ensure()  # no cooperation tables: it never held a peer's result
    answers = {}

    async def block(client) -> None:
        answers["block"] = await client.block_peer(PEER)

    await run_node(data, block)
    assert answers["block"]["blocked"] is True and answers["block"]["results_removed"] == 0
    assert PEER in data.blocked_peers.read_text()


@pytest.mark.trio
async def test_a_prefix_shared_with_the_nodes_own_id_names_the_other_peer_and_the_own_id_is_refused(
    data, monkeypatch
):
    """`peers --block 1` on a node with one peer said "a node cannot block itself": the prefix fitted the
    node's own id too."""
    monkeypatch.setattr(NodeService, "peer_id", property(lambda self: OTHER))  # whose results it holds too
    service = NodeService(data, replace_settings(Config(), node={"metrics_interval": 5.0}), offline=True)
    async with trio.open_nursery() as nursery:
        await nursery.start(service.run)
        async with AsyncNodeClient.from_data_dir(data) as client:
            assert (await client.block_peer(PEER[:8]))["peer_id"] == PEER
            with pytest.raises(NodeError, match="cannot block itself"):
                await client.block_peer(OTHER)
        service.request_stop()


@pytest.mark.trio
async def test_a_peer_name_that_fits_none_or_several_ids_is_a_clear_error(data):
    errors = {}

    async def ask(client) -> None:
        for name, text in (("several", PEER[:8]), ("none", "nobody"), ("empty", " ")):
            with pytest.raises(NodeError) as failed:
                await client.block_peer(text)
            errors[name] = failed.value
        with pytest.raises(NodeError) as failed:
            await client.unblock_peer(PEER)
        errors["not blocked"] = failed.value
        errors["full id"] = await client.block_peer(peer_id_of(bytes(range(2, 34))))  # no trace here yet

    await run_node(data, ask)
    assert errors["several"].kind == "bad_request" and "starts 2 peer ids" in errors["several"].detail
    assert errors["none"].status == 404 and "see `topicswarm peers`" in errors["none"].detail
    assert errors["empty"].kind == "bad_request"
    assert errors["not blocked"].status == 404
    assert errors["full id"]["blocked"] and errors["full id"]["results_removed"] == 0
    assert len(pooled(data)) == 2


@pytest.mark.trio
@pytest.mark.parametrize("text", ["{not json", '{"blocked": [{"peer_id": "x", "blocked_at": 1}]}'])
async def test_a_blocked_list_that_cannot_be_read_stops_the_node_with_its_name(data, text):
    data.blocked_peers.write_text(text)
    service = NodeService(data, Config(), offline=True)
    with pytest.raises(BaseException) as failed:
        async with trio.open_nursery() as nursery:
            await nursery.start(service.run)
    refusal = service_error_in(failed.value)  # what `topicswarm node run` prints
    assert refusal is not None and "blocked.json" in refusal.detail and "fix" in refusal.detail


def test_the_cli_blocks_and_unblocks_through_the_node_and_lists_the_blocked(monkeypatch, capsys):
    class Client:  # the API's answers, as the tests above check them
        def block_peer(self, peer):
            return {
                "peer_id": PEER,
                "blocked": True,
                "models_forgotten": 2,
                "results_removed": 5,
                "results_kept": 1,
                "meta_rebuilt": ["Databases"],
            }

        def unblock_peer(self, peer):
            return {"peer_id": PEER, "blocked": False}

    @contextmanager
    def connect(args):
        yield Client()

    monkeypatch.setattr("node.cli.peers.connect", connect)
    assert run_peer_block(build_parser().parse_args(["peers", "--block", PEER[:12]])) == 0
    assert capsys.readouterr().out == (
        f"blocked {PEER}: refused from now on; 2 models and 5 results it sent removed (1 that other peers "
        "sent too kept); meta-classifiers built again without it: Databases\n"
    )
    assert run_peer_block(build_parser().parse_args(["peers", "--unblock", PEER[:12]])) == 0
    assert capsys.readouterr().out.startswith(f"unblocked {PEER}")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["peers", "--block", "a", "--unblock", "b"])
    lines = blocked_lines([{"peer_id": OTHER, "blocked_at": 1.0}, {"peer_id": PEER, "blocked_at": 2.0}])
    assert lines[0] == "blocked    2 peers (`topicswarm peers --unblock PEER`)"
    assert [line.split()[0] for line in lines[1:]] == [PEER, OTHER]


def test_a_pooled_result_claims_no_more_confidence_than_the_nodes_own_most_confident_page(data):
    from dataclasses import replace

    with Repository(data.repository) as repo:
        before = dict(repo.db.execute("SELECT url, confidence FROM documents").fetchall())
        assert store.pooled_confidence_ceiling(repo.db.conn) == 1.0  # no page of its own yet
        bold = replace(crawl_result("http://c.test/x", PEER, "T"), confidence=1e12, title="a\x1b[2Jb")
        store.pool_results(repo, PEER, "T", [bold], 2)
        sql = "SELECT confidence, title FROM documents WHERE url = 'http://c.test/x'"
        stored = repo.db.execute(sql).fetchone()
    assert stored == (1.0, "a [2Jb") and len(before) == 2
