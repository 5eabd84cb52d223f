"""`crawl pause` lets the requests in flight finish; `crawl stop` cancels them at once, their links queued
again: a server that takes a minute to answer holds up a pause, never a stop."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
import trio

from crawler.repository import Repository
from crawler.repository_schema import QUEUED
from node.cli.demo import NodeProcess, stop_processes, wait_until_ready
from node.cli.status import crawl_lines
from node.client import AsyncNodeClient, NodeClient
from node.config import parse_config
from node.datadir import DataDir
from node.service import NodeService
from node.wording import crawl_answer_text
from simnet.web.child import serve_web_in_subprocess
from simnet.web.corpus import load_web
from simnet.web.faults import Fault, FaultPlan

SLOW_ANSWER_S = 60.0
CONFIG = f"""[crawler]
download_delay = 0.0
autothrottle_enabled = false
retry_times = 0
download_timeout = {SLOW_ANSWER_S * 2}
allowed_hosts = ["127.0.0.0/8"]

[node]
metrics_interval = 0.2
"""
ONE_FINISHING = "1 request in flight finishes first (`topicswarm crawl stop` cancels it)"
TIMEOUT = 30.0  # well under the slow answer: the test fails if the stop waits for it


@pytest.fixture(scope="module")
def slow_web():
    corpus = load_web("fixture")
    site = corpus.sites[0].name
    faults = FaultPlan([Fault("slow", host=site, delay=SLOW_ANSWER_S)])
    with serve_web_in_subprocess(corpus, faults=faults) as web:
        yield web.site_url(site)


def queued_urls(repo) -> set[str]:
    return {url for (url,) in repo.db.execute("SELECT url FROM frontier WHERE state = ?", [QUEUED])}


async def crawl_status(client: AsyncNodeClient) -> dict:
    return (await client.status())["crawl"]


async def wait_for_crawl(client: AsyncNodeClient, predicate, what: str) -> dict:
    with trio.move_on_after(TIMEOUT):
        while not predicate(crawl := await crawl_status(client)):
            await trio.sleep(0.1)
        return crawl
    raise AssertionError(f"{what} within {TIMEOUT:.0f} s; crawl: {crawl}")


@pytest.mark.slow
@pytest.mark.trio
async def test_a_pause_waits_for_the_slow_answer_and_a_stop_cancels_it_keeping_its_link(tmp_path, slow_web):
    seed = slow_web
    data = DataDir(tmp_path / "node")
    service = NodeService(data, parse_config(CONFIG), offline=True)
    with trio.fail_after(TIMEOUT * 3):
        async with trio.open_nursery() as nursery:
            await nursery.start(service.run)
            async with AsyncNodeClient.from_data_dir(data) as client:
                await service.add_seeds([seed])
                await wait_for_crawl(client, lambda c: c["in_flight"] == 1, "the seed's request leaves")

                answer = await client.crawl("pause")
                assert answer["state"] == "paused" and answer["in_flight_finishing"] == 1
                assert crawl_answer_text(answer, None) == f"crawl paused: {ONE_FINISHING}"
                await trio.sleep(1.0)
                crawl = await crawl_status(client)
                assert crawl["active"] and crawl["in_flight"] == 1  # the request waits for its answer
                assert crawl["activity"] == "pausing"
                assert crawl_lines(crawl)[0] == f"crawl      pausing: {ONE_FINISHING}"

                answer = await client.crawl("stop")
                assert answer["state"] == "stopped" and answer["in_flight_cancelled"] == 1
                cancelled = "1 request in flight cancelled, its link queued for `topicswarm crawl start`"
                assert crawl_answer_text(answer, None) == f"crawl stopped: {cancelled}"
                crawl = await wait_for_crawl(client, lambda c: not c["active"], "the stopped crawl ends")
                assert crawl["activity"] == "stopped" and crawl["in_flight"] == 0
                assert crawl["errors_by_kind"] == {}
                assert crawl["frontier_size"] == 1
                assert await service.db(queued_urls) == {seed}  # queued still, fetched after `crawl start`
            service.request_stop()


@pytest.mark.slow
@pytest.mark.trio
async def test_a_shutdown_cancels_what_is_in_flight_after_its_grace_and_keeps_the_links(
    tmp_path, slow_web, caplog
):
    seed = slow_web
    data = DataDir(tmp_path / "node")
    config = parse_config(CONFIG.replace("[node]\n", "[node]\nshutdown_grace = 1.0\n"))
    service = NodeService(data, config, offline=True)
    caplog.set_level("INFO", logger="node.service")
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            await nursery.start(service.run)
            async with AsyncNodeClient.from_data_dir(data) as client:
                await service.add_seeds([seed])
                await wait_for_crawl(client, lambda c: c["in_flight"] == 1, "the seed's request leaves")
            service.request_stop()
    assert "cancelling 1 request still in flight (the links stay queued)" in caplog.text
    repo = Repository(data.repository)
    try:
        assert queued_urls(repo) == {seed}
    finally:
        repo.close()


@pytest.mark.slow
def test_a_second_ctrl_c_cancels_the_requests_in_flight_and_the_node_stops_in_order(tmp_path, slow_web):
    seed = slow_web
    data = DataDir(tmp_path / "node").ensure()
    data.config.write_text(CONFIG.replace("[node]\n", "[node]\nshutdown_grace = 600.0\n"), encoding="utf-8")
    command = [sys.executable, "-m", "node.cli", "node", "run", "--data", str(data.root), "--offline"]
    node = NodeProcess(data, subprocess.Popen([*command, "--seed", seed], start_new_session=True))
    try:
        wait_until_ready(node)
        with NodeClient(node.url, node.token) as client:
            deadline = time.monotonic() + TIMEOUT
            while client.status()["crawl"]["in_flight"] != 1:
                assert time.monotonic() < deadline, "the seed's request did not leave"
                time.sleep(0.1)
        node.process.send_signal(signal.SIGINT)  # waits for the answer, up to shutdown_grace
        time.sleep(0.5)
        node.process.send_signal(signal.SIGINT)
        assert node.process.wait(timeout=TIMEOUT) == 0
    finally:
        stop_processes([node.process])
    assert "1 request in flight cancelled (the links stay queued)" in data.log.read_text()
    repo = Repository(data.repository)
    try:
        assert queued_urls(repo) == {seed}
    finally:
        repo.close()
