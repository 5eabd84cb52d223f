"""How a fetched body's bytes become text, in the order a browser reads them: a byte-order mark, the charset
of the HTTP Content-Type header, the page's own `<meta charset>` (or `http-equiv`, or XML declaration), and
only then a guess. w3lib (Scrapy's decoder) does the reading, with the WHATWG label aliases browsers use
("iso-8859-1" decodes as windows-1252), rather than a hand-written sniffer.

Many servers declare a legacy charset in the header alone; a parser left to guess from the bytes turns
every accented letter of such a page into U+FFFD, and its words into fragments the classifier and the index
then learn.

The text never holds control characters: a page titled "\x1b]0;...\x07" or with "\x1b[2J" in its text
would otherwise retitle or clear the terminal of whoever runs `topicswarm search` or `show` on it. They
become spaces (tabs and line breaks stay), as a peer's text does in `p2p.value_checks.shown_text`."""

from __future__ import annotations

import codecs
import re

from w3lib.encoding import html_to_unicode, http_content_type_encoding, read_bom, to_unicode

# What an undeclared page is read as when its bytes are not UTF-8: the Web's legacy default, which browsers
# fall back to in most locales and which decodes nearly every byte.
LEGACY_DEFAULT = "cp1252"
_WIDE_SNIFF = 1024  # bytes looked at for the zero bytes UTF-16 and UTF-32 markup cannot lack
_CONTROLS = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")  # C0 but tab, line feed, form feed and CR; C1


def html_text(body: bytes, content_type_header: str | None) -> str:
    """An HTML (or XHTML) body as text; undecodable bytes become U+FFFD, never an error."""
    encoding, text = html_to_unicode(content_type_header or None, body, auto_detect_fun=undeclared_encoding)
    if _cannot_be(encoding, body):  # WHATWG: a <meta> naming UTF-16 means UTF-8
        text = to_unicode(body, undeclared_encoding(body))
    return without_controls(text)


def plain_text(body: bytes, content_type_header: str | None) -> str:
    """A text/plain body as text: its byte-order mark, else the header's charset, else a guess (plain
    text has no markup to declare a charset in)."""
    bom_encoding, bom = read_bom(body)
    if bom_encoding is not None:
        return without_controls(to_unicode(body[len(bom) :], bom_encoding))
    declared = http_content_type_encoding(content_type_header or None)
    if declared is None or _cannot_be(declared, body):
        declared = undeclared_encoding(body)
    return without_controls(to_unicode(body, declared))


def without_controls(text: str) -> str:
    """`text` with its control characters as spaces, tabs and line breaks kept (see the module)."""
    return _CONTROLS.sub(" ", text) if _CONTROLS.search(text) else text


def _cannot_be(encoding: str, body: bytes) -> bool:
    """A declared UTF-16 or UTF-32 that the bytes belie: such text has zero bytes in its first characters
    (markup, or any Latin letter), so without them the declaration is wrong (a server's misconfiguration),
    and the page would come out as CJK-looking noise."""
    return _is_wide(encoding) and read_bom(body)[0] is None and b"\x00" not in body[:_WIDE_SNIFF]


def undeclared_encoding(body: bytes) -> str:
    """UTF-8 where the bytes decode as it (ASCII included; a character cut off at the end, as in a body
    truncated at the size limit, does not count against it), else the legacy default."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(body, final=False)
    except UnicodeDecodeError:
        return LEGACY_DEFAULT
    return "utf-8"


def _is_wide(encoding: str) -> bool:
    return encoding.lower().replace("_", "-").startswith(("utf-16", "utf-32"))


def may_hold_zero_bytes(body: bytes, content_type_header: str | None) -> bool:
    """Text whose zero bytes are no sign of binary data: UTF-16 or UTF-32, by a byte-order mark or by the
    header's charset (a UTF-16 page need not start with a mark)."""
    if read_bom(body)[0] is not None:
        return True
    declared = http_content_type_encoding(content_type_header or None)
    return declared is not None and _is_wide(declared)
