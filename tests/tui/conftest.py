"""A real node for the UI's tests: the fixture web on loopback, its bookmarks imported, a short crawl.

The node runs as a networked `topicswarm node run` subprocess (listening on loopback, no peers needed) for
the whole session, so its cooperation layer answers meta-classifier and refinement requests. The bookmarks
are imported through its API, which queues them as seeds; the crawl is bounded by --max-pages, so the data
it serves settles within seconds. MAX_PAGES is enough for a topic to hold the documents a refinement into
two subtopics needs (2 per subtopic) and a meta-classifier whose kept count moves with the loss.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from node.client import NodeClient, node_running
from node.datadir import DataDir
from simnet.web import serve_web_in_subprocess
from tests.waiting import wait_until

CONFIG = """[crawler]
download_delay = 0.0
autothrottle_enabled = false
concurrent_requests_per_domain = 4
retry_times = 0
download_timeout = 3.0
allowed_hosts = ["127.0.0.0/8"]

[node]
metrics_interval = 0.5
stats_event_interval = 0.2

[cooperation]
sync_interval = 1.0
"""
MAX_PAGES = 150
FIXTURE_BOOKMARKS = Path(__file__).resolve().parents[2] / "simnet/webs/fixture-bookmarks.html"
START_TIMEOUT = 60.0
SETTLE_TIMEOUT = 90.0
NODE_RUN = (sys.executable, "-m", "node.cli", "node", "run")
LOOPBACK = "/ip4/127.0.0.1/tcp/0"


def crawl_done(status: dict) -> bool:
    """The bounded crawl has ended (or reached its page budget): the node's documents no longer change."""
    crawl = status["crawl"]
    return crawl["pages"] >= MAX_PAGES or (crawl["pages"] > 0 and not crawl["active"])


def local_bookmarks(web, source: Path) -> str:
    """The fixture bookmarks with every upstream URL replaced by the simulated web's local URL."""

    def local(match: re.Match[str]) -> str:
        return f'HREF="{web.map_upstream(match.group(1)) or match.group(1)}"'

    return re.sub(r'HREF="([^"]+)"', local, source.read_text())


@pytest.fixture(scope="session")
def fixture_web():
    with serve_web_in_subprocess("fixture") as web:
        yield web


@pytest.fixture(scope="session")
def node_data(tmp_path_factory, fixture_web):
    """The data directory of a running node that imported the fixture bookmarks and crawled MAX_PAGES."""
    root = tmp_path_factory.mktemp("tui-node")
    (root / "config.toml").write_text(CONFIG)
    bookmarks = root / "bookmarks.html"
    bookmarks.write_text(local_bookmarks(fixture_web, FIXTURE_BOOKMARKS))
    data = DataDir(root)
    log = open(root / "node.log", "ab")  # noqa: SIM115 (closed at teardown)
    process = subprocess.Popen(
        [*NODE_RUN, "--data", str(root), "--listen", LOOPBACK, "--max-pages", str(MAX_PAGES)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_until(lambda: node_running(data) or process.poll() is not None, START_TIMEOUT, "node start")
        assert process.poll() is None, (root / "node.log").read_text()[-3000:]
        with NodeClient.from_data_dir(data) as client:
            client.import_topics(bookmarks_html=bookmarks.read_text())
            wait_until(lambda: crawl_done(client.status()), SETTLE_TIMEOUT, "crawl")
        yield data
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
