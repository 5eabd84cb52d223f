"""`topicswarm crawl` and `search` from the command line, against the fixture web on loopback."""

from __future__ import annotations

import io
import json

import pytest

from crawler.crawl_stats import CrawlStats
from crawler.repository import Repository
from crawler.repository_schema import QUEUED
from node.cli import main
from node.cli.crawl import ProgressPrinter, summary
from simnet.web import serve_web_in_subprocess

CONFIG = """[crawler]
download_delay = 0.0
autothrottle_enabled = false
concurrent_requests_per_domain = 4
allowed_hosts = ["127.0.0.0/8"]
"""


@pytest.fixture(scope="module")
def web():
    with serve_web_in_subprocess("fixture") as served:
        yield served


def test_crawl_then_search_then_resume(web, tmp_path, capsys):
    data = tmp_path / "node"
    data.mkdir()
    (data / "config.toml").write_text(CONFIG)
    assert main(["crawl", "--data", str(data), "--seed", web.hub_url, "--max-pages", "25"]) == 0
    out, err = capsys.readouterr()
    assert "reached --max-pages" in out and "25 of this node's crawl in the repository" in out
    assert "pages/s" in err  # progress lines on a non-terminal stderr

    assert main(["search", "--data", str(data), "--json", "--limit", "3", "documentation"]) == 0
    hits = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert 1 <= len(hits) <= 3 and all(hit["url"].startswith("http://127.0.0.") for hit in hits)
    # the crawl computed the link signals the ranking weighs (they were 0 for every page before)
    assert any(hit["signals"]["authority"] > 0 for hit in hits)
    assert any(hit["signals"]["pagerank"] > 0 for hit in hits)

    assert main(["crawl", "--data", str(data), "--max-pages", "40", "--quiet"]) == 0  # no seed: resumes
    out, err = capsys.readouterr()
    assert "40 of this node's crawl in the repository" in out and err == ""


def test_search_errors_are_one_line_without_traceback(tmp_path, capsys):
    assert main(["search", "--data", str(tmp_path), "anything"]) == 2
    err = capsys.readouterr().err
    assert "nothing crawled yet" in err and "topicswarm node run" in err and "topicswarm crawl --seed" in err
    assert "Traceback" not in err and err.count("\n") == 1


def test_bad_fts_query_is_a_clear_error(web, tmp_path, capsys):
    data = tmp_path / "node"
    data.mkdir()
    (data / "config.toml").write_text(CONFIG)
    assert main(["crawl", "--data", str(data), "--seed", web.hub_url, "--max-pages", "3", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["search", "--data", str(data), "--fts", '"unbalanced']) == 2
    assert "cannot understand the query" in capsys.readouterr().err
    assert main(["search", "--data", str(data), '"unbalanced']) == 0  # plain words: any input is fine


def test_crawl_without_seed_on_an_empty_frontier_says_what_to_do(tmp_path, capsys):
    assert main(["crawl", "--data", str(tmp_path / "fresh")]) == 2
    assert "--seed" in capsys.readouterr().err


def test_a_crawl_rerun_once_its_pages_fall_due_revisits_them(web, tmp_path, capsys):
    data = tmp_path / "node"
    data.mkdir()
    (data / "config.toml").write_text(CONFIG)
    assert main(["crawl", "--data", str(data), "--seed", web.hub_url, "--max-pages", "5", "--quiet"]) == 0
    with Repository(data / "repository.db") as repo, repo.transaction():
        repo.db.execute(f"DELETE FROM frontier WHERE state = {QUEUED}")  # as if every link was crawled
    assert main(["crawl", "--data", str(data), "--quiet"]) == 2
    assert "the frontier is empty and no stored page is due" in capsys.readouterr().err
    with Repository(data / "repository.db") as repo, repo.transaction():
        repo.db.execute("UPDATE documents SET revisit_at = 0")  # a week later
    assert main(["crawl", "--data", str(data), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "frontier exhausted" in out and "5 stored pages fetched again: 0 had changed, 0 were gone" in out


def test_progress_prints_lines_off_a_terminal_and_the_summary_lists_errors():
    stream = io.StringIO()
    printer = ProgressPrinter(stream, every=3600)
    printer(CrawlStats(pages=1, errors_by_kind={"timeout": 2}))
    printer(CrawlStats(pages=2))  # within the interval: not printed
    printer(CrawlStats(pages=3, finished=True, reason="exhausted"))
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and "timeout 2" in lines[0] and lines[1].startswith("pages 3")
    text = summary(CrawlStats(pages=3, errors=2, errors_by_kind={"timeout": 2}, reason="exhausted"))
    assert "frontier exhausted" in text and "timeout" in text
    assert "revisits" not in text and "sitemaps" not in text
    revisited = summary(CrawlStats(revisits=5, changed=2, gone=1, reason="max_pages"))
    assert "5 stored pages fetched again: 2 had changed, 1 was gone" in revisited
    assert "2 sitemaps read, 40 pages they list queued" in summary(CrawlStats(sitemaps=2, sitemap_urls=40))
    waiting = {"hosts": 2, "links": 31, "next_try_in_s": 540.0}
    blocked = summary(CrawlStats(reason="blocked"), waiting=waiting)
    assert "crawl finished: every queued host failed repeatedly" in blocked
    assert "31 links of 2 hosts that failed repeatedly; the next is tried again in 9 min" in blocked
    assert "waiting" not in summary(CrawlStats(reason="exhausted"), waiting={**waiting, "hosts": 0})
    one = summary(CrawlStats(reason="blocked"), waiting={"hosts": 1, "links": 1, "next_try_in_s": 0.0})
    assert "1 link of 1 host that failed repeatedly; the next is tried again now" in one
    assert "feeds" not in text
    assert "1 feed read, 3 pages they list queued" in summary(CrawlStats(feeds=1, feed_urls=3))
    assert "left behind" not in text
    dry = summary(CrawlStats(reason="exhausted"), (12, False), 2)
    assert "left behind      12 links past pages the classifier rejected" in dry and "(2 hops)" in dry
    assert "at least 100000 links" in summary(CrawlStats(reason="exhausted"), (100000, True), 2)


def test_a_crawl_stopped_by_a_full_disk_says_so_and_how_to_resume(web, tmp_path, capsys, monkeypatch):
    async def fills_the_disk(self, max_pages=None):
        return CrawlStats(total_pages=7, finished=True, reason="disk_full")

    monkeypatch.setattr("crawler.engine.Crawler.run", fills_the_disk)
    data = tmp_path / "node"
    data.mkdir()
    (data / "config.toml").write_text(CONFIG)
    assert main(["crawl", "--data", str(data), "--seed", web.hub_url, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "is full" in err and "7 pages stored and none lost" in err and "same command again" in err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["crawl", "revisit"], "name the pages to fetch again with --url URL"),
        (["crawl", "revisit", "--all", "--url", "http://a.test/"], "name the pages to fetch again"),
        (["crawl", "--all"], "--url and --all go with `topicswarm crawl revisit`"),
        (["crawl", "start", "--url", "http://a.test/"], "--url and --all go with `topicswarm crawl revisit`"),
    ],
)
def test_revisit_arguments_are_checked_before_any_node_is_asked(tmp_path, capsys, argv, said):
    assert main([*argv, "--data", str(tmp_path / "node")]) == 2
    assert said in capsys.readouterr().err


def test_one_stored_page_due_for_a_revisit_is_counted_in_plain_english(tmp_path, capsys, monkeypatch):
    """ "1 stored pages due for a revisit now; the crawl fetches them": the count helper says it right."""
    from contextlib import contextmanager
    from types import SimpleNamespace

    answer = {"due": 1, "not_revisited": [], "state": "running"}

    @contextmanager
    def node(args):
        yield SimpleNamespace(revisit=lambda urls: answer)

    monkeypatch.setattr("node.cli.crawl.connect", node)
    assert main(["crawl", "revisit", "--data", str(tmp_path), "--url", "http://h.test/a"]) == 0
    said = capsys.readouterr().out.strip()
    assert said == "1 stored page due for a revisit now; the crawl fetches it before new links"
