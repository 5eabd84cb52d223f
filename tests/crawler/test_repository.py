"""The repository: WAL, atomic batches, FTS kept in sync, schema versions, a place for other tables."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from crawler.errors import RepositoryError
from crawler.repository import DocumentRecord, LinkRecord, Repository, StoredPage
from crawler.repository_faults import open_failure


def doc(url: str, text: str = "some text", **kw) -> DocumentRecord:
    values = dict(
        url=url,
        final_url=url,
        host="a:80",
        status=200,
        content_type="text/html",
        title="T",
        text=text,
        fingerprint=f"fp-{url}",
        simhash=(1 << 64) - 5,
        fetched_at=1.0,
        depth=0,
    )
    values.update(kw)
    return DocumentRecord(**values)


def test_repository_uses_wal_and_survives_reopening(tmp_path):
    path = tmp_path / "repo.db"
    with Repository(path) as repo:
        assert repo.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        with repo.transaction():
            doc_id = repo.insert_page(
                StoredPage(doc("http://a/1"), (LinkRecord("http://a/2", "a:80", "next"),))
            )
    with Repository(path) as repo:
        stored = repo.document(doc_id)
        assert stored["url"] == "http://a/1"
        assert stored["simhash"] == (1 << 64) - 5  # all 64 bits survive SQLite's signed integers
        assert [link["target_url"] for link in repo.links_of(doc_id)] == ["http://a/2"]
        assert repo.hosts()[0]["pages"] == 1


def test_a_failed_batch_stores_nothing(tmp_path):
    with Repository(tmp_path / "repo.db") as repo:
        with pytest.raises(RuntimeError), repo.transaction():
            repo.insert_page(StoredPage(doc("http://a/1")))
            raise RuntimeError("crash mid-batch")
        assert repo.document_count() == 0


def test_fts_index_follows_inserts_and_deletes(tmp_path):
    with Repository(tmp_path / "repo.db") as repo:
        with repo.transaction():
            doc_id = repo.insert_page(StoredPage(doc("http://a/1", text="the postgres vacuum process")))
        match = "SELECT rowid FROM documents_fts WHERE documents_fts MATCH ?"
        assert repo.db.execute(match, ["vacuuming"]).fetchall() == [(doc_id,)]  # porter stemming
        with repo.transaction():
            repo.db.execute("DELETE FROM documents WHERE id = ?", [doc_id])
        assert repo.db.execute(match, ["vacuum"]).fetchall() == []


def test_storing_the_same_url_twice_keeps_the_first(tmp_path):
    with Repository(tmp_path / "repo.db") as repo, repo.transaction():
        first = repo.insert_page(StoredPage(doc("http://a/1", text="first")))
        second = repo.insert_page(StoredPage(doc("http://a/1", text="second")))
    assert first == second
    with Repository(tmp_path / "repo.db") as repo:
        assert repo.document(first)["text"] == "first"


def pool(repo: Repository, url: str, peer: str = "peerA") -> int:
    """A peer's result as the cooperation layer stores it: a preview, no links, the peer as origin."""
    with repo.transaction() as db:
        cursor = db.conn.execute(
            "INSERT INTO documents (url, final_url, host, status, content_type, title, text, fingerprint, "
            "fetched_at, topic, confidence, accepted, verdict, origin, origins) "
            "VALUES (?, ?, 'a:80', 200, 'text/html', 'T', 'a preview', 'fp-peer', 1.0, 'Peers', 0.9, 1, "
            "'accepted', ?, ?)",
            [url, url, peer, f'["{peer}"]'],
        )
    return int(cursor.lastrowid)


def test_crawling_a_page_a_peer_pooled_makes_it_the_nodes_own_with_its_text_and_links(tmp_path):
    with Repository(tmp_path / "repo.db") as repo:
        pooled = pool(repo, "http://a/1")
        crawled = StoredPage(
            doc("http://a/1", text="the full vacuum text", topic="Databases", confidence=0.4),
            (LinkRecord("http://a/2", "a:80", "next"),),
            doc_id=pooled + 5,
        )
        with repo.transaction():
            doc_id = repo.insert_page(crawled)
        assert doc_id == pooled + 5  # the id the crawler chose: its duplicate index and result sync use it
        assert repo.document_count() == 1
        stored = repo.document(doc_id)
        assert (stored["origin"], stored["text"], stored["topic"], stored["verdict"]) == (
            None,
            "the full vacuum text",
            "Databases",
            None,
        )
        assert stored["origins"] == ["peerA"]  # the peer that sent it is remembered
        assert [link["target_url"] for link in repo.links_of(doc_id)] == ["http://a/2"]
        match = "SELECT rowid FROM documents_fts WHERE documents_fts MATCH ?"
        assert repo.db.execute(match, ["vacuum"]).fetchall() == [(doc_id,)]
        assert repo.db.execute(match, ["preview"]).fetchall() == []
        assert repo.fingerprints(10) == [(doc_id, "fp-http://a/1", (1 << 64) - 5)]


def test_a_pooled_page_keeps_its_id_when_the_crawlers_id_is_taken(tmp_path):
    with Repository(tmp_path / "repo.db") as repo:
        pooled = pool(repo, "http://a/1")
        other = pool(repo, "http://a/9", peer="peerB")
        with repo.transaction():
            doc_id = repo.insert_page(StoredPage(doc("http://a/1", text="own"), doc_id=other))
        assert doc_id == pooled
        assert repo.document(pooled)["origin"] is None and repo.document(other)["origin"] == "peerB"


def test_dedup_warm_up_leaves_peers_pooled_results_out(tmp_path):
    with Repository(tmp_path / "repo.db") as repo:
        pool(repo, "http://a/1")
        with repo.transaction():
            own = repo.insert_page(StoredPage(doc("http://a/2")))
        assert [row[0] for row in repo.fingerprints(10)] == [own]


def test_other_components_add_versioned_tables(tmp_path):
    def v1(db):
        db.execute("CREATE TABLE topics (key TEXT PRIMARY KEY)")

    def v2(db):
        db.execute("ALTER TABLE topics ADD COLUMN label TEXT")

    with Repository(tmp_path / "repo.db") as repo:
        assert repo.migrate("topics", [v1]) == 1
        assert repo.migrate("topics", [v1, v2]) == 2
        assert repo.migrate("topics", [v1, v2]) == 2  # applied once only
        assert "label" in repo.db["topics"].columns_dict
        with pytest.raises(RepositoryError, match="newer"):
            repo.migrate("topics", [v1])


def test_a_file_that_is_not_a_database_gets_a_clear_error(tmp_path):
    path = tmp_path / "repo.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises((RepositoryError, sqlite3.DatabaseError)):
        Repository(path)


def test_dedup_index_warm_up_lists_originals_oldest_first(tmp_path):
    with Repository(tmp_path / "repo.db") as repo:
        with repo.transaction():
            a = repo.insert_page(StoredPage(doc("http://a/1")))
            repo.insert_page(StoredPage(doc("http://a/2", duplicate_of=a)))
            c = repo.insert_page(StoredPage(doc("http://a/3", simhash=7)))
        assert repo.fingerprints(10) == [(a, "fp-http://a/1", (1 << 64) - 5), (c, "fp-http://a/3", 7)]


def test_a_batch_that_reads_before_writing_waits_for_another_writer_instead_of_failing(tmp_path):
    first, second = Repository(tmp_path / "r.db"), Repository(tmp_path / "r.db")
    first.db.execute("CREATE TABLE marks (who TEXT)")
    errors: list[BaseException] = []

    def other_writer() -> None:
        try:
            with second.transaction() as db:
                db.execute("INSERT INTO marks VALUES ('second')")
        except BaseException as exc:  # reported below
            errors.append(exc)

    with first.transaction() as db:
        db.execute("SELECT count(*) FROM marks").fetchone()  # a read first, as insert_page does
        writer = threading.Thread(target=other_writer)
        writer.start()
        writer.join(timeout=0.5)  # a deferred batch let it commit here, and failed on its own write
        db.execute("INSERT INTO marks VALUES ('first')")
    writer.join(timeout=30)
    assert not errors
    assert sorted(r[0] for r in first.db.execute("SELECT who FROM marks")) == ["first", "second"]
    first.close()
    second.close()


def test_a_repository_that_cannot_write_its_journal_is_named_as_such_not_as_a_foreign_file(tmp_path):
    io_error = sqlite3.OperationalError("disk I/O error")
    io_error.sqlite_errorcode = sqlite3.SQLITE_IOERR_WRITE  # what a full disk gives when SQLite opens the WAL
    message = open_failure(tmp_path / "repository.db", io_error)
    assert "could not write beside it" in message and "MB free" in message and "free some space" in message
    foreign = sqlite3.DatabaseError("file is not a database")
    foreign.sqlite_errorcode = sqlite3.SQLITE_NOTADB
    assert "is not a topicswarm repository" in open_failure(tmp_path / "repository.db", foreign)
    (tmp_path / "other.db").write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(RepositoryError, match="is not a topicswarm repository"):
        Repository(tmp_path / "other.db")


def test_a_damaged_repository_is_named_as_damaged_with_the_way_back(tmp_path):
    path = tmp_path / "repository.db"
    with Repository(path) as repo, repo.transaction():
        for i in range(200):
            repo.insert_page(StoredPage(doc(f"http://a/{i}", text="words " * 200)))
    with open(path, "r+b") as f:  # the pages after the header overwritten, as a failing disk can
        f.seek(4096)
        f.write(b"\x07" * 4096 * 20)
    with pytest.raises(RepositoryError) as failure:
        Repository(path)
    message = str(failure.value)
    assert "is damaged" in message and "not a topicswarm repository" not in message
    assert "topicswarm repair --data" in message and "topicswarm backup" in message


def test_crawl_statistics_keep_only_the_newest_rows(tmp_path, monkeypatch):
    import crawler.repository

    monkeypatch.setattr(crawler.repository, "CRAWL_STATS_KEEP", 3)
    row = {"at": 0.0, "pages": 0, "pages_per_s": 0.0, "bytes": 0, "frontier_size": 0, "in_flight": 0}
    row |= {"duplicates": 0, "errors": 0, "errors_by_kind": {}}
    with Repository(tmp_path / "r.db") as repo:
        for pages in range(5):
            with repo.transaction():
                repo.record_stats({**row, "pages": pages})
        kept = [r[0] for r in repo.db.execute("SELECT pages FROM crawl_stats ORDER BY id")]
    assert kept == [2, 3, 4]
