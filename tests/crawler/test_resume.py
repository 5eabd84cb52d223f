"""kill -9 mid-crawl, then resume: nothing stored is lost and no completed page is fetched again.

The crawl runs as `topicswarm crawl` in a subprocess against the fixture web served by this test, so the
server's request log is the independent witness of what was fetched.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from urllib.parse import urlsplit

import pytest
import trio

from simnet.web import serve_web

CONFIG = """[crawler]
download_delay = 0.0
autothrottle_enabled = false
concurrent_requests = 8
concurrent_requests_per_domain = 2
write_batch_size = 8
allowed_hosts = ["127.0.0.0/8"]
"""


def stored_urls(db_path) -> set[str]:
    if not db_path.exists():
        return set()
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT url, final_url FROM documents").fetchall()
    except sqlite3.OperationalError:
        rows = []  # the schema is not created yet
    finally:
        conn.close()
    return {url for row in rows for url in row}


def request_key(host: str, path: str) -> str:
    return f"{host}{path}"


def url_key(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port}{parts.path}" + (f"?{parts.query}" if parts.query else "")


@pytest.mark.slow
@pytest.mark.trio
async def test_kill_9_mid_crawl_loses_nothing_and_fetches_nothing_completed_again(tmp_path):
    data = tmp_path / "node"
    data.mkdir()
    (data / "config.toml").write_text(CONFIG)
    db_path = data / "repository.db"
    async with serve_web("fixture") as web:
        command = [sys.executable, "-m", "node.cli", "crawl", "--data", str(data), "--seed", web.hub_url]
        command += ["--max-pages", "150", "--quiet"]
        process = await trio.lowlevel.open_process(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        with trio.fail_after(60):
            while len(stored_urls(db_path)) < 40:
                assert process.poll() is None, "the crawl ended before it could be killed"
                await trio.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        await process.wait()
        await trio.sleep(0.5)  # let the server log what the killed crawler had in flight
        before_kill = stored_urls(db_path)
        first_run_log = list(web.request_log)

        with trio.fail_after(120):
            result = await trio.run_process(command, capture_stdout=True, capture_stderr=True, check=False)
        assert result.returncode == 0, result.stderr.decode()
        second_run_log = web.request_log[len(first_run_log) :]

    after = stored_urls(db_path)
    assert before_kill <= after, "documents stored before the kill were lost"
    completed = {url_key(url) for url in before_kill}
    refetched = [r for r in second_run_log if request_key(r.host, r.path) in completed]
    assert refetched == [], f"completed pages fetched again: {[r.path for r in refetched][:5]}"
    page_requests = [request_key(r.host, r.path) for r in first_run_log if not r.path.endswith("robots.txt")]
    assert len([k for k in page_requests if k in completed]) == len(completed & set(page_requests))
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        count = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
        assert count >= 150 or b"frontier exhausted" in result.stdout
        done = {row[0] for row in conn.execute("SELECT url FROM frontier WHERE state = 1")}
        documents = {row[0] for row in conn.execute("SELECT url FROM documents")}
        assert documents <= done, "a stored document whose URL is not marked done"
    finally:
        conn.close()
