"""A node keeps its repository fresh by itself: once its crawl has stopped at its page limit, stored pages
that fall due are fetched again without anyone starting the crawl."""

from __future__ import annotations

import pytest
import trio

from node.cli.demo import demo_crawler_settings
from node.cli.status import crawl_lines
from node.client import NodeError
from tests.fixture_node import crawled_fixture_node

REVISIT_AFTER = 5.0  # far longer than the 20-page crawl takes: its last pages fall due after it ends
PAGES = 20
CONFIG = {
    "crawler": {**demo_crawler_settings(), "revisit_after": REVISIT_AFTER},
    "node": {"metrics_interval": 0.5, "max_pages": PAGES},
}


def revisit_intervals(repo) -> dict[float | None, int]:
    """How many own pages have each revisit interval (None: never revisited yet)."""
    rows = repo.db.execute(
        "SELECT revisit_interval, count(*) FROM documents WHERE origin IS NULL GROUP BY revisit_interval"
    )
    return dict(rows.fetchall())


@pytest.mark.slow
@pytest.mark.trio
async def test_a_node_at_its_page_limit_revisits_its_pages_when_they_fall_due(tmp_path):
    async with crawled_fixture_node(tmp_path, CONFIG) as (service, client):
        at_stop = await service.db(revisit_intervals)
        # the fixture web does not change: each revisited page waits twice as long next time, and
        # pages fetched in the run's last seconds fall due after it ended
        while (intervals := await service.db(revisit_intervals)).get(None, 0) == at_stop.get(None, 0):
            await trio.sleep(0.2)
        assert set(intervals) <= {None, 2 * REVISIT_AFTER, 4 * REVISIT_AFTER}
        assert sum(intervals.values()) == PAGES  # nothing crawled past the limit
        while not (crawl := (await client.status())["crawl"])["revisits"]["fetched"]:
            await trio.sleep(0.2)  # the figures of a run are shown once it has ended
        assert crawl["revisits"]["changed"] == crawl["revisits"]["gone"] == 0
        fetched = crawl["revisits"]["fetched"]  # one or more, as the run's status was read
        pages = f"{fetched} stored page{'s' if fetched > 1 else ''}"
        wording = f"{pages} fetched again: 0 had changed, 0 were gone"
        assert wording in "\n".join(crawl_lines(crawl))


@pytest.mark.slow
@pytest.mark.trio
async def test_pages_the_user_asks_to_revisit_are_fetched_again_at_once(tmp_path):
    config = {"crawler": demo_crawler_settings(), "node": {"metrics_interval": 0.5, "max_pages": PAGES}}
    async with crawled_fixture_node(tmp_path, config) as (service, client):
        url = await service.db(lambda repo: revisited_urls(repo)[0])
        with pytest.raises(NodeError, match="urls"):
            await client.revisit([])
        answer = await client.revisit([url, "http://127.0.0.1:9/never-crawled.html"])
        assert answer["due"] == 1 and answer["not_revisited"] == ["http://127.0.0.1:9/never-crawled.html"]
        week = 7 * 86400.0
        # the simulated web answers 304 to the stored ETag: unchanged, so it waits twice as long
        while await service.db(interval_of, url) != 2 * week:
            await trio.sleep(0.2)
        everything = await client.revisit()
        assert everything["due"] == len(await service.db(revisited_urls))


def revisited_urls(repo) -> list[str]:
    """The pages the node revisits: its own accepted originals."""
    rows = repo.db.execute(
        "SELECT url FROM documents WHERE origin IS NULL AND accepted = 1 AND duplicate_of IS NULL ORDER BY id"
    )
    return [url for (url,) in rows]


def interval_of(repo, url: str) -> float | None:
    return repo.db.execute("SELECT revisit_interval FROM documents WHERE url = ?", [url]).fetchone()[0]
