"""PDF documents: read for their text, title and web links; damaged, locked or image-only ones refused with
the reason, never raising."""

from __future__ import annotations

import io

import pytest
from pypdf import PdfReader, PdfWriter

from crawler import pdf
from crawler.parse import PDF_TYPE, parse_page
from tests.pdf_samples import make_pdf

URL = "http://docs.test/manual/guide.pdf"


def encrypted(body: bytes, user_password: str) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(body)))
    writer.encrypt(user_password=user_password, owner_password="owner", algorithm="AES-256")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_a_pdf_gives_its_text_page_by_page_its_title_and_its_web_links():
    body = make_pdf(
        ["Relational databases store rows in tables (B-trees).", "Indexes speed up SQL queries."],
        title="The Database Guide",
        links=["https://www.sqlite.org/lang.html", "../tutorial/next.html", "mailto:author@docs.test"],
    )
    page = parse_page(body, URL, PDF_TYPE)
    assert page.ok
    assert page.title == "The Database Guide"
    assert page.text == "Relational databases store rows in tables (B-trees).\nIndexes speed up SQL queries."
    assert [link.url for link in page.links] == [
        "https://www.sqlite.org/lang.html",
        "http://docs.test/tutorial/next.html",
    ]


def test_without_a_title_in_its_metadata_a_pdf_is_titled_by_its_first_line():
    page = parse_page(make_pdf(["Gnuplot plotting cheat sheet", "more"]), URL, PDF_TYPE)
    assert page.title == "Gnuplot plotting cheat sheet"


@pytest.mark.parametrize("content_type", ["application/octet-stream", "text/html", ""])
def test_a_pdf_is_known_by_its_signature_whatever_the_server_called_it(content_type):
    page = parse_page(make_pdf(["signed by its header"]), URL, content_type)
    assert page.ok and page.text == "signed by its header"


def test_only_the_first_pages_of_a_long_pdf_are_read(monkeypatch):
    monkeypatch.setattr(pdf, "MAX_PAGES", 2)
    page = parse_page(make_pdf([f"chapter{i}" for i in range(5)]), URL, PDF_TYPE)
    assert page.text.split("\n") == ["chapter0", "chapter1"]


def test_reading_stops_at_the_first_page_past_the_time_limit(monkeypatch):
    monkeypatch.setattr(pdf, "MAX_SECONDS", -1.0)
    page = parse_page(make_pdf([f"chapter{i}" for i in range(5)]), URL, PDF_TYPE)
    assert page.text == "chapter0"


def test_text_is_cut_at_the_character_limit(monkeypatch):
    monkeypatch.setattr(pdf, "MAX_CHARS", 30)
    page = parse_page(make_pdf(["a" * 20, "b" * 20, "c" * 20]), URL, PDF_TYPE)
    assert len(page.text) <= 30 and page.text.startswith("a" * 20) and "c" not in page.text


def test_a_pdf_locked_by_a_password_is_refused_and_one_locked_only_against_editing_is_read():
    body = make_pdf(["the protected text"])
    locked = parse_page(encrypted(body, "secret"), URL, PDF_TYPE)
    assert locked.error == "encrypted" and locked.text == ""
    assert parse_page(encrypted(body, ""), URL, PDF_TYPE).text == "the protected text"


def test_a_pdf_without_text_says_so():
    page = parse_page(make_pdf(["   "]), URL, PDF_TYPE)
    assert page.error == "no_text" and page.text == ""


def test_damaged_pdfs_never_raise_and_say_they_are_unparsable():
    body = make_pdf(["some text worth reading"], title="t", links=["http://a.test/"])
    damaged = [b"%PDF-1.4\n", b"%PDF-", body[: len(body) // 3], body.replace(b"/Pages", b"/Pagez")]
    damaged += [body[:i] + b"\xff\x00" + body[i + 2 :] for i in range(0, len(body), 37)]
    for sample in damaged:
        page = parse_page(sample, URL, PDF_TYPE)
        assert page.ok == bool(page.text), sample
        assert page.ok or page.error.startswith(("unparsable", "no_text", "encrypted")), page.error


def test_a_damaged_link_annotation_costs_the_links_not_the_text():
    body = make_pdf(["text that survives"], links=["http://a.test/"])
    page = parse_page(body.replace(b"/Annots [", b"/Annots [99 0 R "), URL, PDF_TYPE)
    assert page.text == "text that survives"
