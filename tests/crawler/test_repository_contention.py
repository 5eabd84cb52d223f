"""Write contention on one repository file: a writer that holds the lock long (CPU work inside a
transaction) and long reads must delay the crawler's writes, never fail them, and the log must name the
transaction that held the lock."""

from __future__ import annotations

import logging
import threading
import time

import pytest

import crawler.repository as repository
from crawler.errors import RepositoryBusy
from crawler.repository import DocumentRecord, Repository, StoredPage


def page(url: str) -> StoredPage:
    return StoredPage(
        DocumentRecord(
            url=url,
            final_url=url,
            host="a:80",
            status=200,
            content_type="text/html",
            title="T",
            text="text",
            fingerprint=f"fp-{url}",
            simhash=7,
            fetched_at=1.0,
            depth=0,
        )
    )


def slow_cooperation_write(repo: Repository, started: threading.Event, seconds: float) -> None:
    """A cooperation-like writer doing CPU work (here: sleeping) inside its transaction."""
    with repo.transaction() as db:
        db.execute("INSERT INTO hosts (host) VALUES ('cooperation:1')")
        started.set()
        time.sleep(seconds)


def long_read(repo: Repository, started: threading.Event, done: threading.Event) -> None:
    """A search-like read that keeps its cursor (and its snapshot) open a long time."""
    cursor = repo.db.conn.execute("SELECT id FROM documents UNION ALL SELECT 0")
    cursor.fetchone()
    started.set()
    done.wait(timeout=10)
    cursor.close()


def test_crawler_writes_wait_out_a_long_transaction_and_the_log_names_it(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(repository, "LONG_HOLD_S", 0.3)
    crawl, coop, reader = (Repository(tmp_path / "r.db") for _ in range(3))
    crawl.db.execute("PRAGMA busy_timeout = 100")  # SQLite alone would give up long before the holder ends
    held, reading, stop_reading = threading.Event(), threading.Event(), threading.Event()
    threads = [
        threading.Thread(target=slow_cooperation_write, args=(coop, held, 1.0)),
        threading.Thread(target=long_read, args=(reader, reading, stop_reading)),
    ]
    for thread in threads:
        thread.start()
    assert held.wait(timeout=10) and reading.wait(timeout=10)
    caplog.set_level(logging.WARNING, logger="crawler.repository")
    try:
        for i in range(20):  # the engine's batches: each its own transaction
            with crawl.transaction():
                crawl.insert_page(page(f"http://a/{i}"))
    finally:
        stop_reading.set()
        for thread in threads:
            thread.join(timeout=10)
    assert crawl.document_count() == 20
    messages = "\n".join(r.getMessage() for r in caplog.records)
    assert "no write lock after" in messages and "slow_cooperation_write" in messages
    assert "held the write lock" in messages
    for repo in (crawl, coop, reader):
        repo.close()


def test_a_write_outside_a_transaction_does_not_keep_the_write_lock(tmp_path):
    first, second = Repository(tmp_path / "r.db"), Repository(tmp_path / "r.db")
    first.db.conn.execute("INSERT INTO hosts (host) VALUES ('a:80')")  # no explicit transaction
    assert not first.db.conn.in_transaction  # Python's sqlite3 would hold an implicit one open
    second.db.execute("PRAGMA busy_timeout = 100")
    with second.transaction() as db:
        db.execute("INSERT INTO hosts (host) VALUES ('b:80')")
    assert [r[0] for r in second.db.execute("SELECT host FROM hosts ORDER BY host")] == ["a:80", "b:80"]
    first.close()
    second.close()


def test_a_writer_gives_up_with_a_clear_error_after_its_patience(tmp_path):
    holder, waiter = Repository(tmp_path / "r.db"), Repository(tmp_path / "r.db")
    waiter.db.execute("PRAGMA busy_timeout = 50")
    waiter.busy_patience = 0.3
    holder.db.conn.execute("BEGIN IMMEDIATE")
    with pytest.raises(RepositoryBusy, match="write lock stayed taken"), waiter.transaction():
        pass
    holder.db.conn.execute("ROLLBACK")
    holder.close()
    waiter.close()
