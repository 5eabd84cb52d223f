"""PDF documents: their text, title and link annotations, read with pypdf.

Topics live in PDFs too (papers, manuals, specifications, standards); BINGO! found that reading them
"improves the crawling recall and the quality of the classifier's training set by a substantial margin"
(thesis 2.3.3). pypdf is pure Python and bounds what a hostile file can make it decompress; this module
bounds the rest (`MAX_PAGES`, `MAX_CHARS`, `MAX_SECONDS`). A damaged, password-protected or image-only PDF
yields an empty page whose `error` says why, as malformed HTML does, and never raises.
"""

from __future__ import annotations

import logging
import time
from io import BytesIO
from typing import Any

from pypdf import PdfReader
from pypdf.generic import ArrayObject, DictionaryObject

from crawler.charsets import without_controls
from crawler.parse import Link, ParsedPage, normalize_url

MAX_PAGES = 200  # pages read; a longer document is classified by its first ones
MAX_CHARS = 1_000_000  # characters of text kept
MAX_LINKS = 1_000  # link annotations kept
MAX_TITLE = 200  # characters of a title taken from the first line
MAX_SECONDS = 10.0  # reading stops at the first page boundary past this (parsing blocks a crawl batch)

# pypdf logs every repaired cross-reference table and odd font as a warning; a crawl meets thousands of them.
logging.getLogger("pypdf").setLevel(logging.ERROR)


def parse_pdf(body: bytes, url: str) -> ParsedPage:
    """A PDF's text (its first `MAX_PAGES` pages), title (its metadata's, else its first line) and the
    web links of its link annotations."""
    try:
        return _read(body, url)
    except RecursionError:
        return ParsedPage(url=url, base_url=url, error="unparsable: nested too deep")
    except Exception as exc:  # pypdf raises many kinds of error on damaged files: never crash a crawl
        return ParsedPage(url=url, base_url=url, error=f"unparsable: {type(exc).__name__}")


def _read(body: bytes, url: str) -> ParsedPage:
    reader = PdfReader(BytesIO(body), strict=False)
    if reader.is_encrypted and not _opens_without_password(reader):
        return ParsedPage(url=url, base_url=url, error="encrypted")
    parts: list[str] = []
    links: list[Link] = []
    length = 0
    deadline = time.monotonic() + MAX_SECONDS
    for page in reader.pages[:MAX_PAGES]:
        raw = without_controls(page.extract_text() or "")
        lines = (" ".join(line.split()) for line in raw.splitlines())
        text = "\n".join(line for line in lines if line)
        if text:
            parts.append(text[: MAX_CHARS - length])
            length += len(parts[-1]) + 1
        if len(links) < MAX_LINKS:
            links.extend(_page_links(page, url)[: MAX_LINKS - len(links)])
        if length >= MAX_CHARS or time.monotonic() > deadline:
            break
    text = "\n".join(parts)
    if not text:
        return ParsedPage(url=url, base_url=url, links=tuple(links), error="no_text")
    title = _title(reader) or text.split("\n", 1)[0][:MAX_TITLE]
    return ParsedPage(url=url, base_url=url, title=title, text=text, links=tuple(links))


def _opens_without_password(reader: PdfReader) -> bool:
    """Many PDFs are encrypted only against editing, with an empty password for reading."""
    try:
        return bool(reader.decrypt(""))
    except Exception:  # an unsupported cipher (AES needs the optional `cryptography`)
        return False


def _title(reader: PdfReader) -> str:
    metadata = reader.metadata
    title = metadata.title if metadata is not None else None
    return " ".join(without_controls(str(title)).split())[:MAX_TITLE] if title else ""


def _page_links(page: Any, base: str) -> list[Link]:
    """The page's link annotations to web addresses (a PDF has no DOM: no anchor text or leaves). A
    damaged annotation costs the page's links, never the document's text."""
    try:
        annotations = page.get("/Annots")
        annotations = annotations.get_object() if annotations is not None else None
        if not isinstance(annotations, ArrayObject):
            return []
        targets = [_link_target(a.get_object()) for a in annotations[:MAX_LINKS]]
    except Exception:
        return []
    links = []
    for target in targets:
        resolved = normalize_url(target.strip(), base) if target else None  # web addresses only
        if resolved:
            links.append(Link(resolved, "", "pdf", 0, 0))
    return links


def _link_target(annotation: Any) -> str | None:
    if not isinstance(annotation, DictionaryObject) or annotation.get("/Subtype") != "/Link":
        return None
    action = annotation.get("/A")
    action = action.get_object() if action is not None else None
    target = action.get("/URI") if isinstance(action, DictionaryObject) else None
    return str(target) if isinstance(target, str) else None
