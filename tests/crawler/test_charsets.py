"""Charsets: a page's words come out as its author wrote them, whichever way the charset is declared."""

from __future__ import annotations

from crawler.charsets import html_text, plain_text
from crawler.parse import parse_html, parse_page
from crawler.taxonomy import read_taxonomy
from tests.pdf_samples import make_pdf

URL = "http://example.org/page.html"
LATIN = "<html><head><title>Universität</title></head><body><p>Résumé of a naïve café</p></body></html>"


def test_a_charset_declared_only_in_the_http_header_is_honoured():
    page = parse_html(LATIN.encode("latin-1"), URL, headers={"content-type": "text/html; charset=ISO-8859-1"})
    assert page.title == "Universität"
    assert "Résumé of a naïve café" in page.text


def test_a_charset_declared_in_the_page_is_honoured():
    meta = '<meta http-equiv="Content-Type" content="text/html; charset=koi8-r">'
    body = LATIN.replace("<head>", "<head>" + meta)
    body = body.replace("Universität", "Привет")
    page = parse_html(body.encode("koi8-r", errors="replace"), URL)
    assert page.title == "Привет"


def test_the_http_header_outranks_the_page_and_a_byte_order_mark_outranks_both():
    body = LATIN.replace("<head>", '<head><meta charset="utf-8">').encode("latin-1")
    header = {"content-type": "text/html; charset=latin-1"}
    assert "naïve" in parse_html(body, URL, headers=header).text
    with_bom = b"\xef\xbb\xbf" + LATIN.encode("utf-8")
    assert parse_html(with_bom, URL, headers=header).title == "Universität"


def test_iso_8859_1_reads_as_windows_1252_as_in_browsers():
    # Servers label windows-1252 text (curly quotes, the euro sign) as ISO-8859-1; browsers read it so.
    body = "<p>the author\u2019s \u20ac5 book</p>".encode("cp1252")
    assert "the author\u2019s \u20ac5 book" in html_text(body, "text/html; charset=iso-8859-1")


def test_an_undeclared_page_that_is_not_utf8_reads_as_windows_1252():
    page = parse_html(LATIN.encode("cp1252"), URL)
    assert page.title == "Universität"
    assert "\ufffd" not in page.text


def test_an_undeclared_utf8_page_cut_inside_a_character_stays_utf8():
    body = "<p>Grüße aus Köln é</p>".encode()[:-1]  # the size limit cut the last character in two
    text = parse_html(body, URL).text
    assert "Grüße aus Köln" in text


def test_a_utf16_declaration_on_a_page_in_ascii_bytes_is_not_believed():
    body = LATIN.encode("utf-8")
    meta = body.replace(b"<head>", b'<head><meta charset="utf-16">')
    assert parse_html(meta, URL).title == "Universität"  # WHATWG: such a <meta> means UTF-8
    header = {"content-type": "text/html; charset=UTF-16LE"}  # a misconfigured server
    assert parse_html(body, URL, headers=header).title == "Universität"


def test_utf16_without_a_byte_order_mark_is_read_as_declared():
    body = LATIN.encode("utf-16-le")
    page = parse_html(body, URL, headers={"content-type": "text/html; charset=utf-16le"})
    assert page.title == "Universität"


def test_utf16_with_a_byte_order_mark_is_text_not_binary():
    page = parse_html(LATIN.encode("utf-16"), URL)
    assert page.error is None
    assert page.title == "Universität"


def test_plain_text_takes_the_header_charset_else_a_guess():
    body = "Grüße, café".encode("latin-1")
    assert plain_text(body, "text/plain; charset=latin-1") == "Grüße, café"
    assert plain_text(body, None) == "Grüße, café"
    assert plain_text(body, "text/plain; charset=utf-16") == "Grüße, café"  # bytes that cannot be UTF-16
    header = {"content-type": "text/plain; charset=latin-1"}
    assert parse_page(body, URL, "text/plain", header).text == "Grüße, café"


def test_plain_text_documents_in_an_imported_folder_keep_their_letters(tmp_path):
    topic = tmp_path / "Cooking"
    topic.mkdir()
    (topic / "notes.txt").write_bytes("Crème brûlée needs a café crème".encode("cp1252"))
    taxonomy = read_taxonomy(tmp_path)
    (document,) = [doc for doc in taxonomy.documents if doc.topic == "Cooking"]
    assert "Crème brûlée" in document.text


ESCAPES = "\x1b]0;owned\x07\x1b[2J\x9b31m"  # retitle the terminal, clear it; a C1 control sequence


def test_a_page_never_hands_on_terminal_escapes_in_its_title_text_or_links():
    html = f'<title>Hi{ESCAPES}</title><p>text{ESCAPES}</p><a href="/x" title="t{ESCAPES}">a{ESCAPES}</a>'
    page = parse_html(html.encode(), URL)
    (link,) = page.links
    for shown in (page.title, page.text, link.anchor_text, link.title):
        assert not any((ord(c) < 32 and c not in "\t\n\r\f") or 0x7F <= ord(c) <= 0x9F for c in shown), shown
    assert page.title.startswith("Hi ") and "owned" in page.title  # the words stay, the controls go


def test_plain_text_and_pdfs_never_hand_on_terminal_escapes():
    assert "\x1b" not in plain_text(f"a{ESCAPES}b".encode(), None)
    pdf = parse_page(make_pdf([f"Body{ESCAPES}text"], title=f"Title{ESCAPES}"), URL)
    assert pdf.error is None
    assert "\x1b" not in pdf.title and "\x07" not in pdf.title
    assert "\x1b" not in pdf.text
