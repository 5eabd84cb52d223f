"""A node crawling for a folder that holds nothing but another folder (Science with only Mathematics in
it) files the pages in the inner folder's topic, where the user put the bookmarks."""

from __future__ import annotations

import pytest

from node.cli.demo import demo_crawler_settings
from tests.fixture_node import crawled_fixture_node

PAGES = 60
CONFIG = {"crawler": demo_crawler_settings(), "node": {"max_pages": PAGES}}


def folder(name: str, inner: str) -> str:
    return f"<DT><H3>{name}</H3>\n<DL><p>\n{inner}</DL><p>\n"


def links(*urls: str) -> str:
    return "".join(f'<DT><A HREF="{url}">{url}</A>\n' for url in urls)


GNUPLOT = ("http://gnuplot.info/docs/node100.html", "http://gnuplot.info/docs/node117.html")
NESTED = (
    "<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL><p>\n"
    + folder("Science", folder("Mathematics", links(*GNUPLOT)))
    + folder(
        "Databases", links("https://www.sqlite.org/lang.html", "https://www.postgresql.org/docs/ddl.html")
    )
    + folder("Sysadmin", links("https://httpd.apache.org/docs/configuring.html"))
    + folder("OTHERS", links("https://docs.python.org/3/faq/index.html"))
    + "</DL><p>\n"
)


def own_topics(repo) -> dict[str | None, int]:
    """How many of the node's own accepted pages each topic holds."""
    rows = repo.db.execute(
        "SELECT topic, count(*) FROM documents WHERE origin IS NULL AND accepted = 1 GROUP BY topic"
    )
    return dict(rows.fetchall())


@pytest.mark.trio
async def test_pages_of_an_only_subfolder_are_filed_in_it_not_in_the_folder_above(tmp_path):
    async with crawled_fixture_node(tmp_path, CONFIG, bookmarks=NESTED) as (service, client):
        topics = await service.db(own_topics)
        listed = {t["key"] for t in (await client.topics())["topics"]}
    assert {"Science", "Science/Mathematics"} <= listed
    assert topics.get("Science/Mathematics", 0) >= len(GNUPLOT)
    assert topics.get("Science", 0) == 0
