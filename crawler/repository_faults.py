"""What a failed SQLite call says about the repository file (damaged, on a full disk, locked by another
connection), and what to tell the user about it.
"""

from __future__ import annotations

import errno
import shutil
import sqlite3
from pathlib import Path

from crawler.errors import RepositoryFull


def is_damaged(exc: BaseException) -> bool:
    """SQLITE_CORRUPT or SQLITE_NOTADB: the file is no longer a sound database (a failing disk, a write
    from outside SQLite), as opposed to one SQLite cannot reach or write."""
    code = getattr(exc, "sqlite_errorcode", None) if isinstance(exc, sqlite3.DatabaseError) else None
    return code is not None and code & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def is_disk_full(exc: BaseException) -> bool:
    """SQLITE_FULL from the sqlite3 module (extended codes too), or ENOSPC from the operating system."""
    if isinstance(exc, RepositoryFull):
        return True
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        if code is not None:
            return code & 0xFF == sqlite3.SQLITE_FULL
        return "disk is full" in str(exc)
    return isinstance(exc, OSError) and exc.errno == errno.ENOSPC


def is_busy(exc: sqlite3.OperationalError) -> bool:
    """SQLITE_BUSY or SQLITE_LOCKED (and their extended codes) as raised by the sqlite3 module."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)


def open_failure(path: Path, exc: sqlite3.DatabaseError) -> str:
    """Why a repository file would not open: a file that is no database, or a folder SQLite cannot write
    its journal to (a full disk gives "disk I/O error" there, not SQLITE_FULL)."""
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    if is_disk_full(exc) or code in (sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY):
        free = shutil.disk_usage(path.parent).free / 2**20
        return (
            f"cannot open the repository at {path}: SQLite could not write beside it ({exc}; {free:.0f} MB "
            "free on that disk): free some space, or make the folder writable"
        )
    if code == sqlite3.SQLITE_CORRUPT:  # NOTADB too is_damaged, but at opening it is a foreign file
        return damaged(path, f"SQLite said: {exc}")
    return f"{path} is not a topicswarm repository (SQLite said: {exc})"


def damaged(repository: Path, why: str, node_stopped: bool = False) -> str:
    """A repository SQLite finds damaged (`why`: what SQLite said), and the user's way back."""
    repair = (
        f"run `topicswarm repair --data {repository.parent}`: it keeps every row SQLite can still read, "
        f"and the damaged file beside it (or put the {repository.name} of your last `topicswarm backup` "
        "in its place)"
    )
    then = repair if node_stopped else f"stop the node, then {repair}"
    return f"{repository} is damaged ({why}): {then}"
