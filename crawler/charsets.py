"""How a fetched body's bytes become text, in the order a browser reads them: a byte-order mark, the charset
of the HTTP Content-Type header, the page's own `<meta charset>` (or `http-equiv`, or XML declaration), and
only then a guess. w3lib (Scrapy's decoder) does the reading, with the WHATWG label aliases browsers use
("iso-8859-1" decodes as windows-1252), rather than a hand-written sniffer.

Many servers declare a legacy charset in the header alone; a parser left to guess from the bytes turns
every accented letter of such a page into U+FFFD, and its words into fragments the classifier and the index
then learn."""

from __future__ import annotations

import codecs

from w3lib.encoding import html_to_unicode, http_content_type_encoding, read_bom, to_unicode

# What an undeclared page is read as when its bytes are not UTF-8: the Web's legacy default, which browsers
# fall back to in most locales and which decodes nearly every byte.
LEGACY_DEFAULT = "cp1252"


def html_text(body: bytes, content_type_header: str | None) -> str:
    """An HTML (or XHTML) body as text; undecodable bytes become U+FFFD, never an error."""
    return html_to_unicode(content_type_header or None, body, auto_detect_fun=undeclared_encoding)[1]


def plain_text(body: bytes, content_type_header: str | None) -> str:
    """A text/plain body as text: its byte-order mark, else the header's charset, else a guess (plain
    text has no markup to declare a charset in)."""
    bom_encoding, bom = read_bom(body)
    if bom_encoding is not None:
        return to_unicode(body[len(bom) :], bom_encoding)
    declared = http_content_type_encoding(content_type_header or None)
    return to_unicode(body, declared or undeclared_encoding(body))


def undeclared_encoding(body: bytes) -> str:
    """UTF-8 where the bytes decode as it (ASCII included; a character cut off at the end, as in a body
    truncated at the size limit, does not count against it), else the legacy default."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(body, final=False)
    except UnicodeDecodeError:
        return LEGACY_DEFAULT
    return "utf-8"


def has_unicode_bom(body: bytes) -> bool:
    """A UTF-8, UTF-16 or UTF-32 byte-order mark: text however many zero bytes UTF-16 puts in it."""
    return read_bom(body)[0] is not None
