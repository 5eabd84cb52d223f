"""Full-text search over the repository: FTS5 with BM25 ranking (title weighted above body) and snippets.

User input must never crash a search: FTS5 query syntax errors become `SearchError` with a hint, and
`search(..., syntax="plain")` (the CLI's default) quotes every word so any text is a valid query.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

from crawler.errors import CrawlerError
from crawler.repository import Repository

SNIPPET_TOKENS = 24
_WORD = re.compile(r"\w+", re.UNICODE)


class SearchError(CrawlerError, ValueError):
    """The query cannot be run (FTS5 syntax error or an empty query)."""


@dataclass(frozen=True)
class Hit:
    doc_id: int
    url: str
    title: str
    snippet: str  # query terms wrapped in [ and ]
    score: float  # BM25 (higher is better here; SQLite's rank is its negative)
    topic: str | None = None
    confidence: float | None = None


def plain_query(text: str) -> str:
    """Every word of `text` as a quoted FTS5 term, all required: safe for any user input."""
    words = _WORD.findall(text)
    return " ".join(f'"{w}"' for w in words)


def search(
    repo: Repository,
    query: str,
    limit: int = 10,
    *,
    syntax: str = "fts5",
    include_duplicates: bool = False,
    topic: str | None = None,
) -> list[Hit]:
    """The best `limit` documents for `query`; `syntax="plain"` treats the query as words, not FTS5 syntax.

    Exact duplicates are left out (they carry no text); near duplicates are left out unless
    `include_duplicates`, so one page reachable under several URLs shows once.
    """
    match = plain_query(query) if syntax == "plain" else query.strip()
    if not match:
        raise SearchError("the query is empty: give at least one word")
    where = ["documents_fts MATCH ?"]
    params: list[object] = [match]
    if not include_duplicates:
        where.append("d.duplicate_of IS NULL AND d.near_duplicate_of IS NULL")
    if topic is not None:
        where.append("d.topic = ?")
        params.append(topic)
    sql = (
        "SELECT d.id, d.url, d.title, "
        f"snippet(documents_fts, 1, '[', ']', ' … ', {SNIPPET_TOKENS}) AS snip, "
        "documents_fts.rank AS rank, d.topic, d.confidence "
        "FROM documents_fts JOIN documents d ON d.id = documents_fts.rowid "
        f"WHERE {' AND '.join(where)} ORDER BY documents_fts.rank LIMIT ?"
    )
    params.append(int(limit))
    try:
        rows = repo.db.execute(sql, params).fetchall()
    except sqlite3.OperationalError as exc:
        message = str(exc)
        if not any(sign in message for sign in ("locked", "busy", "disk", "readonly", "corrupt")):
            raise SearchError(
                f"cannot understand the query {query!r} ({message}); put phrases in double quotes, "
                "or search for plain words"
            ) from exc
        raise
    return [
        Hit(
            doc_id=int(doc_id),
            url=url,
            title=title,
            snippet=" ".join((snip or "").split()),
            score=-float(rank),
            topic=topic_,
            confidence=confidence,
        )
        for doc_id, url, title, snip, rank, topic_, confidence in rows
    ]
