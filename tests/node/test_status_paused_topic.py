"""What `topicswarm status` and `crawl start --topic` say about a crawl one of whose topics the user paused
while the links of the others wait for hosts that failed repeatedly (as offline, on links to the real Web):
the paused topic is named as what holds the crawl, before and after the node stops, and starting it answers
with the crawl it starts, not with the wait it ends. And right after `topics import`, before any node ran,
status says the bookmarks are queued when the node starts instead of "0 links queued" and harvests of 0.00.
"""

from __future__ import annotations

import json
import time

import pytest
import trio

from crawler.repository import Repository
from crawler.taxonomy import parse_bookmarks
from crawler.urls import host_of
from node import metrics
from node.cli import main
from node.cli.demo import map_bookmarks
from node.cli.status import NOT_RUNNING, crawl_lines
from node.client import AsyncNodeClient
from node.datadir import DataDir
from node.service import NodeService
from node.topics import taxonomy_seeds
from node.wording import crawl_answer_text
from simnet.web import serve_web
from tests.node.test_cli_status import BOOKMARKS, HANG_GUARD, loopback_config, store_bookmarks, wait_for

PAUSED = "Databases"
START = f"start it with `topicswarm crawl start --topic {PAUSED}`"


def pause_with_the_other_topics_hosts_bad(data: DataDir, bookmarks: str) -> int:
    """Databases paused and the hosts of every other topic's bookmarks bad for an hour, as a previous run
    left them: the node queues the bookmarks and has nothing it may fetch but Databases'. Returns how many
    bookmarks Databases holds."""
    seeds = taxonomy_seeds(parse_bookmarks(bookmarks))
    now = time.time()
    repo = Repository(data.repository)
    try:
        metrics.ensure_schema(repo)
        metrics.save_crawl_state(repo, PAUSED, metrics.PAUSED, now)
        with repo.transaction():
            for host in {host_of(url) for topic, urls in seeds.items() if topic != PAUSED for url in urls}:
                repo.record_host(host, "bad", now, failures=3, bad_spells=1, retry_at=now + 3600)
    finally:
        repo.close()
    return len(seeds[PAUSED])


async def run_until_blocked(data: DataDir, then=None) -> tuple[dict, object]:
    """Run an offline node until its crawl waits for the bad hosts; its status then, and what `then(client)`
    answered before the node stopped."""
    service = NodeService(data, loopback_config(), offline=True)
    async with trio.open_nursery() as nursery:
        await nursery.start(service.run)
        async with AsyncNodeClient.from_data_dir(data) as client:
            status = await wait_for(client, lambda crawl: crawl["reason"] == "blocked", "blocked")
            answer = await then(client) if then else None
        service.request_stop()
    return status, answer


async def start_paused(client: AsyncNodeClient) -> dict:
    return await client.crawl("start", topic=PAUSED)


async def blocked_beside_a_paused_topic(tmp_path, then=None) -> tuple[int, dict, dict | None]:
    """The links the paused topic holds, the status of the crawl waiting for the other topics' failed
    hosts, and the answer of `then`."""
    data = DataDir(tmp_path / "node").ensure()
    with trio.fail_after(HANG_GUARD):
        async with serve_web("fixture") as web:
            bookmarks = map_bookmarks(BOOKMARKS.read_text(), web.map_upstream)
            store_bookmarks(data, bookmarks)
            held = pause_with_the_other_topics_hosts_bad(data, bookmarks)
            status, answer = await run_until_blocked(data, then=then)
    return held, status, answer


@pytest.mark.trio
async def test_a_crawl_waiting_for_failing_hosts_names_the_paused_topic_that_holds_its_other_links(tmp_path):
    held, status, _ = await blocked_beside_a_paused_topic(tmp_path)
    crawl = status["crawl"]
    assert crawl["detail"].startswith(
        f"{held} links queued belong to {PAUSED} (paused): {START} (in the UI: s on the Topics "
        "screen); every other queued link belongs to a host that failed repeatedly"
    )
    assert "tried again in 60 min" in crawl["detail"]  # the bad hosts' next try
    assert crawl["held_topics"] == {PAUSED: "paused"} and crawl["held_links"] == held
    assert status["unfetched_topics"] == ["Databases", "Mathematics", "Sysadmin"]  # nothing fetched yet
    text = "\n".join(crawl_lines(crawl))
    assert f"not crawled: {PAUSED} (paused), holding {held} queued links; {START}" in text


@pytest.mark.trio
async def test_starting_the_paused_topic_answers_with_the_crawl_it_starts_not_the_wait_it_ends(tmp_path):
    _, _, answer = await blocked_beside_a_paused_topic(tmp_path, then=start_paused)
    assert answer is not None
    assert answer["crawl"]["reason"] == "starting"  # its hosts never failed: it fetches at once
    assert crawl_answer_text(answer, PAUSED) == f"crawl running for {PAUSED}"


def test_a_stopped_node_names_the_topics_its_crawl_leaves_out_when_it_starts(tmp_path, capsys):
    data = DataDir(tmp_path / "node").ensure()
    store_bookmarks(data, BOOKMARKS.read_text())
    now = time.time()
    repo = Repository(data.repository)
    try:
        metrics.ensure_schema(repo)  # as a node that ran here left it
        metrics.save_crawl_state(repo, PAUSED, metrics.PAUSED, now)
        metrics.save_crawl_state(repo, "Sysadmin", metrics.RUNNING, now)
        with repo.transaction() as db:
            for url, topic in (("http://a/1", PAUSED), ("http://a/2", PAUSED), ("http://b/1", "Sysadmin")):
                db.conn.execute(
                    "INSERT INTO frontier (url, host, topic, priority, depth) VALUES (?, ?, ?, 1.0, 0)",
                    [url, host_of(url), topic],
                )
    finally:
        repo.close()

    assert main(["status", "--data", str(data.root)]) == NOT_RUNNING
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:3] == [
        "crawl      3 links queued; the crawl resumes when the node starts",
        f"           not crawled: {PAUSED} (paused), holding 2 queued links; {START}",
    ]
    assert main(["status", "--data", str(data.root), "--json"]) == NOT_RUNNING
    crawl = json.loads(capsys.readouterr().out)["crawl"]
    assert crawl["held_topics"] == {PAUSED: "paused"} and crawl["held_links"] == 2


def test_topics_imported_before_any_node_ran_say_the_node_queues_their_bookmarks(tmp_path, capsys):
    data = DataDir(tmp_path / "node").ensure()
    store_bookmarks(data, BOOKMARKS.read_text())
    seeds = taxonomy_seeds(parse_bookmarks(BOOKMARKS.read_text()))
    bookmarks = len({url for urls in seeds.values() for url in urls})

    assert main(["status", "--data", str(data.root)]) == NOT_RUNNING
    assert capsys.readouterr().out.splitlines()[1] == (
        f"crawl      nothing queued yet: the node queues the imported topics' {bookmarks} bookmarks when it "
        "starts and crawls from them"
    )


def test_topics_nothing_was_fetched_for_read_not_crawled_yet_not_a_harvest_of_0(tmp_path, capsys):
    data = DataDir(tmp_path / "node").ensure()
    store_bookmarks(data, BOOKMARKS.read_text())
    topics = sorted(taxonomy_seeds(parse_bookmarks(BOOKMARKS.read_text())))

    assert main(["status", "--data", str(data.root)]) == NOT_RUNNING
    lines = capsys.readouterr().out.splitlines()
    heading = "harvest    share of the pages fetched for each topic that its classifier accepted"
    width = max(len(topic) for topic in topics)  # the column fits the longest key
    assert lines[lines.index(heading) + 1 :] == [
        f"           {topic:<{width}} not crawled yet" for topic in topics
    ]
    assert main(["status", "--data", str(data.root), "--json"]) == NOT_RUNNING
    assert json.loads(capsys.readouterr().out)["unfetched_topics"] == topics
