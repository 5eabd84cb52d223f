"""`topicswarm backup`: a copy of a data directory that opens, holds one committed state of the repository
(also while the node writes), and is made whole or not at all."""

from __future__ import annotations

import json
import sqlite3
import stat
from collections import namedtuple

import pytest

import node.backup as backup_module
from crawler.repository import DocumentRecord, Repository, StoredPage
from node.backup import BackupError, back_up
from node.cli import main
from node.datadir import DataDir


def page(i: int) -> StoredPage:
    url = f"http://a.test/{i}"
    return StoredPage(
        DocumentRecord(
            url=url,
            final_url=url,
            host="a.test:80",
            status=200,
            content_type="text/html",
            title=f"page {i}",
            text="backup words " * 100,
            fingerprint=f"fp-{i}",
            simhash=i,
            fetched_at=1.0,
            depth=0,
        )
    )


@pytest.fixture
def data(tmp_path) -> DataDir:
    """A data directory as `topicswarm init` makes it, with 50 stored pages."""
    folder = tmp_path / "node"
    assert main(["init", "--data", str(folder)]) == 0
    data = DataDir(folder)
    with Repository(data.repository) as repo, repo.transaction():
        for i in range(50):
            repo.insert_page(page(i))
    return data


def documents(path) -> int:
    with Repository(path) as repo:
        return repo.document_count()


def test_a_backup_is_a_data_directory_with_the_same_documents_identity_and_token(data, tmp_path):
    target = tmp_path / "copy"
    report = back_up(data, target)
    assert report.documents == 50 and documents(target / "repository.db") == 50
    for name in ("config.toml", "identity.key", "api.token"):
        assert (target / name).read_bytes() == (data.root / name).read_bytes()
    for name in ("identity.key", "api.token"):
        assert stat.S_IMODE((target / name).stat().st_mode) == 0o600
    assert stat.S_IMODE(target.stat().st_mode) == 0o700  # it holds the node's private key
    assert not list(target.glob("*.partial"))


def test_a_backup_taken_while_a_write_is_open_holds_what_was_committed_and_does_not_wait(data, tmp_path):
    with Repository(data.repository) as writer:
        with writer.transaction():  # committed, still in the write-ahead log beside the file
            for i in range(50, 60):
                writer.insert_page(page(i))
        writer.db.execute("BEGIN IMMEDIATE")  # the node in the middle of a batch
        writer.insert_page(page(999))
        back_up(data, tmp_path / "copy")
        writer.db.execute("COMMIT")
    assert documents(tmp_path / "copy" / "repository.db") == 60
    assert documents(data.repository) == 61


def test_a_folder_that_is_not_empty_is_refused_and_left_as_it_was(data, tmp_path):
    target = tmp_path / "busy"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    with pytest.raises(BackupError, match="not empty"):
        back_up(data, target)
    assert [p.name for p in target.iterdir()] == ["notes.txt"]
    with pytest.raises(BackupError, match="data directory itself"):
        back_up(data, data.root)


def test_a_damaged_repository_is_named_and_no_backup_is_left(data, tmp_path):
    with open(data.repository, "r+b") as f:  # a page inside the file overwritten, as a failing disk can
        f.seek(4096 * 3)
        f.write(b"\xff" * 4096 * 2)
    with pytest.raises(BackupError, match="is damaged") as failure:
        back_up(data, tmp_path / "copy")
    assert "topicswarm backup" in str(failure.value)  # the way back: an earlier backup
    assert not (tmp_path / "copy").exists()


def test_a_disk_too_small_is_refused_before_writing(data, tmp_path, monkeypatch):
    Usage = namedtuple("Usage", "total used free")
    monkeypatch.setattr(backup_module.shutil, "disk_usage", lambda _: Usage(10**9, 10**9, 1024))
    with pytest.raises(BackupError, match="not enough space"):
        back_up(data, tmp_path / "copy")
    assert not (tmp_path / "copy").exists()


def test_a_disk_that_fills_during_the_copy_leaves_nothing_behind(data, tmp_path, monkeypatch):
    """SQLite's `max_page_count` on the copy stands in for the disk: past it the write fails with the
    error a full disk gives (SQLITE_FULL)."""
    connect = sqlite3.connect

    def small_disk(path, *args, **kwargs):
        conn = connect(path, *args, **kwargs)
        if str(path).endswith(".partial"):
            conn.execute("PRAGMA max_page_count = 3")
        return conn

    monkeypatch.setattr(backup_module.sqlite3, "connect", small_disk)
    target = tmp_path / "copy"
    target.mkdir()
    with pytest.raises(BackupError, match="not enough space") as failure:
        back_up(data, target)
    assert isinstance(failure.value.__cause__, sqlite3.Error)  # SQLite's own failure, not the space check
    assert target.exists() and not list(target.iterdir())  # the empty folder it was given, still empty


def test_the_command_reports_the_copy_and_how_to_restore_it(data, tmp_path, capsys):
    assert main(["backup", "--data", str(data.root), "--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert "50 documents, checked" in out and "--data " + str(tmp_path / "a") in out
    assert main(["backup", "--data", str(data.root), "--out", str(tmp_path / "b"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["documents"] == 50 and "repository.db" in report["files"]
    assert main(["backup", "--data", str(tmp_path / "none"), "--out", str(tmp_path / "c")]) == 2
    assert "holds no node" in capsys.readouterr().err
