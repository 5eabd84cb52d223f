"""Labelled text collections from the shared data, read straight from their tar.gz archives.

20 Newsgroups, Reuters-21578 and WebKB are the collections the thesis's classification experiments use.
Parsing the archives takes several seconds, so the parsed documents are cached as msgpack in
`simnet.paths.cache_dir()`, keyed by the archive's size and modification time.
"""

from __future__ import annotations

import html
import os
import re
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import msgpack
from selectolax.lexbor import LexborHTMLParser

from simnet.paths import cache_dir, shared_file

CACHE_VERSION = 1
ARCHIVES = {
    "20ng": "corpora/20news-bydate.tar.gz",
    "reuters": "corpora/reuters21578.tar.gz",
    "webkb": "corpora/webkb-raw.tar.gz",
}
WEBKB_TEST_UNIVERSITY = "cornell"


@dataclass(frozen=True)
class Document:
    """One labelled document. `source` is the newsgroup, the Reuters file or the WebKB university."""

    id: str
    text: str
    labels: tuple[str, ...]
    split: str  # "train" | "test"
    source: str = ""


def corpus_names() -> tuple[str, ...]:
    return tuple(ARCHIVES)


def load_corpus(name: str, *, use_cache: bool = True) -> list[Document]:
    """The documents of corpus `name` ("20ng", "reuters", "webkb") in a stable order.

    20ng: by-date split, label = newsgroup. reuters: ModApte (LEWISSPLIT TRAIN/TEST with TOPICS="YES"),
    labels = TOPICS (possibly empty). webkb: label = (class,), source = university; pages of
    `WEBKB_TEST_UNIVERSITY` form the test split (leave-one-university-out), the rest the train split.
    Raises `simnet.paths.SharedDataMissing` when the archive is absent.
    """
    if name not in ARCHIVES:
        raise ValueError(f"unknown corpus {name!r}: choose one of {', '.join(ARCHIVES)}")
    archive = shared_file(ARCHIVES[name])
    if not use_cache:
        return list(PARSERS[name](archive))
    stat = archive.stat()
    cache = cache_dir() / "corpora" / f"{name}-v{CACHE_VERSION}-{stat.st_size}-{int(stat.st_mtime)}.msgpack"
    if cache.exists():
        return [_document_from_row(row) for row in msgpack.unpackb(cache.read_bytes())]
    docs = list(PARSERS[name](archive))
    _write_atomically(cache, msgpack.packb([_document_to_row(d) for d in docs]))
    return docs


def _document_to_row(doc: Document) -> list:
    return [doc.id, doc.text, list(doc.labels), doc.split, doc.source]


def _document_from_row(row: list) -> Document:
    doc_id, text, labels, split, source = row
    return Document(doc_id, text, tuple(labels), split, source)


def _write_atomically(path: Path, payload: bytes) -> None:
    """Several engineers' processes may load a corpus at once: never expose a half-written cache."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(payload)
    os.replace(tmp, path)


def _archive_files(archive: Path) -> Iterator[tuple[str, bytes]]:
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar:
            if member.isfile():
                handle = tar.extractfile(member)
                if handle is not None:
                    with handle:
                        yield member.name, handle.read()


# --- 20 Newsgroups -------------------------------------------------------------------------------------


def _parse_20ng(archive: Path) -> Iterator[Document]:
    docs = []
    for name, payload in _archive_files(archive):
        parts = name.strip("./").split("/")
        if len(parts) != 4 or not parts[1].startswith("20news-bydate-"):
            continue
        split = parts[1].removeprefix("20news-bydate-")
        group, file_id = parts[2], parts[3]
        docs.append(
            Document(f"20ng/{split}/{group}/{file_id}", payload.decode("latin-1"), (group,), split, group)
        )
    return iter(sorted(docs, key=_natural_key))


def _natural_key(doc: Document) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", doc.id))


# --- Reuters-21578 ---------------------------------------------------------------------------------------

_REUTERS_RE = re.compile(r"<REUTERS([^>]*)>(.*?)</REUTERS>", re.S)
_ATTR_RE = re.compile(r'(\w+)="([^"]*)"')
_TOPICS_RE = re.compile(r"<TOPICS>(.*?)</TOPICS>", re.S)
_D_RE = re.compile(r"<D>(.*?)</D>", re.S)
_TEXT_RE = re.compile(r"<TEXT[^>]*>(.*?)</TEXT>", re.S)
_TAG_RE = re.compile(r"<[^>]+>")


def _parse_reuters(archive: Path) -> Iterator[Document]:
    splits = {"TRAIN": "train", "TEST": "test"}
    docs = []
    for name, payload in _archive_files(archive):
        if not re.search(r"reut2-\d+\.sgm$", name):
            continue
        source = Path(name).stem
        for match in _REUTERS_RE.finditer(payload.decode("latin-1")):
            attrs = dict(_ATTR_RE.findall(match.group(1)))
            split = splits.get(attrs.get("LEWISSPLIT", ""))
            if split is None or attrs.get("TOPICS") != "YES":
                continue
            body = match.group(2)
            topics = _TOPICS_RE.search(body)
            labels = tuple(_D_RE.findall(topics.group(1))) if topics else ()
            text_match = _TEXT_RE.search(body)
            text = html.unescape(_TAG_RE.sub(" ", text_match.group(1))) if text_match else ""
            docs.append(Document(f"reuters/{attrs['NEWID']}", text.strip(), labels, split, source))
    return iter(sorted(docs, key=_natural_key))


# --- WebKB -----------------------------------------------------------------------------------------------

_HEADER_LINE_RE = re.compile(rb"^[A-Za-z][A-Za-z0-9-]*:")


def strip_http_headers(payload: bytes) -> bytes:
    """WebKB pages start with the crawler's HTTP response headers up to the first blank line."""
    if not _HEADER_LINE_RE.match(payload):
        return payload
    for separator in (b"\r\n\r\n", b"\n\n"):
        head, found, rest = payload.partition(separator)
        if found and b"<" not in head:
            return rest
    return payload


def html_to_text(markup: bytes | str) -> str:
    """Visible text of an HTML page (title included), whitespace collapsed."""
    if isinstance(markup, bytes):
        try:
            markup = markup.decode("utf-8")
        except UnicodeDecodeError:
            markup = markup.decode("latin-1")
    tree = LexborHTMLParser(markup)
    tree.strip_tags(["script", "style", "noscript"])
    root = tree.root
    text = root.text(separator=" ") if root is not None else ""
    return " ".join(text.split())


def _parse_webkb(archive: Path) -> Iterator[Document]:
    docs = []
    for name, payload in _archive_files(archive):
        parts = name.strip("./").split("/")
        if len(parts) != 5 or parts[:2] != ["bert", "webkb"]:
            continue
        label, university, file_name = parts[2], parts[3], parts[4]
        split = "test" if university == WEBKB_TEST_UNIVERSITY else "train"
        text = html_to_text(strip_http_headers(payload))
        docs.append(Document(f"webkb/{label}/{university}/{file_name}", text, (label,), split, university))
    return iter(sorted(docs, key=lambda d: d.id))


PARSERS: dict[str, Callable[[Path], Iterator[Document]]] = {
    "20ng": _parse_20ng,
    "reuters": _parse_reuters,
    "webkb": _parse_webkb,
}
