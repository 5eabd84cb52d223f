"""A relevance mark on a peer's result trains on the page itself: the node holds only the peer's preview."""

from __future__ import annotations

import pytest
import trio

from crawler.repository import Repository
from crawler.taxonomy import parse_bookmarks
from node.cli.demo import map_bookmarks
from node.client import AsyncNodeClient
from node.cooperation import store
from node.datadir import DataDir
from node.service import NodeService
from p2p.messages.results import CrawlResult
from simnet.web import serve_web
from tests.node.test_cli_status import BOOKMARKS, loopback_config

PREVIEW = "a peer's preview of the page"
UNREACHABLE = "http://127.0.0.99:9/gone.html"
HANG_GUARD = 60.0


def pooled(url: str, i: int) -> CrawlResult:
    return CrawlResult(url, f"pooled {i}", PREVIEW, "Databases", 1.0, f"{i:016x}", "12D3KooWPeer", 0.0)


def training_texts(data: DataDir) -> dict[str, tuple[int, str]]:
    with Repository(data.repository) as repo:
        if not repo.db["training_documents"].exists():
            return {}
        rows = repo.db.execute("SELECT url, polarity, text FROM training_documents WHERE source = 'feedback'")
        return {url: (polarity, text) for url, polarity, text in rows}


@pytest.mark.trio
async def test_a_mark_on_a_peers_result_trains_on_the_fetched_page_or_else_its_preview(tmp_path):
    data = DataDir(tmp_path / "node").ensure()
    async with serve_web("fixture") as web:
        html = map_bookmarks(BOOKMARKS.read_text(), web.map_upstream)
        page = next(d.url for d in parse_bookmarks(html).documents if d.url)
        with Repository(data.repository) as repo:
            store.ensure_schema(repo)
            results = [pooled(page, 1), pooled(UNREACHABLE, 2)]
            store.pool_results(repo, "12D3KooWPeer", "Databases", results, len(results))
            ids = {url: repo.document_by_url(url)["id"] for url in (page, UNREACHABLE)}
        service = NodeService(data, loopback_config(), offline=True, max_pages=0)
        async with trio.open_nursery() as nursery:
            await nursery.start(service.run)
            async with AsyncNodeClient.from_data_dir(data) as client:
                answers = [
                    await client.feedback(ids[page], relevant=True),
                    await client.feedback(ids[UNREACHABLE], relevant=False),
                ]
                with trio.fail_after(HANG_GUARD):
                    while len(training_texts(data)) < 2:
                        await trio.sleep(0.2)
            service.request_stop()
    assert answers == [{"ok": True, "fetching": page}, {"ok": True, "fetching": UNREACHABLE}]
    trained = training_texts(data)
    polarity, text = trained[page]
    assert polarity == 1 and len(text) > 10 * len(PREVIEW) and PREVIEW not in text
    assert trained[UNREACHABLE] == (0, PREVIEW)  # the fetch failed: the preview is what the node has
