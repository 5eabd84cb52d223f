"""A consistent copy of a node's data directory, taken while the node runs.

Copying `repository.db` with `cp` while a node writes can catch half a transaction, and misses what still
sits in its write-ahead log. SQLite's online backup reads one committed snapshot instead; in WAL mode that
read does not hold the node's writes up. The copy is checked (`PRAGMA quick_check`) before it takes the
repository's name, so a backup that exists is one that opens. The target becomes a data directory of its
own: the node's identity, token, config and neighbour lists beside the repository.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from crawler.repository_faults import damaged, is_damaged, is_disk_full
from node.datadir import DataDir

# What a restored node needs besides its repository (logs and the running node's api.json are not).
SMALL_FILES = ("config", "identity", "api_token", "known_peers", "blocked_peers")


class BackupError(Exception):
    """A backup that could not be made; nothing of it is left behind and the source is untouched."""


@dataclass(frozen=True)
class BackupReport:
    source: Path
    target: Path
    files: list[str]  # names copied into the target, the repository last
    repository_bytes: int | None  # None: the source had no repository yet
    documents: int | None

    def to_json(self) -> dict[str, object]:
        return {
            "source": str(self.source),
            "target": str(self.target),
            "files": self.files,
            "repository_bytes": self.repository_bytes,
            "documents": self.documents,
        }


def back_up(source: DataDir, target: Path) -> BackupReport:
    """Copy the data directory `source` into `target`, a new or empty folder (made 0700: it holds the
    node's private key). On any failure the target is removed again, or emptied if it was there before."""
    if not (source.config.exists() or source.repository.exists()):
        raise BackupError(f"{source.root} holds no node (no config.toml, no repository.db): check --data")
    if target.resolve() == source.root.resolve():
        raise BackupError(f"{target} is the data directory itself: back up into another folder")
    made = _claim(target)
    try:
        files = [_copy_file(path, target) for path in _small_files(source)]
        size = documents = None
        if source.repository.exists():
            size, documents = copy_repository(source.repository, DataDir(target).repository)
            files.append(source.repository.name)
    except BaseException:
        _release(target, made)
        raise
    return BackupReport(source.root, target, files, size, documents)


def copy_repository(source: Path, target: Path) -> tuple[int, int | None]:
    """SQLite's online backup of `source` into `target`, checked; returns (bytes, documents)."""
    needed = source.stat().st_size + _size(source.with_name(source.name + "-wal"))
    free = shutil.disk_usage(target.parent).free
    if free < needed:
        raise BackupError(_full_disk(target, needed, free))
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    try:
        documents = _snapshot(source, partial)
        os.replace(partial, target)
    except sqlite3.Error as exc:
        if is_disk_full(exc):
            raise BackupError(_full_disk(target, needed, shutil.disk_usage(target.parent).free)) from exc
        if is_damaged(exc):
            raise BackupError(damaged(source, f"SQLite said: {exc}")) from exc
        raise BackupError(f"{source} could not be read: {exc}") from exc
    finally:
        partial.unlink(missing_ok=True)
    return target.stat().st_size, documents


def _snapshot(source: Path, partial: Path) -> int | None:
    """Back up into `partial` in one step (one read transaction: a single committed state) and check it."""
    reading = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=30.0)
    with closing(reading) as reader, closing(sqlite3.connect(str(partial))) as writer:
        reader.backup(writer)
        problems = [" ".join(str(row[0]).split()) for row in writer.execute("PRAGMA quick_check")]
        if problems != ["ok"]:
            raise BackupError(damaged(source, f"SQLite's check: {'; '.join(problems[:3])}"))
        return _documents(writer)


def _documents(conn: sqlite3.Connection) -> int | None:
    has_table = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'documents'")
    if has_table.fetchone() is None:
        return None
    return int(conn.execute("SELECT count(*) FROM documents").fetchone()[0])


def _small_files(source: DataDir) -> list[Path]:
    return [path for path in (getattr(source, name) for name in SMALL_FILES) if path.exists()]


def _copy_file(path: Path, folder: Path) -> str:
    """Copy with its mode (the key and the token stay 0600); ENOSPC and the like name the file."""
    try:
        shutil.copy2(path, folder / path.name)
    except OSError as exc:
        if is_disk_full(exc):
            raise BackupError(f"the disk of {folder} is full: free some space and back up again") from exc
        raise
    return path.name


def _claim(target: Path) -> bool:
    """Make the target folder (True) or take an empty one that exists (False)."""
    if target.exists():
        if not target.is_dir():
            raise BackupError(f"{target} is a file: back up into a new or empty folder")
        if any(target.iterdir()):
            raise BackupError(f"{target} is not empty: back up into a new or empty folder")
        return False
    try:
        target.mkdir(parents=True, mode=0o700)
    except OSError as exc:
        raise BackupError(f"cannot make {target}: {exc.strerror}") from exc
    return True


def _release(target: Path, made: bool) -> None:
    if made:
        shutil.rmtree(target, ignore_errors=True)
        return
    for path in target.iterdir():
        path.unlink(missing_ok=True)


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def _full_disk(target: Path, needed: int, free: int) -> str:
    return (
        f"not enough space for the backup in {target.parent}: it needs about {needed / 2**20:.0f} MB, "
        f"{free / 2**20:.0f} MB are free"
    )
