"""`topicswarm search` and `topics import` go through the node's API when a node runs on the data directory
(one writer on the repository) and straight to the repository otherwise, printing the same either way."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

import crawler.taxonomy
import node.cli.search
from node.cli import main
from node.cli.demo import map_bookmarks
from node.client import NodeClient, node_running
from node.datadir import DataDir
from simnet.paths import PROJECT_ROOT
from simnet.web import serve_web_in_subprocess
from tests.waiting import wait_until

CONFIG = """[crawler]
download_delay = 0.0
autothrottle_enabled = false
concurrent_requests_per_domain = 4
retry_times = 0
download_timeout = 3.0
allowed_hosts = ["127.0.0.0/8"]
"""
BOOKMARKS = PROJECT_ROOT / "simnet/webs/fixture-bookmarks.html"
MAX_PAGES = 40
TIMEOUT = 90.0  # hang guard only


def refuse(*args, **kwargs):
    raise AssertionError("the command wrote or searched the repository itself while a node runs")


def output(capsys, argv: list[str]) -> str:
    capsys.readouterr()
    assert main(argv) == 0, capsys.readouterr().err
    return capsys.readouterr().out


@pytest.mark.slow
def test_import_and_search_go_through_a_running_node_and_print_as_without_one(tmp_path, capsys, monkeypatch):
    with serve_web_in_subprocess("fixture") as web:
        bookmarks = tmp_path / "bookmarks.html"
        bookmarks.write_text(map_bookmarks(BOOKMARKS.read_text(), web.map_upstream))
        alone = tmp_path / "alone"
        imported_alone = output(capsys, ["topics", "import", "--data", str(alone), str(bookmarks)])

        root = tmp_path / "node"
        root.mkdir()
        (root / "config.toml").write_text(CONFIG)
        data = DataDir(root)
        log = open(root / "node.out", "ab")  # noqa: SIM115 (closed below)
        run = [sys.executable, "-m", "node.cli", "node", "run", "--data", str(root), "--offline"]
        process = subprocess.Popen(
            [*run, "--max-pages", str(MAX_PAGES)], stdout=log, stderr=subprocess.STDOUT
        )
        try:
            wait_until(lambda: node_running(data) or process.poll() is not None, TIMEOUT, "node start")
            assert process.poll() is None, (root / "node.out").read_text()[-3000:]
            with monkeypatch.context() as patched:
                patched.setattr(crawler.taxonomy, "store_taxonomy", refuse)
                patched.setattr(node.cli.search, "search_from_args", refuse)
                imported = output(capsys, ["topics", "import", "--data", str(root), str(bookmarks)])
                with NodeClient.from_data_dir(data) as client:
                    assert {t["key"] for t in client.topics()["topics"]} >= {"Databases", "Sysadmin"}
                    wait_until(lambda: client.status()["documents"]["local"] >= MAX_PAGES, TIMEOUT, "crawl")
                    wait_until(lambda: not client.status()["crawl"]["active"], TIMEOUT, "crawl end")
                search = ["search", "--data", str(root), "database", "--verdict", "any"]
                through_api = output(capsys, search), output(capsys, [*search, "--json"])
                pooled = output(capsys, [*search[:4], "--origin", "pooled"])
                peers = output(capsys, ["peers", "--data", str(root)])
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log.close()
    assert not node_running(data)
    # an offline node pools nothing and has no peers: the answers say which filter and how to join
    assert pooled.startswith("no hits for 'database' with --origin pooled (try --origin any)")
    assert "this node runs offline; restart it without --offline" in peers
    assert imported == imported_alone.replace(str(alone), str(root))
    bookmarked = BOOKMARKS.read_text().count("HREF=")
    assert imported.startswith(f"imported 3 topics with {bookmarked} training documents")
    direct = output(capsys, search), output(capsys, [*search, "--json"])
    assert "results" in direct[0] and direct[1].count("\n") >= 1
    assert through_api == direct
