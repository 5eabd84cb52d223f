"""`topicswarm status` on a data directory whose node does not run: what the node stored (pages, links
queued, harvest, its last run's errors, the peers it rejoins) and the state its crawl resumes in, with exit
code 3, instead of only "no node is running"."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import trio

from crawler.repository import Repository
from crawler.repository_schema import QUEUED
from node.cli import main
from node.cli.demo import map_bookmarks
from node.cli.status import NOT_RUNNING
from node.client import AsyncNodeClient
from node.datadir import DataDir
from node.network import save_blocked_peers, save_known_peers
from node.service import NodeService
from p2p.membership import Neighbour
from p2p.wire_testing import wire_key
from simnet.web import serve_web
from tests.node.test_cli_status import BOOKMARKS, loopback_config, store_bookmarks, wait_for

MAX_PAGES = 8


async def crawl_then_pause(data: DataDir) -> dict:
    """Run an offline node on the fixture web to its page limit, pause its crawl, stop it; its last status."""
    async with serve_web("fixture") as web:
        store_bookmarks(data, map_bookmarks(BOOKMARKS.read_text(), web.map_upstream))
        service = NodeService(data, loopback_config(), offline=True, max_pages=MAX_PAGES)
        async with trio.open_nursery() as nursery:
            await nursery.start(service.run)
            async with AsyncNodeClient.from_data_dir(data) as client:
                await wait_for(client, lambda crawl: crawl["activity"] == "finished", "finished")
                await client.crawl("pause")
                status = await client.status()
            service.request_stop()
    return status


@pytest.mark.trio
async def test_a_stopped_node_shows_what_it_stored_and_that_its_crawl_stays_paused(tmp_path, capsys):
    data = DataDir(tmp_path / "node").ensure()
    live = await crawl_then_pause(data)
    repo = Repository(data.repository)
    try:
        queued = repo.db.execute("SELECT count(*) FROM frontier WHERE state = ?", [QUEUED]).fetchone()[0]
    finally:
        repo.close()

    assert main(["status", "--data", str(data.root)]) == NOT_RUNNING
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == f"node       no node is running for {data.root}: start one with " + (
        f"`topicswarm node run --data {data.root}`"
    )
    assert lines[1] == (
        f"crawl      {queued} links queued; the crawl stays paused when the node starts "
        "(`topicswarm crawl start` resumes it)"
    )
    assert queued == live["crawl"]["frontier_size"] > 0  # the running node counted the same queue
    assert lines[2].startswith("           last ran ") and lines[2].endswith(" ago)")
    documents = live["documents"]
    assert f"documents  {documents['local']} local, {documents['pooled']} pooled" in lines
    width = max(map(len, live["harvest"]))
    for topic, rate in live["harvest"].items():
        assert f"           {topic:<{width}} {rate:.2f}" in lines
    assert "peers" not in out  # it never had any

    assert main(["status", "--data", str(data.root), "--json"]) == NOT_RUNNING
    stopped = json.loads(capsys.readouterr().out)
    assert stopped["running"] is False and stopped["documents"] == documents
    assert stopped["crawl"]["resumes"] == "paused" and stopped["crawl"]["frontier_size"] == queued
    assert stopped["crawl"]["last_sample"]["pages"] == live["crawl"]["pages"]
    assert stopped["harvest"] == pytest.approx(live["harvest"])


def test_a_directory_without_a_repository_says_nothing_is_stored_yet(tmp_path, capsys):
    data = DataDir(tmp_path / "node").ensure()
    assert main(["status", "--data", str(data.root)]) == NOT_RUNNING
    out = capsys.readouterr().out
    assert f"stored     nothing yet: `topicswarm topics import --data {data.root} FILE`" in out
    assert not data.repository.exists()  # status only reads


def test_a_node_that_exited_without_cleaning_up_is_named_and_its_peers_listed(tmp_path, capsys):
    data = DataDir(tmp_path / "node").ensure()
    Repository(data.repository).close()
    exited = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    pid = int(exited.stdout)
    data.api_address.write_text(json.dumps({"url": "http://127.0.0.1:9", "pid": pid}))
    peers = [Neighbour(wire_key(n).peer_id, ("/ip4/127.0.0.1/tcp/4001",), 1000.0) for n in (1, 2)]
    save_known_peers(data.known_peers, peers, frozenset())
    save_blocked_peers(data.blocked_peers, {wire_key(3).peer_id: 1000.0})

    assert main(["status", "--data", str(data.root)]) == NOT_RUNNING
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"node       the node for {data.root} (pid {pid}) has exited")
    assert lines[1] == "crawl      0 links queued; the crawl resumes when the node starts"
    assert "documents  0 local, 0 pooled" in lines
    assert "peers      2 known from its last run (it rejoins them), 1 blocked" in lines


def test_a_missing_data_directory_is_still_an_error(tmp_path, capsys):
    assert main(["status", "--data", str(tmp_path / "nowhere")]) == 2
    assert "there is no data directory" in capsys.readouterr().err
