"""Salvaging a damaged repository: every row on a sound page is kept exactly, what sits on a damaged page
is counted as lost, the search index is rebuilt, and the damaged file is never changed."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from crawler.repository import LinkRecord, Repository, StoredPage
from crawler.salvage import SalvageError, read_only, salvage
from tests.crawler.test_repository import doc

WORDS = ["vacuum", "index", "query", "planner", "tuple", "btree", "checkpoint", "replica"]


def document(n: int, long_text: bool = False) -> StoredPage:
    text = " ".join(WORDS[(n + i) % len(WORDS)] for i in range(40)) + f" unique{n}"
    if long_text:
        text += " filler" * 3000  # well past a 4 KB page: the text continues on overflow pages
    record = doc(f"http://db.test/page{n}.html", text, title=f"Page {n}", simhash=n, fetched_at=1.0 + n)
    targets = [f"http://db.test/page{n + k}.html" for k in range(1, 6)]
    links = tuple(LinkRecord(url, "db.test:80", "next") for url in targets)
    return StoredPage(record, links=links)


def filled_repository(path: Path, count: int = 300, long_at: int | None = None) -> Path:
    with Repository(path) as repo:
        for n in range(count):
            repo.insert_page(document(n, long_text=n == long_at))
    with closing(sqlite3.connect(path)) as db:  # everything in the main file, as after a clean stop
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


def pages_of(path: Path, table: str, kind: str) -> list[tuple[int, int]]:
    """(page number, cells) of the table's pages of one kind, from SQLite's own page statistics."""
    with closing(sqlite3.connect(path)) as db:
        try:
            rows = db.execute(
                "SELECT pageno, ncell FROM dbstat WHERE name = ? AND pagetype = ? ORDER BY pageno",
                [table, kind],
            ).fetchall()
        except sqlite3.OperationalError:
            pytest.skip("this SQLite lacks the dbstat table that finds a table's pages")
    return rows


def damage(path: Path, page: int) -> None:
    with closing(sqlite3.connect(path)) as db:
        size = db.execute("PRAGMA page_size").fetchone()[0]
    with open(path, "r+b") as f:
        f.seek(size * (page - 1))
        f.write(b"\xde\xad\xbe\xef" * (size // 4))


def rows(path: Path, sql: str) -> list[tuple]:
    with closing(read_only(path)) as db:
        return db.execute(sql).fetchall()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_damaged_leaf_loses_only_the_rows_it_held_and_every_other_row_is_kept_exactly(tmp_path):
    source = filled_repository(tmp_path / "repository.db")
    before_docs = rows(source, "SELECT id, url, title, text FROM documents ORDER BY id")
    before_links = rows(source, "SELECT rowid, source_id, target_url FROM links ORDER BY rowid")
    leaves = pages_of(source, "links", "leaf")
    page, cells = leaves[len(leaves) // 2]
    damage(source, page)
    with pytest.raises(sqlite3.DatabaseError):
        rows(source, "SELECT * FROM links")
    damaged_digest = digest(source)

    report = salvage(source, tmp_path / "salvaged.db")

    target = tmp_path / "salvaged.db"
    assert digest(source) == damaged_digest
    assert rows(target, "PRAGMA integrity_check") == [("ok",)]
    assert rows(target, "SELECT id, url, title, text FROM documents ORDER BY id") == before_docs
    kept = rows(target, "SELECT rowid, source_id, target_url FROM links ORDER BY rowid")
    assert set(kept) < set(before_links)
    assert 0 < len(before_links) - len(kept) <= cells + 1
    links = next(t for t in report.tables if t.name == "links")
    assert links.kept == len(kept) and len(links.unreadable_stretches) == 1 and not report.intact
    assert all(t.intact for t in report.tables if t.name != "links")


def test_a_damaged_overflow_page_loses_the_one_row_whose_text_ran_onto_it(tmp_path):
    source = filled_repository(tmp_path / "repository.db", count=60, long_at=17)
    before = rows(source, "SELECT id, url, text FROM documents ORDER BY id")
    overflow = pages_of(source, "documents", "overflow")
    damage(source, overflow[0][0])

    report = salvage(source, tmp_path / "salvaged.db")

    kept = rows(tmp_path / "salvaged.db", "SELECT id, url, text FROM documents ORDER BY id")
    assert [row[1] for row in before if row not in kept] == ["http://db.test/page17.html"]
    assert len(kept) == len(before) - 1
    documents = next(t for t in report.tables if t.name == "documents")
    assert documents.unreadable_rows == 1 and not documents.unreadable_stretches


def test_the_search_index_is_rebuilt_from_the_rows_kept_and_writes_keep_it_current(tmp_path):
    source = filled_repository(tmp_path / "repository.db")
    leaves = pages_of(source, "documents_fts_data", "leaf")
    damage(source, leaves[0][0])  # the full-text index itself: nothing of the documents is lost

    report = salvage(source, tmp_path / "salvaged.db")

    assert "documents_fts" in report.rebuilt
    assert next(t for t in report.tables if t.name == "documents").intact
    with Repository(tmp_path / "salvaged.db") as repo:
        hits = repo.db.execute(
            "SELECT rowid FROM documents_fts WHERE documents_fts MATCH 'unique42'"
        ).fetchall()
        assert [h[0] for h in hits] == [43]
        repo.insert_page(document(1000))  # the triggers came back with the schema
        added = repo.db.execute("SELECT rowid FROM documents_fts WHERE documents_fts MATCH 'unique1000'")
        assert len(added.fetchall()) == 1


def test_a_sound_database_is_copied_whole(tmp_path):
    source = filled_repository(tmp_path / "repository.db", count=50)
    report = salvage(source, tmp_path / "copy.db")
    assert report.intact
    for table in ("documents", "links", "hosts", "schema_versions"):
        assert rows(tmp_path / "copy.db", f"SELECT rowid, * FROM {table} ORDER BY rowid") == rows(
            source, f"SELECT rowid, * FROM {table} ORDER BY rowid"
        )
    assert rows(tmp_path / "copy.db", "PRAGMA user_version") == rows(source, "PRAGMA user_version")


def test_an_unreadable_schema_or_a_taken_target_is_refused_and_leaves_no_copy(tmp_path):
    source = filled_repository(tmp_path / "repository.db", count=20)
    taken = tmp_path / "taken.db"
    taken.write_bytes(b"mine")
    with pytest.raises(SalvageError, match="exists already"):
        salvage(source, taken)
    assert taken.read_bytes() == b"mine"
    damage(source, 1)  # the header and the schema
    with pytest.raises(SalvageError):
        salvage(source, tmp_path / "salvaged.db")
    assert not (tmp_path / "salvaged.db").exists()
    with pytest.raises(SalvageError, match="does not exist"):
        salvage(tmp_path / "absent.db", tmp_path / "other.db")


def test_a_truncated_file_keeps_the_rows_before_its_end(tmp_path):
    source = filled_repository(tmp_path / "repository.db", count=600)
    with closing(sqlite3.connect(source)) as db:
        size = db.execute("PRAGMA page_size").fetchone()[0]
    pages = source.stat().st_size // size
    os.truncate(source, size * (pages * 4 // 5))  # a copy that stopped at four fifths

    report = salvage(source, tmp_path / "salvaged.db")

    target = tmp_path / "salvaged.db"
    assert rows(target, "PRAGMA integrity_check") == [("ok",)]
    kept = rows(target, "SELECT count(*) FROM documents")[0][0]
    assert 0 < kept < 600
    assert any(upto is None for t in report.tables for _, upto in t.unreadable_stretches)
