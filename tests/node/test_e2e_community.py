"""End to end: three `topicswarm node run` processes on loopback, driven through the real CLI and API.

One node is killed with SIGKILL mid-crawl and restarted on its data directory: it resumes with every stored
document kept, its topics and crawl state intact, and rejoins its peers without --bootstrap.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from pathlib import Path

import pytest

from node.cli import main
from node.cli.demo import (
    BOOKMARKS,
    bookmark_subset,
    map_bookmarks,
    node_processes,
    start_node,
    stop_processes,
    wait_until_ready,
)
from node.client import NodeClient, NodeUnreachable, node_address
from simnet.web import serve_web_in_subprocess
from tests.waiting import cli, wait_until

PAGES = 60
pytestmark = pytest.mark.slow


def stored_urls(repository: Path, *, own: bool = False) -> set[str]:
    """URLs in the repository: every document, or (own) the node's own crawled ones, not pooled."""
    where = " WHERE origin IS NULL" if own else ""
    with sqlite3.connect(repository) as db:
        return {row[0] for row in db.execute(f"SELECT url FROM documents{where}")}


def known_peers(data) -> set[str]:
    """The peer ids in a node's saved neighbour list (none before its first save)."""
    try:
        return {entry["peer_id"] for entry in json.loads(data.known_peers.read_text())["entries"]}
    except FileNotFoundError:
        return set()


def test_three_nodes_crawl_and_a_killed_node_resumes_with_nothing_lost(tmp_path):
    with serve_web_in_subprocess("fixture") as web:
        bookmarks = map_bookmarks(BOOKMARKS.read_text(), web.map_upstream)
        with node_processes(tmp_path, 3, PAGES, offline=False) as nodes:
            clients = [NodeClient(n.url, n.token) for n in nodes]
            try:
                for i, client in enumerate(clients):
                    assert client.import_topics(bookmarks_html=bookmark_subset(bookmarks, i, 3))["seeds"] >= 3
                wait_until(lambda: all(c.status()["peers_online"] >= 2 for c in clients), 30, "a full mesh")

                # the CLI over the API
                status = json.loads(cli("status", "--data", str(nodes[0].data.root), "--json").stdout)
                assert status["peer_id"] and status["crawl"]["state"] == "running"
                paused = cli("crawl", "pause", "--topic", "Databases", "--data", str(nodes[1].data.root))
                assert paused.returncode == 0 and "paused" in paused.stdout, paused.stderr
                topics = {t["key"]: t["crawl"] for t in clients[1].topics()["topics"]}
                assert topics["Databases"] == "paused" and topics["Sysadmin"] == "running"

                victim = nodes[2]
                wait_until(lambda: clients[2].status()["crawl"]["pages"] >= 10, 60, "node 3 to crawl")
                others = {c.status()["peer_id"] for c in clients[:2]}
                wait_until(lambda: known_peers(victim.data) == others, 30, "node 3 to save its neighbours")
                victim.process.send_signal(signal.SIGKILL)
                victim.process.wait(timeout=10)
                before = stored_urls(victim.data.repository)
                crawled = stored_urls(victim.data.repository, own=True)
                assert len(crawled) >= 10
                with pytest.raises(NodeUnreachable, match="has exited"):
                    node_address(victim.data)
                stopped = cli("status", "--data", str(victim.data.root))  # what the killed node left
                assert stopped.returncode == 3 and "has exited" in stopped.stdout, stopped.stderr
                pooled = len(before) - len(crawled)
                assert f"documents  {len(crawled)} local, {pooled} pooled" in stopped.stdout
                assert f"peers      {len(others)} known from its last run (it rejoins them)" in stopped.stdout

                # no --bootstrap, and a new port the others cannot have redialled: it rejoins through the
                # neighbour list it saved before it was killed
                restarted = start_node(victim.data, [], offline=False)
                nodes.append(restarted)  # stopped with the others at exit
                wait_until_ready(restarted)
                with NodeClient(restarted.url, restarted.token) as again:
                    assert {t["key"] for t in again.topics()["topics"]} == {
                        "Databases",
                        "Mathematics",
                        "Sysadmin",
                    }
                    # the crawl counts its own pages (pooled results of peers are stored beside them)
                    assert again.status()["crawl"]["pages"] >= len(crawled)
                    wait_until(
                        lambda: again.status()["peers_online"] >= 1, 30, "the restarted node rejoining"
                    )
                    wait_until(lambda: again.status()["crawl"]["pages"] >= PAGES, 90, "the resumed crawl")
                after = stored_urls(victim.data.repository)
                assert before <= after and len(after) >= PAGES
            finally:
                for client in clients:
                    client.close()
        assert not any(n.data.api_address.exists() for n in nodes)


def test_node_run_stops_cleanly_on_sigterm_and_removes_api_file(tmp_path):
    from node.datadir import DataDir

    data = DataDir(tmp_path / "solo")
    assert main(["init", "--data", str(data.root)]) == 0  # `node run` runs only on a data directory set up
    node = start_node(data, [], offline=True)
    try:
        wait_until_ready(node)
        assert json.loads(data.api_address.read_text())["pid"] == node.process.pid
        node.process.send_signal(signal.SIGTERM)
        assert node.process.wait(timeout=30) == 0
        assert not data.api_address.exists()
        assert oct(os.stat(data.api_token).st_mode & 0o777) == "0o600"
    finally:
        stop_processes([node.process])
