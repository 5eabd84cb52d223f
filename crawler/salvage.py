"""Salvage a damaged repository: every row SQLite can still read, copied into a new, sound database.

A failing disk or a write from outside SQLite leaves a page or two of `repository.db` unreadable, and SQLite
then refuses any statement that reaches them ("database disk image is malformed"). The rest of the file is
usually intact, so starting over from an empty repository would throw away thousands of good pages for a
few bad ones. This reads each table in rowid order and steps over what it cannot read: a row whose text
sits on a damaged overflow page is lost alone, a damaged leaf loses its stretch of rowids, found again
by probing further ahead (`_step_over`). The schema is recreated as the damaged file states it; full-text
indexes over a table (FTS5 with `content=`) are rebuilt from the rows kept, and ordinary indexes and
triggers built afresh, so damage in them costs nothing. The damaged file is only read (opened read-only),
never changed.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

SIDE_FILES = ("-wal", "-shm", "-journal")
"""The files SQLite keeps beside a database: its write-ahead log, the log's index, a rollback journal."""

BATCH = 200
"""Rows read per statement while nothing is damaged."""

_FIRST_ROWID = -(2**63)
_LAST_ROWID = 2**63 - 1
_WITHOUT_ROWID = re.compile(r"\)\s*WITHOUT\s+ROWID\s*$", re.IGNORECASE)
_VIRTUAL = re.compile(r"^\s*CREATE\s+VIRTUAL\s+TABLE", re.IGNORECASE)
_EXTERNAL_FTS5 = re.compile(r"\bUSING\s+fts5\b.*\bcontent\s*=\s*['\"]?\w", re.IGNORECASE | re.DOTALL)


class SalvageError(Exception):
    """Nothing could be salvaged (the file's schema is unreadable, or the copy could not be written); the
    copy is removed and the damaged file is as it was."""


@dataclass
class TableSalvage:
    name: str
    kept: int = 0
    unreadable_rows: int = 0  # rows whose rowid was read but not their columns
    # rowids (after, up to] that could not be read; None: from the first row, to the last
    unreadable_stretches: list[tuple[int | None, int | None]] = field(default_factory=list)
    invalid: int = 0  # rows read but refused by the table's constraints (damage that still parsed)
    unread_tail: bool = False  # a table without rowids stops at its first unreadable row

    @property
    def intact(self) -> bool:
        return not (self.unreadable_rows or self.unreadable_stretches or self.invalid or self.unread_tail)

    def to_json(self) -> dict[str, object]:
        return {
            "table": self.name,
            "kept": self.kept,
            "unreadable_rows": self.unreadable_rows,
            "unreadable_stretches": [list(s) for s in self.unreadable_stretches],
            "invalid": self.invalid,
            "unread_tail": self.unread_tail,
        }


@dataclass
class SalvageReport:
    source: Path
    target: Path
    tables: list[TableSalvage]
    rebuilt: list[str]  # indexes, full-text indexes and triggers built afresh

    @property
    def intact(self) -> bool:
        return all(t.intact for t in self.tables)

    def to_json(self) -> dict[str, object]:
        return {
            "source": str(self.source),
            "target": str(self.target),
            "intact": self.intact,
            "tables": [t.to_json() for t in self.tables],
            "rebuilt": self.rebuilt,
        }


@dataclass(frozen=True)
class _SchemaEntry:
    kind: str  # table, index, trigger, view
    name: str
    sql: str


def salvage(source: Path, target: Path) -> SalvageReport:
    """Copy every readable row of the SQLite database `source` into a new database at `target` (which
    must not exist). On failure `target` is removed and SalvageError says why."""
    if target.exists():
        raise SalvageError(f"{target} exists already: move it away first")
    try:
        with closing(_open_read_only(source)) as old, closing(sqlite3.connect(target)) as new:
            new.isolation_level = None
            report = _copy(old, new, source, target)
            problems = [row[0] for row in new.execute("PRAGMA integrity_check").fetchall()]
            if problems != ["ok"]:
                raise SalvageError(f"the salvaged copy fails SQLite's check: {'; '.join(problems[:3])}")
        return report
    except sqlite3.Error as exc:
        remove_database(target)
        raise SalvageError(f"could not salvage {source} into {target}: {exc}") from exc
    except BaseException:
        remove_database(target)
        raise


def read_only(path: Path) -> sqlite3.Connection:
    """A connection that can only read the database at `path` (it never changes the file)."""
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)


def integrity_problem(path: Path) -> str | None:
    """What SQLite's integrity check finds first in the database at `path`, or None for a sound file."""
    try:
        with closing(read_only(path)) as conn:
            found = [row[0] for row in conn.execute("PRAGMA integrity_check(1)").fetchall()]
    except sqlite3.DatabaseError as exc:
        return str(exc)
    return None if found == ["ok"] else " ".join(found[0].replace("*** in database main ***", "").split())


def _open_read_only(path: Path) -> sqlite3.Connection:
    """The damaged file, read-only; `writable_schema` lets SQLite read a schema it would otherwise refuse
    whole (a truncated file whose schema names pages past its end), so the tables it can reach are read."""
    if not path.is_file():
        raise SalvageError(f"{path} does not exist")
    conn = read_only(path)
    conn.execute("PRAGMA writable_schema=ON")
    return conn


def remove_database(path: Path) -> None:
    """The database file at `path` and the files SQLite keeps beside it (`SIDE_FILES`), if there."""
    for suffix in ("", *SIDE_FILES):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


def _copy(old: sqlite3.Connection, new: sqlite3.Connection, source: Path, target: Path) -> SalvageReport:
    try:
        entries = [
            _SchemaEntry(kind, name, sql)
            for kind, name, sql in old.execute("SELECT type, name, sql FROM sqlite_master ORDER BY rowid")
            if sql is not None
        ]
    except sqlite3.DatabaseError as exc:
        raise SalvageError(
            f"the schema of {source} cannot be read, so no table can be found ({exc})"
        ) from exc
    tables = [e for e in entries if e.kind == "table" and not e.name.startswith("sqlite_")]
    virtual = [e for e in tables if _VIRTUAL.match(e.sql)]
    indexes = [e for e in virtual if _EXTERNAL_FTS5.search(e.sql)]  # rebuilt from their content table
    others = [e for e in virtual if e not in indexes]  # made first; their own tables' rows are copied
    skipped = tuple(f"{v.name}_" for v in indexes)
    made_by = tuple(f"{v.name}_" for v in others)
    plain = [e for e in tables if e not in virtual and not e.name.startswith(skipped)]
    for pragma in ("page_size", "user_version", "application_id"):
        new.execute(f"PRAGMA {pragma}={int(old.execute(f'PRAGMA {pragma}').fetchone()[0])}")
    for entry in others:
        new.execute(entry.sql)
    salvaged = []
    for entry in plain:
        if not entry.name.startswith(made_by):
            new.execute(entry.sql)
        salvaged.append(_copy_table(old, new, entry))
    _copy_sequences(old, new)
    rebuilt = []
    for entry in indexes:
        new.execute(entry.sql)
        new.execute(f'INSERT INTO "{entry.name}"("{entry.name}") VALUES (\'rebuild\')')
        rebuilt.append(entry.name)
    for entry in entries:
        if entry.kind in ("index", "trigger", "view"):
            new.execute(entry.sql)
            rebuilt.append(entry.name)
    return SalvageReport(source, target, salvaged, rebuilt)


def _copy_table(old: sqlite3.Connection, new: sqlite3.Connection, entry: _SchemaEntry) -> TableSalvage:
    result = TableSalvage(entry.name)
    columns = _stored_columns(new, entry.name)
    without_rowid = bool(_WITHOUT_ROWID.search(entry.sql))
    keep_rowid = not without_rowid and not _has_rowid_alias(new, entry.name)
    names = (["rowid"] if keep_rowid else []) + columns
    quoted = ", ".join(f'"{c}"' for c in names)
    insert = f'INSERT OR IGNORE INTO "{entry.name}" ({quoted}) VALUES ({", ".join("?" * len(names))})'
    if without_rowid:
        rows = _rows_without_rowid(old, entry.name, columns, result)
    else:
        rows = _rows_by_rowid(old, entry.name, columns, keep_rowid, result)
    new.execute("BEGIN")
    for batch in rows:
        before = new.total_changes
        new.executemany(insert, batch)
        added = new.total_changes - before
        result.kept += added
        result.invalid += len(batch) - added
    new.execute("COMMIT")
    return result


def _stored_columns(conn: sqlite3.Connection, table: str) -> list[str]:
    """The columns a row is inserted with: hidden and generated ones are left out (SQLite computes them)."""
    return [row[1] for row in conn.execute(f'PRAGMA table_xinfo("{table}")') if row[6] == 0]


def _has_rowid_alias(conn: sqlite3.Connection, table: str) -> bool:
    """Whether the table's primary key is its rowid (a lone INTEGER PRIMARY KEY column)."""
    keys = [row for row in conn.execute(f'PRAGMA table_info("{table}")') if row[5] > 0]
    return len(keys) == 1 and keys[0][2].upper() == "INTEGER"


def _rows_by_rowid(
    old: sqlite3.Connection, table: str, columns: list[str], with_rowid: bool, result: TableSalvage
) -> Iterator[list[tuple]]:
    """The table's readable rows in rowid order, in batches; what cannot be read is counted in `result`."""
    quoted = ", ".join(f'"{c}"' for c in columns)
    batch_sql = f'SELECT rowid, {quoted} FROM "{table}" WHERE rowid > ? ORDER BY rowid LIMIT {BATCH}'
    one_sql = f'SELECT rowid, {quoted} FROM "{table}" WHERE rowid = ?'
    after = _FIRST_ROWID
    while True:
        try:
            found = old.execute(batch_sql, [after]).fetchall()
        except sqlite3.DatabaseError:
            found = None
        if found is not None:
            if not found:
                return
            yield [row if with_rowid else row[1:] for row in found]
            after = found[-1][0]
            continue
        # something in the next batch is damaged: row by row until past it
        try:
            following = _next_rowid(old, table, after)
        except sqlite3.DatabaseError:
            resumed = _step_over(old, table, after)
            start = None if after == _FIRST_ROWID else after
            result.unreadable_stretches.append((start, resumed))
            if resumed is None:
                return
            after = resumed
            continue
        if following is None:
            return
        try:
            row = old.execute(one_sql, [following]).fetchone()
        except sqlite3.DatabaseError:
            result.unreadable_rows += 1
        else:
            yield [row if with_rowid else row[1:]]
        after = following


def _next_rowid(old: sqlite3.Connection, table: str, after: int) -> int | None:
    """The first rowid past `after`: through whichever index SQLite picks (an index holding the rowids
    still names the rows of a damaged leaf, so they are lost one by one, not as a stretch), else through
    the table itself (a damaged index); DatabaseError when neither reads."""
    sql = 'SELECT rowid FROM "{table}"{hint} WHERE rowid > ? ORDER BY rowid LIMIT 1'
    try:
        row = old.execute(sql.format(table=table, hint=""), [after]).fetchone()
    except sqlite3.DatabaseError:
        row = old.execute(sql.format(table=table, hint=" NOT INDEXED"), [after]).fetchone()
    return None if row is None else int(row[0])


def _step_over(old: sqlite3.Connection, table: str, after: int) -> int | None:
    """The smallest rowid past `after` from which the table reads again, found by looking ahead in doubling
    steps and then halving back; None when nothing further reads (the rest is lost)."""

    def reads_from(rowid: int) -> bool:
        try:
            _next_rowid(old, table, rowid)
        except sqlite3.DatabaseError:
            return False
        return True

    step, bad = 1, after
    while True:
        probe = min(after + step, _LAST_ROWID)
        if reads_from(probe):
            break
        if probe == _LAST_ROWID:
            return None
        bad, step = probe, step * 2
    good = probe
    while good - bad > 1:
        middle = (bad + good) // 2
        bad, good = (bad, middle) if reads_from(middle) else (middle, good)
    return good


def _rows_without_rowid(
    old: sqlite3.Connection, table: str, columns: list[str], result: TableSalvage
) -> Iterator[list[tuple]]:
    """A table without rowids in its key order, up to its first unreadable row (derived data in practice:
    a full-text index's own tables are rebuilt instead, link scores are computed again)."""
    quoted = ", ".join(f'"{c}"' for c in columns)
    try:
        cursor = old.execute(f'SELECT {quoted} FROM "{table}"')
        while found := cursor.fetchmany(BATCH):
            yield found
    except sqlite3.DatabaseError:
        result.unread_tail = True


def _copy_sequences(old: sqlite3.Connection, new: sqlite3.Connection) -> None:
    """AUTOINCREMENT counters, so that a salvaged table never hands out an id it gave before."""
    try:
        rows = old.execute("SELECT name, seq FROM sqlite_sequence").fetchall()
    except sqlite3.DatabaseError:
        return
    exists = new.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'").fetchone()
    if rows and exists:
        new.execute("DELETE FROM sqlite_sequence")
        new.executemany("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", rows)
