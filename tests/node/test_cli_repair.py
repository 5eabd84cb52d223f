"""`topicswarm repair`: a damaged repository is replaced by one holding every row SQLite could read, the
damaged file is kept beside it unchanged, and a sound repository or a running node's is left alone."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
from contextlib import closing

import pytest

from crawler.repository import Repository
from crawler.salvage import salvage
from node.cli import main
from node.datadir import DataDir
from tests.crawler.test_salvage import damage, digest, filled_repository, pages_of


@pytest.fixture
def data(tmp_path) -> DataDir:
    """A data directory as `topicswarm init` makes it, with 300 stored pages and their links."""
    folder = tmp_path / "node"
    assert main(["init", "--data", str(folder)]) == 0
    filled_repository(DataDir(folder).repository)
    return DataDir(folder)


def integrity(path) -> list[tuple]:
    with closing(sqlite3.connect(path)) as db:
        return db.execute("PRAGMA integrity_check").fetchall()


def test_a_damaged_repository_is_repaired_and_the_damaged_file_kept_aside(data, capsys):
    leaves = pages_of(data.repository, "links", "leaf")
    damage(data.repository, leaves[len(leaves) // 2][0])
    damaged = digest(data.repository)

    assert main(["repair", "--data", str(data.root)]) == 0

    out = capsys.readouterr().out
    assert out.startswith(f"repaired {data.repository} (SQLite found: ")
    assert (
        re.search(r"^  links: \d+ rows kept; lost the rows with ids \d+-\d+$", out, re.MULTILINE)
        and "documents:" not in out
    )
    aside = [p for p in data.root.glob("repository.db.damaged-*") if not p.name.endswith(("-wal", "-shm"))]
    assert len(aside) == 1 and digest(aside[0]) == damaged and aside[0].name in out
    assert integrity(data.repository) == [("ok",)]
    with Repository(data.repository) as repo:  # opens as the node opens it
        assert repo.document_count() == 300
    assert main(["status", "--data", str(data.root)]) == 3  # no node runs; the stored state reads
    assert "300 local" in capsys.readouterr().out


def test_a_sound_repository_is_left_as_it_is(data, capsys):
    before = digest(data.repository)
    assert main(["repair", "--data", str(data.root), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["repaired"] is False and answer["problem"] is None
    assert digest(data.repository) == before
    assert [p.name for p in data.root.iterdir() if "damaged" in p.name or "repairing" in p.name] == []


def test_the_json_report_names_the_losses_and_the_damaged_copy(data, capsys):
    damage(data.repository, pages_of(data.repository, "documents", "leaf")[0][0])
    assert main(["repair", "--data", str(data.root), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    documents = next(t for t in answer["tables"] if t["table"] == "documents")
    assert answer["repaired"] is True and answer["intact"] is False
    lost = documents["unreadable_rows"] + len(documents["unreadable_stretches"])
    assert lost and 0 < documents["kept"] < 300
    assert os.path.exists(answer["damaged_copy"])


def test_a_running_nodes_repository_is_not_touched(data, capsys):
    data.api_address.write_text(json.dumps({"url": "http://127.0.0.1:9", "pid": os.getpid()}))
    damage(data.repository, pages_of(data.repository, "links", "leaf")[0][0])
    before = digest(data.repository)
    assert main(["repair", "--data", str(data.root)]) == 2
    assert "stop it first" in capsys.readouterr().err
    assert digest(data.repository) == before


def test_a_data_directory_without_a_repository_has_nothing_to_repair(tmp_path, capsys):
    folder = tmp_path / "fresh"
    assert main(["init", "--data", str(folder)]) == 0
    assert main(["repair", "--data", str(folder)]) == 2
    assert "nothing to repair" in capsys.readouterr().err


def test_a_repair_stopped_between_moving_the_damaged_file_and_its_copy_is_finished(data, capsys):
    damage(data.repository, pages_of(data.repository, "links", "leaf")[0][0])
    salvaged = data.repository.with_name("repository.db.repairing")
    salvage(data.repository, salvaged)
    data.repository.replace(data.repository.with_name("repository.db.damaged-20261124-000000"))
    assert main(["repair", "--data", str(data.root)]) == 0
    assert "finished a repair" in capsys.readouterr().err
    assert integrity(data.repository) == [("ok",)] and not salvaged.exists()


@pytest.mark.parametrize(
    "command", [["search", "vacuum"], ["show", "5"], ["export", "--format", "jsonl", "--out", "OUT"]]
)
def test_a_command_meeting_a_damaged_page_names_the_repair_without_a_traceback(data, capsys, command):
    damage(data.repository, pages_of(data.repository, "documents", "internal")[0][0])
    out = data.root.parent / "export.jsonl"
    argv = [str(out) if arg == "OUT" else arg for arg in command]
    assert main([*argv, "--data", str(data.root)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"topicswarm: {data.repository} is damaged (SQLite said: ")
    assert f"run `topicswarm repair --data {data.root}`" in err and "stop the node" not in err
    assert not out.exists()


def test_a_disk_without_room_for_the_copy_is_said_before_anything_is_written(data, capsys, monkeypatch):
    damage(data.repository, pages_of(data.repository, "links", "leaf")[0][0])
    before = digest(data.repository)
    usage = shutil.disk_usage(data.root)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage._replace(free=1024))
    assert main(["repair", "--data", str(data.root)]) == 2
    assert "MB are free; free some space" in capsys.readouterr().err
    assert digest(data.repository) == before
    assert [p.name for p in data.root.glob("repository.db.*")] == []  # no copy, nothing moved aside


def test_crawled_pages_whose_rows_were_lost_are_queued_to_be_fetched_again(data, capsys):
    with closing(sqlite3.connect(data.repository)) as db, db:
        urls = [row[0] for row in db.execute("SELECT url FROM documents")]
        db.executemany(
            "INSERT INTO frontier (url, host, priority, depth, state) VALUES (?, 'db.test:80', 1.0, 1, 1)",
            [(url,) for url in urls],
        )
        db.execute("UPDATE frontier SET state = 2, error = 'gone' WHERE url = ?", [urls[0]])
    damage(data.repository, pages_of(data.repository, "documents", "leaf")[0][0])

    assert main(["repair", "--data", str(data.root), "--json"]) == 0

    answer = json.loads(capsys.readouterr().out)
    with closing(sqlite3.connect(data.repository)) as db:
        kept = {row[0] for row in db.execute("SELECT url FROM documents")}
        queued = {row[0] for row in db.execute("SELECT url FROM frontier WHERE state = 0")}
        failed = {row[0] for row in db.execute("SELECT url FROM frontier WHERE state = 2")}
    assert queued == set(urls) - kept - {urls[0]} and answer["requeued"] == len(queued) > 0
    assert failed == {urls[0]}  # a page its server said is gone stays failed
