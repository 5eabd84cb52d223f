"""A node service on the fixture web for tests: offline, the fixture's bookmarks imported, its crawl run
until it stops for a given reason."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import tomli_w
import trio

from node.cli.demo import map_bookmarks
from node.client import AsyncNodeClient
from node.config import parse_config
from node.datadir import DataDir
from node.service import NodeService
from simnet.paths import PROJECT_ROOT
from simnet.web import serve_web_in_subprocess

BOOKMARKS = PROJECT_ROOT / "simnet/webs/fixture-bookmarks.html"
TIMEOUT = 90.0  # hang guard only


@asynccontextmanager
async def crawled_fixture_node(
    tmp_path: Path,
    config: dict,
    reason: str = "max_pages",
    bookmarks: str | None = None,
    *,
    offline: bool = True,
) -> AsyncIterator[tuple[NodeService, AsyncNodeClient]]:
    """A node that crawled the fixture web until its crawl stopped for `reason` (`max_pages`, `exhausted`),
    and its client; stopped on leaving. `bookmarks`: a bookmarks file's text in place of the fixture's, its
    URLs upstream ones as there. Not `offline`, it listens on loopback without peers: its cooperation layer
    runs (refinement, meta-classifiers from its own model)."""
    data = DataDir(tmp_path / "node")
    if not offline:
        config = {**config, "p2p": {"listen_addrs": ["/ip4/127.0.0.1/tcp/0"], "dht_enabled": False}}
    service = NodeService(data, parse_config(tomli_w.dumps(config)), offline=offline)
    with serve_web_in_subprocess("fixture") as web, trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            await nursery.start(service.run)
            async with AsyncNodeClient.from_data_dir(data) as client:
                await client.import_topics(
                    bookmarks_html=map_bookmarks(bookmarks or BOOKMARKS.read_text(), web.map_upstream)
                )
                await client.crawl("start")
                while (crawl := (await client.status())["crawl"])["active"] or crawl["reason"] != reason:
                    await trio.sleep(0.2)
                yield service, client
            service.request_stop()
