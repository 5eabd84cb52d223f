"""Topic taxonomies from browser bookmarks or folder trees, stored in the repository (thesis 2.2).

A folder is a topic, its bookmarks (or files) the topic's positive training documents; a folder named
OTHERS holds negative examples of its parent (at the top: of the root, "semantically far" pages). The
browsers' own containers ("Bookmarks Toolbar", "Bookmarks bar", "Other bookmarks", ...) are not topics:
their folders are lifted to the top (each browser's file format is read by `crawler.bookmark_files`). A
topic's key is its path of normalised folder names: trimmed, inner whitespace collapsed, "%" and "/" inside
a name escaped as "%25" and "%2F", joined by "/".

Import replaces the stored taxonomy in one transaction: a malformed file raises `TaxonomyError` naming
the place (line or item), before anything is written.
"""

from __future__ import annotations

import difflib
import html
import json
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

from crawler.bookmark_files import (
    BROWSER_CONTAINERS,
    BookmarkFolder,
    BookmarkTree,
    parse_netscape,
    read_bookmark_tree,
)
from crawler.charsets import html_text, plain_text
from crawler.errors import TaxonomyError
from crawler.parse import PDF_TYPE, parse_page
from crawler.repository import Repository

OTHERS = "others"  # compared case-insensitively
ROOT = ""
POSITIVE, NEGATIVE = 1, 0
# Documents still to fetch, fetched, failed, read from a local file, or added by retraining.
PENDING, FETCHED, FAILED, LOCAL = "pending", "fetched", "failed", "local"
IMPORTED = "import"  # training_documents.source of a bookmark or file the user imported
ARCHETYPE = "archetype"
# topics.source of accepted refinement subtopics, training_documents.source of their examples
REFINED = "refine"
TEXT_SUFFIXES = {".txt", ".text", ".md"}
HTML_SUFFIXES = {".html", ".htm", ".xhtml"}
PDF_SUFFIXES = {".pdf"}
DOCUMENT_SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES | PDF_SUFFIXES
URL_SCHEMES = ("http://", "https://")
MAX_FILE_BYTES = 64 * 1024 * 1024  # a bookmarks file or a topic document larger than this is refused
MAX_FOLDER_FILES = 20_000  # files a topic folder tree may hold: more is a disk, not a taxonomy
MAX_KEYWORDS = 100  # indicator keywords one topic may have
MAX_KEYWORD_CHARS = 100
SUBTOPIC_NAME_TERMS = 3  # top terms of its cluster a subtopic is named after when the user gives no name
PDF_ERRORS = {
    "encrypted": "a password-protected PDF",
    "no_text": "a PDF without text (scanned pages need OCR first)",
}


def escape_name(name: str) -> str:
    """One folder name as a key segment: whitespace normalised, "%" and "/" escaped."""
    return " ".join(name.split()).replace("%", "%25").replace("/", "%2F")


def subtopic_name(terms: Sequence[str], fallback: str) -> str:
    """The name a clustering proposal offers for its subtopic: its first `SUBTOPIC_NAME_TERMS` top terms
    joined by hyphens ("vacuum-rows-autovacuum"), a key segment `escape_name` leaves as it is and a shell
    takes unquoted, else the words of `fallback` joined by spaces. Joined by commas, they made keys such as
    "Databases/vacuum, rows, autovacuum": quoted in every command, and read as three topics wherever topics
    are listed with commas."""
    words = [word for term in terms for word in re.findall(r"\w+", term)]
    return "-".join(words[:SUBTOPIC_NAME_TERMS]) or " ".join(re.findall(r"\w+", fallback))


def unescape_name(segment: str) -> str:
    return segment.replace("%2F", "/").replace("%25", "%")


def topic_path_key(names: Sequence[str]) -> str:
    """The key of a topic from its folder names, outermost first."""
    return "/".join(escape_name(n) for n in names)


def parent_key(key: str) -> str:
    return key.rpartition("/")[0]


def display_name(key: str) -> str:
    return unescape_name(key.rpartition("/")[2]) if key else "(root)"


TOPICS_LISTED = "`topicswarm topics list`"
TOPICS_LISTED_API = "`topicswarm topics list` (GET /api/topics)"


def unknown_topic(key: str, known: Iterable[str], *, listed: str = TOPICS_LISTED) -> str:
    """The error for a topic key the taxonomy lacks. Keys are folder paths ("Computers/Databases"), while
    people type a folder's name in any case, so the message names the keys they most likely meant."""
    shown = repr(key) if len(repr(key)) <= 60 else f"{repr(key)[:59]}…"
    near = similar_topics(key, known)
    meant = f" (did you mean {' or '.join(map(repr, near))}?)" if near else ""
    return f"no topic {shown}{meant}: list topics with {listed}"


def similar_topics(key: str, known: Iterable[str], limit: int = 3) -> list[str]:
    """Known keys that `key` may stand for: equal ignoring case, to the whole key or its folder's name,
    else close in spelling."""
    folded = " ".join(key.split()).casefold()
    if not folded or len(folded) > 200:
        return []
    by_spelling: dict[str, list[str]] = {}
    for known_key in sorted(set(known) - {ROOT}):
        for spelling in {known_key.casefold(), display_name(known_key).casefold()}:
            by_spelling.setdefault(spelling, []).append(known_key)
    exact = by_spelling.get(folded)
    if exact:
        return exact[:limit]
    close = difflib.get_close_matches(folded, by_spelling, n=limit, cutoff=0.75)
    return list(dict.fromkeys(k for spelling in close for k in by_spelling[spelling]))[:limit]


@dataclass(frozen=True)
class TrainingDocument:
    """A bookmark or file of the taxonomy. `polarity` 1: positive of `topic`, 0: negative (OTHERS)."""

    topic: str
    polarity: int
    url: str = ""  # the bookmarked page (empty for local files)
    path: str = ""  # the local file (empty for bookmarks)
    title: str = ""
    text: str = ""
    status: str = PENDING
    error: str | None = None
    line: int = 0  # where the bookmark stands in its file
    source: str = IMPORTED  # IMPORTED, ARCHETYPE or REFINED


@dataclass(frozen=True)
class Taxonomy:
    """Topic keys (every prefix of a path included) and their training documents."""

    topics: tuple[str, ...]
    documents: tuple[TrainingDocument, ...]
    source: str = ""
    skipped: tuple[str, ...] = ()  # what was left out, one line each (loose bookmarks, place: URLs)

    def positives(self, topic: str) -> list[TrainingDocument]:
        return [d for d in self.documents if d.topic == topic and d.polarity == POSITIVE]

    def negatives(self, topic: str) -> list[TrainingDocument]:
        return [d for d in self.documents if d.topic == topic and d.polarity == NEGATIVE]

    def leaves(self) -> list[str]:
        parents = {parent_key(t) for t in self.topics}
        return [t for t in self.topics if t not in parents]

    def map_urls(self, mapper: Callable[[str], str | None]) -> Taxonomy:
        """The same taxonomy with each URL replaced by `mapper(url)` (kept when it answers None)."""
        docs = tuple(replace(d, url=mapper(d.url) or d.url) if d.url else d for d in self.documents)
        return replace(self, documents=docs)

    def training_texts(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """(positives, negatives) as topic -> texts of the documents that have text, for the topic model."""
        positives: dict[str, list[str]] = {}
        negatives: dict[str, list[str]] = {}
        for doc in self.documents:
            text = f"{doc.title}\n{doc.text}".strip()
            if not doc.text.strip():
                continue
            (positives if doc.polarity == POSITIVE else negatives).setdefault(doc.topic, []).append(text)
        return positives, negatives


# --- bookmarks ---------------------------------------------------------------------------------------


def parse_bookmarks(text: str, name: str = "bookmarks") -> Taxonomy:
    """A taxonomy from a Netscape bookmark file's text (every browser's HTML export)."""
    return taxonomy_of_tree(BookmarkTree(parse_netscape(text, name)), name)


def taxonomy_of_tree(tree: BookmarkTree, name: str) -> Taxonomy:
    """The topics of a bookmarks file's folder tree: a folder is a topic, the browsers' containers are
    lifted, OTHERS folders hold negatives; loose and non-web bookmarks are skipped, each said with its
    place."""
    root = tree.root
    topics: set[str] = set()
    docs: list[TrainingDocument] = []
    skipped: list[str] = []
    top = _lift_containers(root)
    for url, title, line in root.bookmarks + [
        b for f in root.folders if _is_container(f) for b in f.bookmarks
    ]:
        skipped.append(f"{tree.unit} {line}: bookmark {title or url!r} is in no folder, so in no topic")
    for folder in top:
        _walk(folder, [], topics, docs, skipped, tree.unit)
    if not topics:
        raise TaxonomyError(f"{name}: no topic folders: bookmarks must be filed in folders, one per topic")
    return Taxonomy(tuple(sorted(topics)), tuple(docs), name, tuple(skipped))


def _is_container(folder: BookmarkFolder) -> bool:
    return folder.container or folder.name.lower() in BROWSER_CONTAINERS


def _lift_containers(root: BookmarkFolder) -> list[BookmarkFolder]:
    """The top-level folders, with the browsers' containers replaced by their contents."""
    result: list[BookmarkFolder] = []
    for folder in root.folders:
        result.extend(folder.folders if _is_container(folder) else [folder])
    return result


def _walk(
    folder: BookmarkFolder,
    path: list[str],
    topics: set[str],
    docs: list[TrainingDocument],
    skipped: list[str],
    unit: str,
) -> None:
    if folder.name.lower() == OTHERS:
        topic = topic_path_key(path)
        for url, title, line in _all_bookmarks(folder):
            _add_bookmark(docs, skipped, topic, NEGATIVE, url, title, line, unit)
        return
    if not escape_name(folder.name):
        raise TaxonomyError(f"{unit} {folder.line}: a folder without a name")
    path = [*path, folder.name]
    topic = topic_path_key(path)
    topics.update(topic_path_key(path[: i + 1]) for i in range(len(path)))
    for url, title, line in folder.bookmarks:
        _add_bookmark(docs, skipped, topic, POSITIVE, url, title, line, unit)
    for child in folder.folders:
        _walk(child, path, topics, docs, skipped, unit)


def _all_bookmarks(folder: BookmarkFolder) -> Iterable[tuple[str, str, int]]:
    yield from folder.bookmarks
    for child in folder.folders:
        yield from _all_bookmarks(child)


def _add_bookmark(
    docs: list[TrainingDocument],
    skipped: list[str],
    topic: str,
    polarity: int,
    url: str,
    title: str,
    line: int,
    unit: str,
) -> None:
    if not url.lower().startswith(URL_SCHEMES):
        skipped.append(f"{unit} {line}: {url[:60]!r} is not a web page (http or https)")
        return
    docs.append(TrainingDocument(topic, polarity, url=url, title=title, line=line))


def netscape_html(taxonomy: Taxonomy) -> str:
    """The taxonomy's bookmarks as a Netscape bookmark file (the HTML every browser exports): a folder per
    topic, an OTHERS folder for its negatives. `parse_bookmarks` of it gives the same topics and bookmarks;
    local files and loose bookmarks have no place in it."""
    by_topic: dict[str, list[TrainingDocument]] = {}
    for doc in taxonomy.documents:
        if doc.url:
            by_topic.setdefault(doc.topic, []).append(doc)
    title = html.escape(taxonomy.source or "Bookmarks")
    lines = [f"<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<TITLE>{title}</TITLE>"]

    def links(docs: Iterable[TrainingDocument], indent: str) -> None:
        lines.extend(f'{indent}<DT><A HREF="{html.escape(d.url)}">{html.escape(d.title)}</A>' for d in docs)

    def folder(key: str, depth: int) -> None:
        indent = "    " * depth
        docs = by_topic.get(key, [])
        links((d for d in docs if d.polarity == POSITIVE), indent)
        negatives = [d for d in docs if d.polarity == NEGATIVE]
        if negatives:
            lines.append(f"{indent}<DT><H3>OTHERS</H3>\n{indent}<DL><p>")
            links(negatives, indent + "    ")
            lines.append(f"{indent}</DL><p>")
        for child in sorted(t for t in taxonomy.topics if t and parent_key(t) == key):
            lines.append(f"{indent}<DT><H3>{html.escape(display_name(child))}</H3>\n{indent}<DL><p>")
            folder(child, depth + 1)
            lines.append(f"{indent}</DL><p>")

    lines.append("<DL><p>")
    folder(ROOT, 1)
    lines.append("</DL><p>")
    return "\n".join(lines) + "\n"


def bookmarks_html(path: Path | str) -> str:
    """A bookmarks file of any browser as Netscape HTML text, for the tools that split or rewrite that text
    (the demo and the community scenarios): an HTML file as it is, another format through `netscape_html`."""
    raw, tree = _read_tree(Path(path))
    if tree.unit == "line":
        return html_text(raw, None)
    return netscape_html(taxonomy_of_tree(tree, str(path)))


def _read_tree(path: Path) -> tuple[bytes, BookmarkTree]:
    """A bookmarks file's bytes and folder tree."""
    try:
        raw = read_bounded(path)
    except OSError as exc:
        raise TaxonomyError(f"cannot read the bookmarks file {path}: {exc.strerror}") from exc
    return raw, read_bookmark_tree(raw, str(path))


def read_bounded(path: Path) -> bytes:
    """A regular file's bytes, up to `MAX_FILE_BYTES`: a FIFO would block the reader for good, and a device
    or a huge file would fill its memory."""
    if not path.is_file():
        raise TaxonomyError(f"{path} is not a regular file: give a bookmarks file or a folder of topics")
    with path.open("rb") as file:
        raw = file.read(MAX_FILE_BYTES + 1)
    if len(raw) > MAX_FILE_BYTES:
        raise TaxonomyError(
            f"{path} is larger than {MAX_FILE_BYTES // 2**20} MB: not a bookmarks file or document"
        )
    return raw


def read_bookmarks(path: Path | str) -> Taxonomy:
    """A taxonomy from a bookmarks file of any browser (`crawler.bookmark_files`)."""
    _, tree = _read_tree(Path(path))
    return taxonomy_of_tree(tree, str(path))


# --- folder trees ------------------------------------------------------------------------------------


def read_folder_tree(root: Path | str) -> Taxonomy:
    """A taxonomy from a folder of topic folders holding documents (.html, .htm, .txt, .md, .pdf). A
    document without text (a scanned or password-protected PDF) is skipped with the reason."""
    root = Path(root)
    if not root.is_dir():
        raise TaxonomyError(f"{root} is not a folder of topic folders")
    topics: set[str] = set()
    docs: list[TrainingDocument] = []
    skipped: list[str] = []
    for path in _folder_files(root):
        relative = path.relative_to(root)
        if any(part.startswith(".") for part in relative.parts) or not path.is_file():
            continue
        folders = list(relative.parts[:-1])
        polarity = POSITIVE
        if any(f.lower() == OTHERS for f in folders):
            cut = next(i for i, f in enumerate(folders) if f.lower() == OTHERS)
            folders, polarity = folders[:cut], NEGATIVE
        if polarity == POSITIVE and not folders:
            skipped.append(f"{relative}: a file outside every topic folder")
            continue
        suffix = path.suffix.lower()
        if suffix not in DOCUMENT_SUFFIXES:
            skipped.append(f"{relative}: not a text, HTML or PDF document")
            continue
        try:
            title, text, error = _read_document(path, suffix)
        except (TaxonomyError, OSError) as exc:
            title, text, error = "", "", str(exc)
        if error is not None:
            skipped.append(f"{relative}: {error}")
            continue
        topic = topic_path_key(folders)
        if polarity == POSITIVE:
            topics.update(topic_path_key(folders[: i + 1]) for i in range(len(folders)))
        docs.append(TrainingDocument(topic, polarity, path=str(path), title=title, text=text, status=LOCAL))
    if not topics:
        raise TaxonomyError(f"{root}: no topic folders with documents")
    return Taxonomy(tuple(sorted(topics)), tuple(docs), str(root), tuple(skipped))


def _folder_files(root: Path) -> list[Path]:
    """Every entry under root, sorted; more than `MAX_FOLDER_FILES` is refused before they are read."""
    found = []
    for path in root.rglob("*"):
        found.append(path)
        if len(found) > MAX_FOLDER_FILES:
            raise TaxonomyError(
                f"{root} holds more than {MAX_FOLDER_FILES} files: give the folder of your topic folders"
            )
    return sorted(found)


def _read_document(path: Path, suffix: str) -> tuple[str, str, str | None]:
    """(title, text, why it has none): a PDF without text says why (`PDF_ERRORS`)."""
    raw = read_bounded(path)
    if suffix in HTML_SUFFIXES | PDF_SUFFIXES:
        page = parse_page(raw, path.as_uri(), PDF_TYPE if suffix in PDF_SUFFIXES else "text/html")
        if suffix in PDF_SUFFIXES and not page.text:
            return "", "", PDF_ERRORS.get(page.error or "", f"a damaged PDF ({page.error})")
        return page.title, page.text, None
    return path.stem, plain_text(raw, None), None


def read_taxonomy(source: Path | str) -> Taxonomy:
    """A bookmarks file or a folder tree, whichever `source` is."""
    source = Path(source)
    if source.is_dir():
        return read_folder_tree(source)
    if not source.exists():
        raise TaxonomyError(f"{source} does not exist: give a bookmarks .html file or a folder of topics")
    return read_bookmarks(source)


# --- storage -----------------------------------------------------------------------------------------


def _schema_v1(db: Any) -> None:
    db.executescript(
        """
        CREATE TABLE IF NOT EXISTS topics (
            key TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            parent TEXT NOT NULL,
            source TEXT NOT NULL DEFAULT '',
            imported_at REAL NOT NULL
        );
        CREATE TABLE IF NOT EXISTS training_documents (
            id INTEGER PRIMARY KEY,
            topic TEXT NOT NULL,
            polarity INTEGER NOT NULL,
            url TEXT NOT NULL DEFAULT '',
            path TEXT NOT NULL DEFAULT '',
            title TEXT NOT NULL DEFAULT '',
            text TEXT NOT NULL DEFAULT '',
            status TEXT NOT NULL,
            error TEXT,
            line INTEGER NOT NULL DEFAULT 0,
            source TEXT NOT NULL DEFAULT 'import'
        );
        CREATE INDEX IF NOT EXISTS training_documents_topic ON training_documents(topic, polarity);
        CREATE TABLE IF NOT EXISTS topic_stats (
            at REAL NOT NULL,
            topic TEXT NOT NULL,
            fetched INTEGER NOT NULL,
            accepted INTEGER NOT NULL,
            harvest_rate REAL NOT NULL,
            mean_confidence REAL NOT NULL
        );
        """
    )


def _schema_v2(db: Any) -> None:
    db.execute("CREATE TABLE IF NOT EXISTS topic_previews (url TEXT PRIMARY KEY, preview TEXT NOT NULL)")


def _schema_v3(db: Any) -> None:
    """Indicator keywords per topic (a node's own table before: it stored them, and the crawler never read
    them)."""
    db.execute("CREATE TABLE IF NOT EXISTS topic_keywords (topic TEXT PRIMARY KEY, keywords TEXT NOT NULL)")


def _schema_v4(db: Any) -> None:
    """The user's topic renames, applied to later imports (`crawler.topic_rename`)."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS topic_renames "
        "(id INTEGER PRIMARY KEY, old TEXT NOT NULL, new TEXT NOT NULL, at REAL NOT NULL)"
    )


MIGRATIONS = [_schema_v1, _schema_v2, _schema_v3, _schema_v4]
_DOC_COLUMNS = ("topic", "polarity", "url", "path", "title", "text", "status", "error", "line", "source")


def ensure_schema(repo: Repository) -> None:
    repo.migrate("taxonomy", MIGRATIONS)


class StoredTaxonomy(NamedTuple):
    taxonomy: Taxonomy  # as stored: the user's topic renames made
    renamed: dict[str, str]  # imported key -> the key a rename filed it under


def store_taxonomy(repo: Repository, taxonomy: Taxonomy) -> StoredTaxonomy:
    """Replace the stored taxonomy and its imported training documents, all in one transaction. What the
    node learned since stays where its topic does: subtopics the user accepted from a refinement, and the
    training documents feedback and retraining added (a re-import of the same bookmarks had deleted the
    user's relevance marks, the archetypes and the accepted subtopics). Folders the user renamed
    (`topicswarm topics rename`) are stored under their new keys."""
    from crawler.topic_rename import apply_renames, load_renames

    ensure_schema(repo)
    now = time.time()
    with repo.transaction() as db:
        taxonomy, renamed = apply_renames(taxonomy, load_renames(db))
        kept = _kept_subtopics(db, set(taxonomy.topics))
        topics = set(taxonomy.topics) | set(kept)
        columns = ", ".join(_DOC_COLUMNS)
        learned_rows = f"SELECT {columns} FROM training_documents WHERE source != ? ORDER BY id"
        rows = db.execute(learned_rows, [IMPORTED])
        learned = [TrainingDocument(*row) for row in rows.fetchall() if row[0] in topics]
        db.execute("DELETE FROM training_documents")
        db.conn.execute(f"DELETE FROM topics WHERE key NOT IN ({', '.join('?' * len(kept))})", kept)
        db.conn.executemany(
            "INSERT INTO topics (key, name, parent, source, imported_at) VALUES (?, ?, ?, ?, ?)",
            [(t, display_name(t), parent_key(t), taxonomy.source, now) for t in taxonomy.topics],
        )
        _insert_documents(db, [*taxonomy.documents, *learned])
    return StoredTaxonomy(taxonomy, renamed)


def _kept_subtopics(db: Any, imported: set[str]) -> list[str]:
    """The accepted refinement subtopics (topics of source 'refine') whose parent stays, directly or
    through another kept subtopic."""
    refined = dict(db.execute("SELECT key, parent FROM topics WHERE source = ?", [REFINED]).fetchall())
    kept: set[str] = set()
    grew = True
    while grew:
        grew = False
        for key, parent in refined.items():
            if key not in kept and key not in imported and (parent in imported or parent in kept):
                kept.add(key)
                grew = True
    return sorted(kept)


def _insert_documents(db: Any, docs: Iterable[TrainingDocument]) -> None:
    db.conn.executemany(
        f"INSERT INTO training_documents ({', '.join(_DOC_COLUMNS)}) "
        f"VALUES ({', '.join('?' * len(_DOC_COLUMNS))})",
        [tuple(getattr(d, c) for c in _DOC_COLUMNS) for d in docs],
    )


def store_subtopic(
    repo: Repository, key: str, name: str, document_ids: Sequence[int], examples: Sequence[TrainingDocument]
) -> None:
    """A subtopic accepted from a refinement, in one transaction: the topic (source `REFINED`, which later
    imports keep), its documents moved there, the positive training documents the node learned from those
    pages for the parent (archetypes, relevance marks) moved with them, and `examples` added. A topic
    without training documents has no model: the crawl never filed a page in it, and its meta-classifier
    could not be built; and a page left a positive of the parent while filed in the subtopic would train
    the subtopic's model against its own pages."""
    ensure_schema(repo)
    parent = parent_key(key)
    with repo.transaction() as db:
        db.conn.execute(
            "INSERT INTO topics (key, name, parent, source, imported_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT(key) DO NOTHING",
            [key, name, parent, REFINED, time.time()],
        )
        db.conn.executemany(
            "UPDATE documents SET topic = ? WHERE id = ?", [(key, int(i)) for i in document_ids]
        )
        db.conn.execute(
            "UPDATE training_documents SET topic = ? WHERE topic = ? AND polarity = ? AND source != ? "
            "AND url IN (SELECT url FROM documents WHERE topic = ?)",
            [key, parent, POSITIVE, IMPORTED, key],
        )
        _insert_documents(db, examples)


def add_training_documents(repo: Repository, docs: Sequence[TrainingDocument]) -> None:
    """Add documents (archetypes chosen by retraining) to the stored taxonomy."""
    ensure_schema(repo)
    with repo.transaction() as db:
        _insert_documents(db, docs)


def set_marked_document(repo: Repository, doc: TrainingDocument) -> None:
    """A user's mark on a page as the topic's one training document of that page from feedback: a later
    mark replaces an earlier one (twenty marks had made twenty copies, and a change of mind left both
    the positive and the negative copy)."""
    ensure_schema(repo)
    with repo.transaction() as db:
        db.execute(
            "DELETE FROM training_documents WHERE source = ? AND topic = ? AND url = ?",
            [doc.source, doc.topic, doc.url],
        )
        _insert_documents(db, [doc])


def load_taxonomy(repo: Repository) -> Taxonomy | None:
    """The stored taxonomy, or None when none was imported."""
    ensure_schema(repo)
    topics = tuple(r[0] for r in repo.db.execute("SELECT key FROM topics ORDER BY key"))
    if not topics:
        return None
    rows = repo.db.execute(f"SELECT {', '.join(_DOC_COLUMNS)} FROM training_documents ORDER BY id")
    docs = tuple(TrainingDocument(*row) for row in rows)
    source = repo.db.execute("SELECT source FROM topics LIMIT 1").fetchone()[0]
    return Taxonomy(topics, docs, source)


def clean_keywords(words: Sequence[object]) -> list[str]:
    """Keywords as they are stored: inner whitespace collapsed, blank ones dropped. TaxonomyError for more
    than MAX_KEYWORDS, or one that is not a string of at most MAX_KEYWORD_CHARS characters."""
    if not all(isinstance(w, str) and len(w) <= MAX_KEYWORD_CHARS for w in words):
        raise TaxonomyError(f"keywords must be strings of at most {MAX_KEYWORD_CHARS} characters")
    if len(words) > MAX_KEYWORDS:
        raise TaxonomyError(f"at most {MAX_KEYWORDS} keywords a topic")
    return [" ".join(w.split()) for w in words if isinstance(w, str) and w.strip()]


def save_keywords(repo: Repository, key: str, keywords: Sequence[str]) -> None:
    """A topic's indicator keywords (none: no indicator rule): a page enters the topic only when it holds
    at least `min_indicators` of them (`metamodels.topic_model`)."""
    ensure_schema(repo)
    with repo.transaction() as db:
        db.conn.execute(
            "INSERT INTO topic_keywords (topic, keywords) VALUES (?, ?) "
            "ON CONFLICT(topic) DO UPDATE SET keywords = excluded.keywords",
            [key, json.dumps(list(keywords))],
        )


def load_keywords(repo: Repository) -> dict[str, tuple[str, ...]]:
    """Topic -> its indicator keywords, for the stored topics that have some."""
    ensure_schema(repo)
    rows = repo.db.execute(
        "SELECT k.topic, k.keywords FROM topic_keywords k JOIN topics t ON t.key = k.topic ORDER BY k.topic"
    )
    keywords = {}
    for topic, stored in rows:
        words = json.loads(stored)
        if words:
            keywords[topic] = tuple(str(w) for w in words)
    return keywords


def failure_counts(taxonomy: Taxonomy) -> dict[str, int]:
    """Bookmarked pages that could not be fetched, by error kind (robots_deferred, connect, http_4xx...),
    most frequent first."""
    counts: dict[str, int] = {}
    for doc in taxonomy.documents:
        if doc.status == FAILED:
            counts[doc.error or "unknown"] = counts.get(doc.error or "unknown", 0) + 1
    return dict(sorted(counts.items(), key=lambda item: -item[1]))


def topic_summary(taxonomy: Taxonomy) -> list[dict[str, Any]]:
    """Per topic: key, name, parent, positives, negatives, and how many have text (for `topics list`)."""
    rows = []
    for key in (ROOT, *taxonomy.topics):
        pos, neg = taxonomy.positives(key), taxonomy.negatives(key)
        if key == ROOT and not neg:
            continue
        rows.append(
            {
                "key": key,
                "name": display_name(key),
                "parent": parent_key(key) if key else None,
                "positives": len(pos),
                "negatives": len(neg),
                "with_text": sum(1 for d in pos + neg if d.text.strip()),
                "failed": sum(1 for d in pos + neg if d.status == FAILED),
            }
        )
    return rows


def fill_documents(taxonomy: Taxonomy, fetched: Mapping[str, tuple[str, str, str | None]]) -> Taxonomy:
    """The taxonomy with each pending bookmark's (title, text, error) from `fetched`, keyed by URL."""
    docs = []
    for doc in taxonomy.documents:
        if doc.status == PENDING and doc.url in fetched:
            title, text, error = fetched[doc.url]
            status = FAILED if error else FETCHED
            doc = replace(doc, title=title or doc.title, text=text, status=status, error=error)
        docs.append(doc)
    return replace(taxonomy, documents=tuple(docs))


async def fetch_documents(taxonomy: Taxonomy, fetcher: Any, concurrency: int = 8) -> Taxonomy:
    """Fetch every pending bookmark with a `crawler.fetch.Fetcher` (under trio) and fill in its text."""
    import trio

    urls = sorted({d.url for d in taxonomy.documents if d.status == PENDING and d.url})
    results: dict[str, tuple[str, str, str | None]] = {}
    limiter = trio.Semaphore(concurrency)

    async def one(url: str) -> None:
        async with limiter:
            result = await fetcher.fetch(url)
        if result.error is not None:
            results[url] = ("", "", result.error)
            return
        page = parse_page(result.body, result.final_url, result.content_type, result.headers)
        results[url] = (page.title, page.text, None if page.text.strip() else page.error or "empty")

    async with trio.open_nursery() as nursery:
        for url in urls:
            nursery.start_soon(one, url)
    return fill_documents(taxonomy, results)
