"""The node's SQLite repository: documents, links, hosts, the persisted frontier, crawl statistics, FTS5.

One database file in WAL mode, written by one writer that batches its writes into transactions
(`Repository.write_batch`). With `synchronous=NORMAL` a committed transaction survives kill -9 of the
process, so a crawl resumes from exactly what was committed: a URL is marked done in the same transaction
that stores its document.

Other parts of the node add their own tables through `Repository.db` (a `sqlite_utils.Database`) and
version them with `Repository.migrate(component, migrations)`, the same mechanism this module uses for the
crawler's tables (`crawler.repository_schema`).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
import traceback
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import sqlite_utils

from crawler.errors import RepositoryBusy, RepositoryError, RepositoryFull
from crawler.repository_faults import is_busy, is_disk_full, open_failure
from crawler.repository_schema import DONE, FAILED, MIGRATIONS, QUEUED, Migration

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DocumentRecord:
    """One fetched page as stored; `duplicate_of` / `near_duplicate_of` name the original's id."""

    url: str
    final_url: str
    host: str
    status: int
    content_type: str
    title: str
    text: str
    fingerprint: str
    simhash: int
    fetched_at: float
    depth: int
    bytes: int = 0
    elapsed: float = 0.0
    lang: str | None = None
    canonical: str | None = None
    topic: str | None = None
    confidence: float | None = None
    accepted: bool = True
    duplicate_of: int | None = None
    near_duplicate_of: int | None = None
    redirects: tuple[str, ...] = ()
    verdict: str | None = None  # restrictive meta verdict: "accepted" | "abstained" | None (not judged)
    origin: str | None = None  # peer id a pooled document came from; None for the node's own crawl
    etag: str | None = None  # the validators of the stored version, sent when it is revisited
    last_modified: str | None = None
    revisit_at: float | None = None  # when the node's crawl fetches it again (crawler.revisits)
    revisit_interval: float | None = None  # seconds between its revisits; None: the revisit_after setting


@dataclass(frozen=True)
class LinkRecord:
    """An out-link of a stored document; `context` is the apprentice's (offset, leaf text) window as JSON."""

    target_url: str
    target_host: str
    anchor_text: str = ""
    dom_path: str = ""
    context: str = "[]"
    nofollow: bool = False
    kind: str = "a"  # "a", "redirect", "refresh", "canonical", "feed" (one its head names)


@dataclass(frozen=True)
class StoredPage:
    """A document with its out-links, stored together with the frontier changes it caused."""

    document: DocumentRecord
    links: tuple[LinkRecord, ...] = ()
    doc_id: int | None = None  # chosen by the single writer, so dedup can refer to it before the commit


MMAP_BYTES = 1 << 30  # address space only: pages come from the OS cache without a copy per read
CACHE_KIB = 64 * 1024  # SQLite's page cache per connection (grows only as pages are used)
LONG_HOLD_S = 2.0  # a transaction holding the write lock longer is logged with where it began
CRAWL_STATS_KEEP = 17_280  # crawl statistics rows kept: a day of a crawl's rows at one per 5 s
BUSY_TIMEOUT_S = 5.0  # SQLite's own wait for a lock per attempt; `transaction` retries past it
BUSY_PATIENCE_S = 600.0  # how long `transaction` keeps retrying for the write lock before it gives up


_DOCUMENT_COLUMNS = tuple(f.name for f in fields(DocumentRecord))
_SITEMAP_ENTRY = ("url", "host", "topic", "priority", "depth", "tunnel", "source", "origin")  # its entry


def _document_values(doc: DocumentRecord) -> list[Any]:
    """The record's column values (`_DOCUMENT_COLUMNS` order) as SQLite stores them."""
    values = [getattr(doc, name) for name in _DOCUMENT_COLUMNS]
    values[_DOCUMENT_COLUMNS.index("simhash")] = _to_signed64(doc.simhash)
    values[_DOCUMENT_COLUMNS.index("accepted")] = int(doc.accepted)
    values[_DOCUMENT_COLUMNS.index("redirects")] = json.dumps(list(doc.redirects))
    return values


MAX_ROW_ID = (1 << 63) - 1
"""SQLite's largest integer: no row has a larger id, and a query given one fails (OverflowError)."""


def _to_signed64(value: int) -> int:
    """SQLite integers are signed 64-bit; SimHash values use all 64 bits."""
    return value - (1 << 64) if value >= (1 << 63) else value


def _from_signed64(value: int) -> int:
    return value + (1 << 64) if value < 0 else value


class Repository:
    """The node's database; open one per process and let one task write through `write_batch`."""

    def __init__(self, path: Path | str, *, check_same_thread: bool = False) -> None:
        self.path = Path(path)
        self.busy_patience = BUSY_PATIENCE_S
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            # isolation_level=None: no implicit transaction (Python's sqlite3 otherwise opens one before a
            # write outside `transaction` and holds the write lock until someone commits); every write
            # transaction is an explicit BEGIN IMMEDIATE in `transaction`.
            conn = sqlite3.connect(
                str(self.path),
                check_same_thread=check_same_thread,
                timeout=BUSY_TIMEOUT_S,
                isolation_level=None,
            )
        except sqlite3.Error as exc:
            raise RepositoryError(f"cannot open the repository at {self.path}: {exc}") from exc
        self.db = sqlite_utils.Database(conn)
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise RepositoryError(open_failure(self.path, exc)) from exc
        self.db.execute("PRAGMA synchronous=NORMAL")
        # Search reads index pages all over the file: map it and keep more pages than SQLite's 2 MB default.
        self.db.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
        self.db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.migrate("crawler", MIGRATIONS)

    # -- lifecycle ----------------------------------------------------------------------------------------
    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Repository:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- schema -------------------------------------------------------------------------------------------
    def schema_version(self, component: str) -> int:
        if not self.db["schema_versions"].exists():
            return 0
        row = self.db.execute(
            "SELECT version FROM schema_versions WHERE component = ?", [component]
        ).fetchone()
        return int(row[0]) if row else 0

    def migrate(self, component: str, migrations: Sequence[Migration]) -> int:
        """Apply `migrations[v:]` for a component at schema version v, each in its own transaction."""
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS schema_versions "
            "(component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
        )
        current = self.schema_version(component)
        if current > len(migrations):
            raise RepositoryError(
                f"{self.path}: the {component!r} schema is at version {current}, newer than this topicswarm "
                f"knows ({len(migrations)}); upgrade topicswarm or use another data directory"
            )
        for version, migration in enumerate(migrations[current:], start=current + 1):
            with self.transaction():
                migration(self.db)
                self.db.execute(
                    "INSERT INTO schema_versions (component, version) VALUES (?, ?) "
                    "ON CONFLICT(component) DO UPDATE SET version = excluded.version",
                    [component, version],
                )
        return len(migrations)

    # -- writing ------------------------------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[sqlite_utils.Database]:
        """One atomic batch: everything inside commits together or not at all.

        It takes the write lock at BEGIN (IMMEDIATE): a deferred transaction that reads before it writes
        fails at once with "database is locked", without waiting, when another connection (a node's side
        connection) committed in between. Nested batches are savepoints. A full disk raises
        `RepositoryFull` after the rollback."""
        conn = self.db.conn
        if conn.in_transaction:
            with self.db.atomic():
                yield self.db
            return
        self._begin_immediate()
        try:
            try:
                yield self.db
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if is_disk_full(exc) and not isinstance(exc, RepositoryFull):
                    raise RepositoryFull(f"the disk holding {self.path} is full ({exc})") from exc
                raise
        finally:
            _WRITE_LOCKS.released(self.path)

    def _begin_immediate(self) -> None:
        """Take the write lock, retrying with back-off while another connection holds it (up to
        `busy_patience` seconds, then `RepositoryBusy`): a busy repository delays a writer, it never fails
        it. Each failed attempt is logged with where the holder (if in this process) began its
        transaction, so a lock held too long names its culprit."""
        asked = time.monotonic()
        pause = 0.05
        while True:
            try:
                self.db.conn.execute("BEGIN IMMEDIATE")
                break
            except sqlite3.OperationalError as exc:
                if not is_busy(exc):
                    raise
                waited = time.monotonic() - asked
                log.warning(
                    "%s: no write lock after %.1f s, retrying; %s",
                    self.path.name,
                    waited,
                    _WRITE_LOCKS.describe(self.path),
                )
                if waited >= self.busy_patience:
                    raise RepositoryBusy(
                        f"{self.path}: the write lock stayed taken for {waited:.0f} s; the log names the "
                        "transaction that held it (stop the other process using this data directory)"
                    ) from exc
                time.sleep(pause)
                pause = min(pause * 2, 2.0)
        waited = time.monotonic() - asked
        if waited > LONG_HOLD_S:
            log.warning("%s: waited %.1f s for the write lock", self.path.name, waited)
        _WRITE_LOCKS.acquired(self.path)

    def insert_page(self, page: StoredPage) -> int:
        """Store a document and its links (call inside `transaction`); returns the document id. A page a
        peer's pooled result holds already becomes the node's own (`_claim_pooled`); one the node stored
        itself stays as it was."""
        doc = page.document
        doc_id = page.doc_id
        taken = "SELECT 1 FROM documents WHERE id = ?"
        if doc_id is not None and self.db.conn.execute(taken, [doc_id]).fetchone():
            doc_id = None  # another writer (pooled results from peers) took the id the crawler chose
        held = self.db.conn.execute("SELECT id, origin FROM documents WHERE url = ?", [doc.url]).fetchone()
        if held is not None and held[1] is None:
            return int(held[0])
        values = _document_values(doc)
        if held is not None:
            doc_id = self._claim_pooled(int(held[0]), doc_id, values)
        else:
            placeholders = ", ".join("?" for _ in range(len(values) + 1))
            cursor = self.db.conn.execute(
                f"INSERT INTO documents (id, {', '.join(_DOCUMENT_COLUMNS)}) VALUES ({placeholders})",
                [doc_id, *values],
            )
            doc_id = int(cursor.lastrowid)
        self._insert_links(doc_id, page.links)
        self._bump_host(doc.host, pages=1)
        return doc_id

    def _insert_links(self, doc_id: int, links: Sequence[LinkRecord]) -> None:
        self.db.conn.executemany(
            "INSERT INTO links (source_id, target_url, target_host, anchor_text, dom_path, context, "
            "nofollow, kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    doc_id,
                    lk.target_url,
                    lk.target_host,
                    lk.anchor_text,
                    lk.dom_path,
                    lk.context,
                    int(lk.nofollow),
                    lk.kind,
                )
                for lk in links
            ],
        )

    def replace_page(self, doc_id: int, page: StoredPage) -> None:
        """A revisited page that changed: its row takes the new version (the search index follows by
        trigger) and its links are the new version's; the peers it came from (`origins`) stay, and its
        restrictive verdict is cleared until the node judges the new text (call inside `transaction`)."""
        assignments = ", ".join(f"{column} = ?" for column in _DOCUMENT_COLUMNS if column != "url")
        values = [
            v for c, v in zip(_DOCUMENT_COLUMNS, _document_values(page.document), strict=True) if c != "url"
        ]
        self.db.conn.execute(f"UPDATE documents SET {assignments} WHERE id = ?", [*values, doc_id])
        self.db.conn.execute("DELETE FROM links WHERE source_id = ?", [doc_id])
        self._insert_links(doc_id, page.links)

    def record_revisit(
        self,
        doc_id: int,
        revisit_at: float,
        interval: float | None,
        etag: str | None,
        last_modified: str | None,
        checked_at: float | None = None,
    ) -> None:
        """A revisit found the page as stored at `checked_at` (None: it could not tell): only when it falls
        due again changes, the validators the server sent, if any, and when it was last found so (call
        inside `transaction`)."""
        self.db.conn.execute(
            "UPDATE documents SET revisit_at = ?, revisit_interval = ?, etag = coalesce(?, etag), "
            "last_modified = coalesce(?, last_modified), checked_at = coalesce(?, checked_at) WHERE id = ?",
            [revisit_at, interval, etag, last_modified, checked_at, doc_id],
        )

    def record_sitemap(
        self,
        entry: Any,
        read_at: float,
        due_at: float,
        urls: int | None,
        interval: float | None = None,
        validators: tuple[str | None, str | None, str | None] = (None, None, None),
        kind: str = "sitemap",
    ) -> None:
        """A sitemap or feed (`kind`) was read (`urls` listed) or found unchanged or could not be read
        (None: its count kept), and is read again at `due_at` after `interval` (None: revisit_after);
        `validators` (ETag, Last-Modified, fingerprint of its bytes) replace the stored ones they name (call
        inside `transaction`)."""
        self.db.conn.execute(
            "INSERT INTO sitemaps (url, host, topic, priority, depth, tunnel, source, origin, read_at, "
            "due_at, urls, interval, etag, last_modified, fingerprint, kind) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, coalesce(?, 0), ?, ?, ?, ?, ?) "
            "ON CONFLICT(url) DO UPDATE SET read_at = excluded.read_at, due_at = excluded.due_at, "
            "urls = coalesce(?, urls), interval = excluded.interval, kind = excluded.kind, "
            "etag = coalesce(excluded.etag, etag), last_modified = coalesce(excluded.last_modified, "
            "last_modified), fingerprint = coalesce(excluded.fingerprint, fingerprint)",
            [
                *(getattr(entry, name) for name in _SITEMAP_ENTRY),
                read_at,
                due_at,
                urls,
                interval,
                *validators,
                kind,
                urls,
            ],
        )

    def remove_document(self, doc_id: int, now: float) -> None:
        """A page its server says is gone (404, 410) leaves the repository with its links and index entry;
        its frontier row turns failed ("gone", at `now`), so links to it do not bring it back but a list
        dating it later does (`revisits.relisted_failures`), and its host holds one page less (call inside
        `transaction`)."""
        row = self.db.conn.execute("SELECT host, url FROM documents WHERE id = ?", [doc_id]).fetchone()
        self.db.conn.execute("DELETE FROM documents WHERE id = ?", [doc_id])
        if row is None:
            return
        host, url = row
        self.db.conn.execute(
            f"UPDATE frontier SET state = {FAILED}, error = 'gone', updated_at = ? WHERE url = ?", [now, url]
        )
        if host:
            self._bump_host(host, pages=-1)

    def _claim_pooled(self, pooled_id: int, doc_id: int | None, values: list[Any]) -> int:
        """The node's own crawl of a page a peer's result holds replaces that row: the full text, links and
        the node's own verdict instead of the peer's preview; `origins` still names the peers that sent
        it. The row moves to the id the crawler chose (its duplicate index and later pages refer to it,
        and results sync to peers by id), unless that id is taken. Keeping the pooled row instead threw
        the crawl away: a node crawling beside its peers kept 59 of its 150 pages."""
        new_id = pooled_id if doc_id is None else doc_id
        assignments = ", ".join(f"{column} = ?" for column in _DOCUMENT_COLUMNS)
        self.db.conn.execute(
            f"UPDATE documents SET id = ?, {assignments} WHERE id = ?", [new_id, *values, pooled_id]
        )
        return new_id

    def record_host(
        self,
        host: str,
        state: str,
        now: float,
        *,
        failures: int = 0,
        bad_spells: int = 0,
        retry_at: float | None = None,
        error: str | None = None,
    ) -> None:
        """Keep the host's politeness state (call inside `transaction`), a bad host's next try as a wall
        time (None: never); errors are counted."""
        self.db.conn.execute(
            "INSERT INTO hosts (host, state, failures, bad_spells, retry_at, errors, last_error, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(host) DO UPDATE SET state = excluded.state, failures = excluded.failures, "
            "bad_spells = excluded.bad_spells, retry_at = excluded.retry_at, "
            "errors = errors + excluded.errors, last_error = COALESCE(excluded.last_error, last_error), "
            "updated_at = excluded.updated_at",
            [host, state, failures, bad_spells, retry_at, 1 if error else 0, error, now],
        )

    def _bump_host(self, host: str, pages: int) -> None:
        self.db.conn.execute(
            "INSERT INTO hosts (host, pages, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT(host) DO UPDATE SET pages = pages + excluded.pages, "
            "updated_at = excluded.updated_at",
            [host, pages, time.time()],
        )

    def record_stats(self, row: dict[str, Any]) -> None:
        """One crawl-statistics row (a crawl writes one every few seconds), the oldest beyond
        CRAWL_STATS_KEEP dropped: a crawl that runs for months must not grow the file by it."""
        row = dict(row)
        row["errors_by_kind"] = json.dumps(row.get("errors_by_kind", {}), sort_keys=True)
        columns = ", ".join(row)
        self.db.conn.execute(
            f"INSERT INTO crawl_stats ({columns}) VALUES ({', '.join('?' for _ in row)})", list(row.values())
        )
        self.db.conn.execute(
            "DELETE FROM crawl_stats WHERE id <= (SELECT max(id) FROM crawl_stats) - ?", [CRAWL_STATS_KEEP]
        )

    # -- reading ------------------------------------------------------------------------------------------
    def document_count(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM documents").fetchone()[0])

    def document(self, doc_id: int) -> dict[str, Any] | None:
        rows = list(self.db.query("SELECT * FROM documents WHERE id = ?", [doc_id]))
        return _decode_document(rows[0]) if rows else None

    def document_by_url(self, url: str) -> dict[str, Any] | None:
        rows = list(self.db.query("SELECT * FROM documents WHERE url = ?", [url]))
        return _decode_document(rows[0]) if rows else None

    def documents(self, where: str | None = None, params: Iterable[Any] = ()) -> Iterator[dict[str, Any]]:
        sql = "SELECT * FROM documents" + (f" WHERE {where}" if where else "") + " ORDER BY id"
        for row in self.db.query(sql, list(params)):
            yield _decode_document(row)

    def links_of(self, doc_id: int) -> list[dict[str, Any]]:
        return list(self.db.query("SELECT * FROM links WHERE source_id = ? ORDER BY rowid", [doc_id]))

    def fingerprints(self, limit: int) -> list[tuple[int, str, int]]:
        """(id, fingerprint, simhash) of the newest `limit` originals of the node's own crawl, oldest first:
        warms the dedup index. Peers' pooled results stay out: the crawl of a page one of them holds takes
        its row (`insert_page`), and would have been taken for a duplicate of itself."""
        rows = self.db.execute(
            "SELECT id, fingerprint, simhash FROM documents WHERE duplicate_of IS NULL AND origin IS NULL "
            "ORDER BY id DESC LIMIT ?",
            [limit],
        ).fetchall()
        return [(int(i), f, _from_signed64(int(s))) for i, f, s in reversed(rows)]

    def hosts(self) -> list[dict[str, Any]]:
        return list(self.db.query("SELECT * FROM hosts ORDER BY host"))

    def bad_hosts(self) -> list[dict[str, Any]]:
        """The hosts stored bad that have a next try (retry_at, a wall time): their failures and bad_spells.
        One given up on has none, and a new crawl tries it afresh."""
        return list(
            self.db.query("SELECT * FROM hosts WHERE state = 'bad' AND retry_at IS NOT NULL ORDER BY host")
        )


def requeue_lost_pages(conn: sqlite3.Connection) -> int:
    """Queue again the frontier URLs marked done whose page is not stored: their document rows were lost
    (to `topicswarm repair`), so the crawl fetches them anew rather than count them as crawled. A page its
    server said is gone turned failed, not done, and stays so. Returns how many were queued."""
    cursor = conn.execute(
        f"UPDATE frontier SET state = {QUEUED}, error = NULL WHERE state = {DONE} "
        "AND url NOT IN (SELECT url FROM documents) AND url NOT IN (SELECT final_url FROM documents)"
    )
    return cursor.rowcount


class _WriteLockLog:
    """Which transaction of this process holds each repository's write lock, since when and from where."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders: dict[Path, tuple[float, str, list[str]]] = {}

    def acquired(self, path: Path) -> None:
        stack = traceback.format_stack(limit=12)[:-3]
        with self._lock:
            self._holders[path] = (time.monotonic(), threading.current_thread().name, stack)

    def released(self, path: Path) -> None:
        with self._lock:
            holder = self._holders.pop(path, None)
        if holder is None:
            return
        held = time.monotonic() - holder[0]
        if held > LONG_HOLD_S:
            log.warning(
                "%s: a transaction held the write lock %.1f s (thread %s), begun at:\n%s",
                path.name,
                held,
                holder[1],
                "".join(holder[2]),
            )

    def describe(self, path: Path) -> str:
        with self._lock:
            holder = self._holders.get(path)
        if holder is None:
            return "no transaction of this process holds it (another process, or an implicit transaction)"
        return f"held for {time.monotonic() - holder[0]:.1f} s by thread {holder[1]}, begun at:\n" + "".join(
            holder[2]
        )


_WRITE_LOCKS = _WriteLockLog()


def _decode_document(row: dict[str, Any]) -> dict[str, Any]:
    row["simhash"] = _from_signed64(int(row["simhash"]))
    row["accepted"] = bool(row["accepted"])
    row["redirects"] = json.loads(row["redirects"])
    row["origins"] = json.loads(row.get("origins") or "[]")
    return row
