"""Renaming a topic, and remembering the rename for later imports.

A topic's key is its folder path, and the same key names its community among peers: a user whose folder is
`Math` never meets the peers of `Science/Mathematics`. Renaming moves every row filed under the topic and
its subtopics to the new key in one transaction. The rename is remembered (`topic_renames`, applied in the
order made), so importing the same bookmarks again files the `Math` folder's pages under the new key instead
of bringing the old topic back and dropping what the renamed one learned.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from crawler.errors import TaxonomyError
from crawler.taxonomy import ROOT, Taxonomy, display_name, parent_key, similar_topics, unknown_topic
from metamodels.topic_model import topic_prefixes

MAX_KEY_CHARS = 128  # a longer key is not announced to peers (`p2p.message_limits`)

TOPIC_COLUMNS: tuple[tuple[str, str], ...] = (
    ("topics", "key"),
    ("topics", "parent"),
    ("training_documents", "topic"),
    ("topic_stats", "topic"),
    ("topic_keywords", "topic"),
    ("documents", "topic"),
    ("frontier", "topic"),
    ("sitemaps", "topic"),
    ("link_scores", "topic"),
    ("feedback", "topic"),
    ("apprentice_models", "topic"),
)
"""The crawler's tables and columns that hold topic keys."""

UNIQUE_TOPIC_COLUMNS = {("topic_keywords", "topic"), ("link_scores", "topic"), ("apprentice_models", "topic")}
"""Columns a topic key is (part of) the primary key of: stale rows under the new keys, left by a topic of
that name an import removed, give way to the renamed topic's."""


def renamed_key(key: str, old: str, new: str) -> str:
    """`key` after renaming `old` to `new`: the topic itself and its subtopics move, other keys stay."""
    if key == old:
        return new
    if key.startswith(old + "/"):
        return new + key[len(old) :]
    return key


def typed_key(typed: str) -> str:
    """A key as a user types it (`Science/Mathematics`): folder names trimmed and their inner whitespace
    collapsed, as an import makes them."""
    segments = [" ".join(segment.split()) for segment in typed.split("/")]
    if not typed.strip() or not all(segments):
        raise TaxonomyError(
            f"{typed!r} is no topic key: give folder names joined by /, e.g. Science/Mathematics"
        )
    key = "/".join(segments)
    if any(ord(c) < 32 or ord(c) == 127 for c in key):
        raise TaxonomyError("a topic key cannot hold control characters")
    if len(key) > MAX_KEY_CHARS:
        raise TaxonomyError(f"a topic key has at most {MAX_KEY_CHARS} characters (peers ignore longer ones)")
    return key


def alike_topics(key: str, own: Iterable[str], limit: int = 3) -> list[str]:
    """The node's topics that a community's key may be another name for: their folder names equal in any
    case, close in spelling, or one an abbreviation of the other (`Math`, `Science/Mathematics`)."""
    own = [mine for mine in own if mine not in (key, ROOT)]
    name = display_name(key)
    alike = similar_topics(name, own)
    folded = name.casefold()
    for mine in own:
        theirs = display_name(mine).casefold()
        short, long = sorted((theirs, folded), key=len)
        if long.startswith(short) and len(short) >= max(4, len(long) / 3):  # an abbreviation, not "Art"
            alike.append(mine)
    return list(dict.fromkeys(alike))[:limit]


def rename_rows(db: Any, old: str, new: str) -> dict[str, str]:
    """Move topic `old` and its subtopics to `new` in the crawler's tables, inside the caller's transaction;
    the keys moved, old -> new. Refused (TaxonomyError) when `old` is no topic, or a moved key is taken."""
    keys = [row[0] for row in db.execute("SELECT key FROM topics").fetchall()]
    if old == ROOT or old not in keys:
        raise TaxonomyError(unknown_topic(old, keys))
    if new == old:
        raise TaxonomyError(f"the topic {old!r} has that key already")
    if new.startswith(old + "/"):
        raise TaxonomyError(f"a topic cannot move to {new!r}, under itself")
    moved = {key: renamed_key(key, old, new) for key in keys if renamed_key(key, old, new) != key}
    taken = sorted(set(moved.values()) & (set(keys) - set(moved)))
    if taken:
        raise TaxonomyError(f"a topic {taken[0]!r} exists already: rename it first, or choose another name")
    for table, column in TOPIC_COLUMNS:
        if not db[table].exists():
            continue
        if (table, column) in UNIQUE_TOPIC_COLUMNS:
            move_keys_unique(db, table, column, moved)
        else:
            move_keys(db, table, column, old, new)
    db.execute(
        "UPDATE topics SET name = ?, parent = ? WHERE key = ?", [display_name(new), parent_key(new), new]
    )
    _add_ancestors(db, new)
    db.execute("INSERT INTO topic_renames (old, new, at) VALUES (?, ?, ?)", [old, new, time.time()])
    return moved


def subtree_where(column: str, key: str) -> tuple[str, list[Any]]:
    """An SQL condition on `column` for the topic `key` and its subtopics, and its parameters (a prefix
    compared as text: LIKE would read the "%" of escaped folder names as a wildcard)."""
    prefix = key + "/"
    return f"({column} = ? OR substr({column}, 1, ?) = ?)", [key, len(prefix), prefix]


def move_keys(db: Any, table: str, column: str, old: str, new: str) -> int:
    """Rewrite `old` and the keys under it to `new` in one column; the rows changed."""
    where, params = subtree_where(column, old)
    cursor = db.execute(
        f"UPDATE {table} SET {column} = ? || substr({column}, ?) WHERE {where}", [new, len(old) + 1, *params]
    )
    return cursor.rowcount


def move_keys_unique(db: Any, table: str, column: str, moved: dict[str, str]) -> None:
    targets = sorted(moved.values())
    db.execute(f"DELETE FROM {table} WHERE {column} IN ({', '.join('?' * len(targets))})", targets)
    for old, new in moved.items():
        db.execute(f"UPDATE {table} SET {column} = ? WHERE {column} = ?", [new, old])


def _add_ancestors(db: Any, key: str) -> None:
    """Folders above the new key that are no topics yet become topics without documents of their own (a
    folder holding one subfolder is one topic with it, as on import)."""
    source = db.execute("SELECT source, imported_at FROM topics WHERE key = ?", [key]).fetchone()
    for parent in topic_prefixes(key)[:-1]:
        db.execute(
            "INSERT OR IGNORE INTO topics (key, name, parent, source, imported_at) VALUES (?, ?, ?, ?, ?)",
            [parent, display_name(parent), parent_key(parent), *source],
        )


def load_renames(db: Any) -> list[tuple[str, str]]:
    """Every rename made, oldest first."""
    return [(old, new) for old, new in db.execute("SELECT old, new FROM topic_renames ORDER BY id")]


def apply_renames(taxonomy: Taxonomy, renames: Sequence[tuple[str, str]]) -> tuple[Taxonomy, dict[str, str]]:
    """An imported taxonomy with the user's renames made, in order, and the imported keys they moved.
    Every folder above a moved key is a topic too, as after an import."""
    if not renames:
        return taxonomy, {}

    def key_of(key: str) -> str:
        for old, new in renames:
            key = renamed_key(key, old, new)
        return key

    moved = {key: key_of(key) for key in taxonomy.topics if key_of(key) != key}
    if not moved:
        return taxonomy, {}
    # every folder above a moved key too (the root, "", has none and stays itself)
    topics = dict.fromkeys(k for key in taxonomy.topics for k in topic_prefixes(key_of(key)) or [key])
    documents = tuple(replace(d, topic=key_of(d.topic)) for d in taxonomy.documents)
    return replace(taxonomy, topics=tuple(topics), documents=documents), moved
