"""The crawler's tables in the repository (`crawler.repository`), one migration per schema version: a
file written by an older topicswarm gets the migrations it lacks, in order (`Repository.migrate`).
"""

from __future__ import annotations

from collections.abc import Callable

import sqlite_utils

Migration = Callable[[sqlite_utils.Database], None]

# Frontier row states: a queued URL waits to be fetched; done and failed are terminal (never fetched again).
QUEUED, DONE, FAILED = 0, 1, 2
BM25_WEIGHTS = "5.0, 1.0"  # FTS5 bm25() column weights: title, text (search ranks with the same)


def _schema_v1(db: sqlite_utils.Database) -> None:
    db.executescript(
        """
        CREATE TABLE IF NOT EXISTS documents (
            id INTEGER PRIMARY KEY,
            url TEXT NOT NULL UNIQUE,
            final_url TEXT NOT NULL,
            host TEXT NOT NULL,
            status INTEGER NOT NULL,
            content_type TEXT NOT NULL DEFAULT '',
            title TEXT NOT NULL DEFAULT '',
            text TEXT NOT NULL DEFAULT '',
            lang TEXT,
            canonical TEXT,
            fingerprint TEXT NOT NULL,
            simhash INTEGER NOT NULL DEFAULT 0,
            duplicate_of INTEGER,
            near_duplicate_of INTEGER,
            fetched_at REAL NOT NULL,
            elapsed REAL NOT NULL DEFAULT 0,
            bytes INTEGER NOT NULL DEFAULT 0,
            depth INTEGER NOT NULL DEFAULT 0,
            topic TEXT,
            confidence REAL,
            accepted INTEGER NOT NULL DEFAULT 1,
            redirects TEXT NOT NULL DEFAULT '[]'
        );
        CREATE INDEX IF NOT EXISTS documents_host ON documents(host);
        CREATE INDEX IF NOT EXISTS documents_fingerprint ON documents(fingerprint);
        CREATE INDEX IF NOT EXISTS documents_topic ON documents(topic, confidence);
        CREATE INDEX IF NOT EXISTS documents_final_url ON documents(final_url);

        CREATE TABLE IF NOT EXISTS links (
            source_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            target_url TEXT NOT NULL,
            target_host TEXT NOT NULL,
            anchor_text TEXT NOT NULL DEFAULT '',
            dom_path TEXT NOT NULL DEFAULT '',
            context TEXT NOT NULL DEFAULT '[]',
            nofollow INTEGER NOT NULL DEFAULT 0,
            kind TEXT NOT NULL DEFAULT 'a'
        );
        CREATE INDEX IF NOT EXISTS links_source ON links(source_id);
        CREATE INDEX IF NOT EXISTS links_target ON links(target_url);

        CREATE TABLE IF NOT EXISTS hosts (
            host TEXT PRIMARY KEY,
            state TEXT NOT NULL DEFAULT 'ok',
            failures INTEGER NOT NULL DEFAULT 0,
            pages INTEGER NOT NULL DEFAULT 0,
            errors INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            updated_at REAL NOT NULL DEFAULT 0
        );

        CREATE TABLE IF NOT EXISTS frontier (
            url TEXT PRIMARY KEY,
            host TEXT NOT NULL,
            topic TEXT,
            priority REAL NOT NULL,
            depth INTEGER NOT NULL,
            tunnel INTEGER NOT NULL DEFAULT 0,
            source TEXT,
            origin TEXT,
            retries INTEGER NOT NULL DEFAULT 0,
            state INTEGER NOT NULL DEFAULT 0,
            error TEXT,
            updated_at REAL NOT NULL DEFAULT 0
        );
        CREATE INDEX IF NOT EXISTS frontier_state ON frontier(state);

        CREATE TABLE IF NOT EXISTS crawl_stats (
            id INTEGER PRIMARY KEY,
            at REAL NOT NULL,
            pages INTEGER NOT NULL,
            pages_per_s REAL NOT NULL,
            bytes INTEGER NOT NULL,
            frontier_size INTEGER NOT NULL,
            in_flight INTEGER NOT NULL,
            duplicates INTEGER NOT NULL,
            errors INTEGER NOT NULL,
            errors_by_kind TEXT NOT NULL
        );
        """
    )
    db["documents"].enable_fts(
        ["title", "text"],
        fts_version="FTS5",
        create_triggers=True,
        tokenize="porter unicode61 remove_diacritics 2",
    )
    # Title matches weigh more than body matches in BM25 (columns in the order given above).
    db.execute(f"INSERT INTO documents_fts(documents_fts, rank) VALUES ('rank', 'bm25({BM25_WEIGHTS})')")


def _schema_v2(db: sqlite_utils.Database) -> None:
    """Search columns: restrictive verdict, and the peers a pooled document came from (JSON list)."""
    db.executescript(
        """
        ALTER TABLE documents ADD COLUMN verdict TEXT;
        ALTER TABLE documents ADD COLUMN origin TEXT;
        ALTER TABLE documents ADD COLUMN origins TEXT NOT NULL DEFAULT '[]';
        CREATE INDEX IF NOT EXISTS documents_origin ON documents(origin);
        """
    )


def _schema_v3(db: sqlite_utils.Database) -> None:
    """Search filters read from an index: in the documents' rows these columns sit after the text, so
    filtering thousands of BM25 candidates read every text's overflow pages."""
    db.execute(
        "CREATE INDEX IF NOT EXISTS documents_search ON documents"
        "(id, duplicate_of, near_duplicate_of, verdict, accepted, topic, origin)"
    )


def _schema_v4(db: sqlite_utils.Database) -> None:
    """Revisits: the stored version's validators and when it falls due. Pages stored before fall due a week
    (revisit_after's default) after their fetch."""
    db.executescript(
        """
        ALTER TABLE documents ADD COLUMN etag TEXT;
        ALTER TABLE documents ADD COLUMN last_modified TEXT;
        ALTER TABLE documents ADD COLUMN revisit_at REAL;
        ALTER TABLE documents ADD COLUMN revisit_interval REAL;
        UPDATE documents SET revisit_at = fetched_at + 604800 WHERE origin IS NULL;
        CREATE INDEX IF NOT EXISTS documents_revisit ON documents(revisit_at, accepted, duplicate_of)
            WHERE origin IS NULL;
        """
    )


def _schema_v5(db: sqlite_utils.Database) -> None:
    """Sitemaps read (crawler.sitemaps): where each came from, to read it again when due; and when a
    revisit last found a page as stored, which a sitemap's lastmod is compared with."""
    db.executescript(
        """
        ALTER TABLE documents ADD COLUMN checked_at REAL;
        CREATE TABLE IF NOT EXISTS sitemaps (
            url TEXT PRIMARY KEY,
            host TEXT NOT NULL,
            topic TEXT,
            priority REAL NOT NULL,
            depth INTEGER NOT NULL,
            tunnel INTEGER NOT NULL DEFAULT 0,
            source TEXT,
            origin TEXT,
            read_at REAL NOT NULL,
            due_at REAL NOT NULL,
            urls INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX IF NOT EXISTS sitemaps_due ON sitemaps(due_at);
        """
    )


def _schema_v6(db: sqlite_utils.Database) -> None:
    """A sitemap is read again as a page is revisited: with the validators of its last reading, a
    fingerprint of its bytes, and an interval that adapts to how often it changes."""
    db.executescript(
        """
        ALTER TABLE sitemaps ADD COLUMN etag TEXT;
        ALTER TABLE sitemaps ADD COLUMN last_modified TEXT;
        ALTER TABLE sitemaps ADD COLUMN fingerprint TEXT;
        ALTER TABLE sitemaps ADD COLUMN interval REAL;
        """
    )


def _schema_v7(db: sqlite_utils.Database) -> None:
    """Feeds (crawler.feeds) are read and read again as sitemaps are, in the same table: which one a row
    is."""
    db.executescript("ALTER TABLE sitemaps ADD COLUMN kind TEXT NOT NULL DEFAULT 'sitemap';")


def _schema_v8(db: sqlite_utils.Database) -> None:
    """A bad host is tried again later (crawler.politeness): how often it turned bad and when its next
    try is. Links failed as "host_bad" before were dropped with their host and never requested: queued
    again, they wait for their host's next try."""
    columns = db["hosts"].columns_dict
    if "bad_spells" not in columns:
        db.execute("ALTER TABLE hosts ADD COLUMN bad_spells INTEGER NOT NULL DEFAULT 0")
    if "retry_at" not in columns:
        db.execute("ALTER TABLE hosts ADD COLUMN retry_at REAL")
    db.executescript(
        f"""
        UPDATE frontier SET state = {QUEUED}, error = NULL WHERE state = {FAILED} AND error = 'host_bad';
        UPDATE hosts SET state = 'slow' WHERE state = 'bad';
        """
    )


MIGRATIONS: list[Migration] = [
    _schema_v1,
    _schema_v2,
    _schema_v3,
    _schema_v4,
    _schema_v5,
    _schema_v6,
    _schema_v7,
    _schema_v8,
]
