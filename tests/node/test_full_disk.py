"""A node whose disk fills: the crawl stops and waits, nothing stored is lost, searches go on, and freeing
space lets the crawl go on to its limit without storing a page twice.

SQLite's `max_page_count` on the crawler's connection stands in for the disk: past it, SQLite fails the
write with the very error (SQLITE_FULL, "database or disk is full") a full disk gives."""

from __future__ import annotations

import re

import pytest
import tomli_w
import trio

from crawler.repository_schema import DONE
from node.cli.demo import demo_crawler_settings, map_bookmarks
from node.client import AsyncNodeClient
from node.config import parse_config
from node.datadir import DataDir
from node.service import NodeService
from simnet.paths import PROJECT_ROOT
from simnet.web import serve_web_in_subprocess

CONFIG = {"crawler": demo_crawler_settings(), "node": {"metrics_interval": 0.5, "max_pages": 80}}
BOOKMARKS = PROJECT_ROOT / "simnet/webs/fixture-bookmarks.html"
ROOM_PAGES = 200  # SQLite pages the crawl may add before the "disk" is full
TIMEOUT = 90.0  # hang guard only


def crawl_consistency(repo) -> dict[str, int]:
    """Own documents, URLs stored twice, and documents whose URL the frontier does not mark done."""
    one = lambda sql: repo.db.execute(sql).fetchone()[0]  # noqa: E731
    return {
        "documents": one("SELECT count(*) FROM documents WHERE origin IS NULL"),
        "stored_twice": one(
            "SELECT count(*) FROM (SELECT url FROM documents GROUP BY url HAVING count(*) > 1)"
        ),
        "stored_not_done": one(
            "SELECT count(*) FROM documents d WHERE origin IS NULL AND NOT EXISTS "
            f"(SELECT 1 FROM frontier f WHERE f.url = d.url AND f.state = {DONE})"
        ),
    }


def stored_title_word(repo) -> str:
    """The longest word of a stored page's title: a search for it must find that page."""
    titles = [row[0] for row in repo.db.execute("SELECT title FROM documents WHERE origin IS NULL")]
    return max((w for t in titles for w in re.findall(r"[A-Za-z]{4,}", t)), key=len)


async def wait_for_reason(client: AsyncNodeClient, reasons: set[str]) -> dict:
    with trio.move_on_after(TIMEOUT):
        while True:
            crawl = (await client.status())["crawl"]
            if not crawl["active"] and crawl["reason"] in reasons:
                return crawl
            await trio.sleep(0.2)
    raise AssertionError(f"the crawl did not stop for {reasons} within {TIMEOUT:.0f} s: {crawl}")


@pytest.mark.slow
@pytest.mark.trio
async def test_a_full_disk_stops_the_crawl_loses_nothing_and_freed_space_resumes_it(tmp_path):
    data = DataDir(tmp_path / "node")
    service = NodeService(data, parse_config(tomli_w.dumps(CONFIG)), offline=True)
    with serve_web_in_subprocess("fixture") as web:
        async with trio.open_nursery() as nursery:
            await nursery.start(service.run)
            async with AsyncNodeClient.from_data_dir(data) as client:
                await client.crawl("pause")
                await client.import_topics(
                    bookmarks_html=map_bookmarks(BOOKMARKS.read_text(), web.map_upstream)
                )
                crawler_db = service._repo.db  # the engine's connection, idle while the crawl is paused
                size = crawler_db.execute("PRAGMA page_count").fetchone()[0]
                crawler_db.execute(f"PRAGMA max_page_count = {size + ROOM_PAGES}")
                await client.crawl("start")

                crawl = await wait_for_reason(client, {"disk_full"})
                assert crawl["activity"] == "waiting"
                assert "is full" in crawl["detail"] and "crawl start" in crawl["detail"]
                full = await service.db(crawl_consistency)
                assert 0 < full["documents"] < 80 and crawl["pages"] == full["documents"]
                assert full["stored_twice"] == 0 and full["stored_not_done"] == 0
                word = await service.db(stored_title_word)  # the pages stored first vary from run to run
                assert (await client.search(word, verdict="any"))["total"] > 0  # reading needs no room

                crawler_db.execute("PRAGMA max_page_count = 1073741823")  # the user freed space
                await client.crawl("start")
                await wait_for_reason(client, {"max_pages"})
                after = await service.db(crawl_consistency)
                assert after == {"documents": 80, "stored_twice": 0, "stored_not_done": 0}
            service.request_stop()
