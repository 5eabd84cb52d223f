"""The browsers' bookmark files, read into one folder tree (`BookmarkFolder`) for `crawler.taxonomy`.

- the Netscape HTML export every browser writes (Firefox, Chrome, Edge, Safari: "Export bookmarks");
- Chrome's, Edge's and other Chromium browsers' own `Bookmarks` file (JSON, in the browser profile), so a
  user can import without exporting;
- Firefox's JSON backups: "Backup…" in the Library window (`.json`) and the automatic ones the profile keeps
  in `bookmarkbackups/` (`.jsonlz4`, Mozilla's LZ4 framing, decompressed with the `lz4` package);
- Safari's `Bookmarks.plist` (binary or XML property list, read with the standard library's `plistlib`).

The browsers' own containers (toolbar, menu, "Other bookmarks", mobile) are marked `container`: the taxonomy
lifts their folders to the top. In the JSON and plist files they are known by their place in the file, not
their (translated) names. Positions (`line`) are line numbers in an HTML file and the ordinal of the item
(folder or bookmark, from 1, in file order) in the others; `unit` says which. Anything malformed raises
`TaxonomyError` naming the place; nothing here reads the network.
"""

from __future__ import annotations

import codecs
import json
import plistlib
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from crawler.charsets import html_text
from crawler.errors import TaxonomyError

BROWSER_CONTAINERS = frozenset(
    {
        "bookmarks toolbar",
        "bookmarks bar",
        "bookmarks menu",
        "other bookmarks",
        "mobile bookmarks",
        "favorites bar",
        "other favorites",
    }
)
CONTAINER_ATTRIBUTES = ("personal_toolbar_folder", "unfiled_bookmarks_folder")
DOCTYPE = "netscape-bookmark-file-1"
MOZLZ4_MAGIC = b"mozLz40\0"
MAX_DEPTH = 64  # folders within folders: a deeper file is refused, not walked into a RecursionError
MAX_DECOMPRESSED = 256 * 1024 * 1024  # a .jsonlz4 header claiming more is not a bookmarks backup
SAFARI_CONTAINERS = frozenset({"BookmarksBar", "BookmarksMenu", "com.apple.ReadingList"})
FIREFOX_FOLDER, FIREFOX_BOOKMARK = "text/x-moz-place-container", "text/x-moz-place"
SAFARI_LIST, SAFARI_LEAF = "WebBookmarkTypeList", "WebBookmarkTypeLeaf"
CHROMIUM_ROOTS = frozenset({"bookmark_bar", "other", "synced"})  # beside them: meta_info, sync versions


@dataclass
class BookmarkFolder:
    name: str
    line: int
    container: bool = False
    folders: list[BookmarkFolder] = field(default_factory=list)
    bookmarks: list[tuple[str, str, int]] = field(default_factory=list)  # (url, title, line)


@dataclass
class BookmarkTree:
    """A file's folder tree; `unit` names what its positions count ("line" or "item")."""

    root: BookmarkFolder
    unit: str = "line"


def read_bookmark_tree(raw: bytes, name: str) -> BookmarkTree:
    """The folder tree of a bookmarks file of any of the formats above, told apart by their content."""
    if raw.startswith(MOZLZ4_MAGIC):
        return BookmarkTree(json_tree(json_document(decompress_mozlz4(raw, name), name), name), "item")
    if raw.startswith(b"bplist") or b"<!DOCTYPE plist" in raw[:512]:
        return BookmarkTree(safari_tree(plist_document(raw, name), name), "item")
    if raw.removeprefix(codecs.BOM_UTF8).lstrip(b" \t\r\n").startswith(b"{"):  # JSON is UTF-8
        text = raw.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
        return BookmarkTree(json_tree(json_document(text, name), name), "item")
    # An older browser's export may be in the system's code page, named in its <META> (or not at all)
    text = html_text(raw, None).lstrip("\ufeff \t\r\n")
    return BookmarkTree(parse_netscape(text, name), "line")


# --- Netscape HTML ------------------------------------------------------------------------------------


def parse_netscape(text: str, name: str) -> BookmarkFolder:
    """The folder tree of a Netscape bookmark file's text (positions are line numbers)."""
    parser = _NetscapeParser(name)
    parser.feed(text)
    return parser.finish()


class _NetscapeParser(HTMLParser):
    """Tokenises the Netscape format (unclosed <DT> and <p> are fine) and checks the <DL> nesting."""

    def __init__(self, name: str) -> None:
        super().__init__(convert_charrefs=True)
        self.name = name
        self.root: BookmarkFolder | None = None
        self.stack: list[BookmarkFolder] = []
        self.pending: BookmarkFolder | None = None  # a <H3> heading waiting for its <DL>
        self.capture: str | None = None  # "h3" or "a" while inside one
        self.text: list[str] = []
        self.href: str | None = None
        self.capture_line = 0
        self.doctype = False
        self.container_attr = False

    def fail(self, message: str, line: int | None = None) -> TaxonomyError:
        return TaxonomyError(f"{self.name}:{line or self.getpos()[0]}: {message}")

    def handle_decl(self, decl: str) -> None:
        if decl.strip().lower().startswith("doctype") and DOCTYPE in decl.lower():
            self.doctype = True

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        line = self.getpos()[0]
        if tag in ("h3", "a") and self.capture is not None:
            raise self.fail(
                f"<{tag.upper()}> inside the unclosed <{self.capture.upper()}> of line {self.capture_line}"
            )
        if tag == "dl":
            self._open_list(line)
        elif tag == "h3":
            self._close_pending()
            self.capture, self.capture_line, self.text = "h3", line, []
            self.container_attr = any(name in CONTAINER_ATTRIBUTES for name, _ in attrs)
        elif tag == "a":
            self._close_pending()
            if not self.stack:
                raise self.fail("a bookmark <A> outside any <DL> list")
            self.href = dict(attrs).get("href")
            if not self.href:
                raise self.fail("a bookmark <A> without an HREF attribute")
            self.capture, self.capture_line, self.text = "a", line, []

    def _open_list(self, line: int) -> None:
        if len(self.stack) > MAX_DEPTH:
            raise self.fail(f"folders nested more than {MAX_DEPTH} deep")
        if self.pending is not None:
            self.stack[-1].folders.append(self.pending)
            self.stack.append(self.pending)
            self.pending = None
        elif self.root is None:
            self.root = BookmarkFolder("", line)
            self.stack.append(self.root)
        else:
            raise self.fail("a <DL> list that no folder heading <H3> introduces")

    def _close_pending(self) -> None:
        """A heading followed directly by another item is an empty folder."""
        if self.pending is not None:
            self.stack[-1].folders.append(self.pending)
            self.pending = None

    def handle_endtag(self, tag: str) -> None:
        if tag == "dl":
            self._close_pending()
            if not self.stack:
                raise self.fail("</DL> without a matching <DL>")
            self.stack.pop()
        elif tag in ("h3", "a"):
            if self.capture != tag:
                raise self.fail(f"</{tag.upper()}> without a matching <{tag.upper()}>")
            text = " ".join("".join(self.text).split())
            self.capture = None
            if tag == "h3":
                if not self.stack:
                    raise self.fail("a folder <H3> outside any <DL> list", self.capture_line)
                if not text:
                    raise self.fail("a folder <H3> without a name", self.capture_line)
                self.pending = BookmarkFolder(text, self.capture_line, self.container_attr)
            else:
                assert self.href is not None
                self.stack[-1].bookmarks.append((self.href.strip(), text, self.capture_line))

    def handle_data(self, data: str) -> None:
        if self.capture is not None:
            self.text.append(data)

    def finish(self) -> BookmarkFolder:
        self.close()
        if not self.doctype:
            raise TaxonomyError(
                f"{self.name}:1: not a bookmarks file: no <!DOCTYPE NETSCAPE-Bookmark-file-1> (an HTML "
                "export), and not a Chrome or Edge Bookmarks file, a Firefox backup (.json, .jsonlz4) "
                "or Safari's Bookmarks.plist"
            )
        if self.capture is not None:
            raise self.fail(f"<{self.capture.upper()}> is never closed", self.capture_line)
        if self.root is None:
            raise self.fail("no <DL> list of bookmarks in the file")
        if self.stack:
            folder = self.stack[-1]
            what = f"folder {folder.name!r}" if folder.name else "the top-level list"
            raise self.fail(f"the <DL> list of {what} is never closed with </DL>", folder.line)
        return self.root


# --- JSON: Chromium's Bookmarks file and Firefox's backups ---------------------------------------------


def decompress_mozlz4(raw: bytes, name: str) -> str:
    """The JSON text of a Firefox `.jsonlz4` backup: the magic, the size (4 bytes, little-endian), an LZ4
    block."""
    import lz4.block

    if len(raw) < len(MOZLZ4_MAGIC) + 4:
        raise TaxonomyError(f"{name}: a truncated .jsonlz4 file")
    (size,) = struct.unpack("<I", raw[len(MOZLZ4_MAGIC) : len(MOZLZ4_MAGIC) + 4])
    if size > MAX_DECOMPRESSED:
        raise TaxonomyError(f"{name}: the .jsonlz4 header claims {size} bytes, more than a bookmarks backup")
    try:
        return lz4.block.decompress(raw[len(MOZLZ4_MAGIC) :]).decode("utf-8", errors="replace")
    except lz4.block.LZ4BlockError as exc:
        raise TaxonomyError(f"{name}: a damaged .jsonlz4 file ({exc})") from exc


def json_document(text: str, name: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        where = f"{exc.lineno}:{exc.colno}" if isinstance(exc, json.JSONDecodeError) else "1"
        raise TaxonomyError(f"{name}:{where}: not valid JSON ({exc})") from exc


def json_tree(document: Any, name: str) -> BookmarkFolder:
    """The folder tree of Chromium's `Bookmarks` ({"roots": {...}}) or a Firefox backup (a places root)."""
    counter = _Ordinal()
    if isinstance(document, dict) and isinstance(document.get("roots"), dict):
        root = BookmarkFolder("", 0)
        for key, node in document["roots"].items():
            if isinstance(node, dict) and node.get("type") == "folder":  # bar, other, synced (mobile)
                root.folders.append(_chromium_folder(node, name, counter, 1, container=True))
            elif key in CHROMIUM_ROOTS:
                raise TaxonomyError(
                    f'{name}: item {counter.next()}: the root {key!r} is not a folder (no "type": "folder")'
                )
        return root
    if isinstance(document, dict) and document.get("type") == FIREFOX_FOLDER:
        return _firefox_folder(document, name, counter, 0)
    raise TaxonomyError(
        f'{name}: JSON, but neither a Chrome/Edge Bookmarks file (no "roots") nor a Firefox bookmarks '
        "backup (no places root)"
    )


class _Ordinal:
    """Numbers the items of a tree in file order, from 1."""

    def __init__(self) -> None:
        self.last = 0

    def next(self) -> int:
        self.last += 1
        return self.last


def _children(
    node: dict[str, Any], key: str, name: str, position: int, depth: int
) -> Iterator[dict[str, Any]]:
    if depth > MAX_DEPTH:
        raise TaxonomyError(f"{name}: item {position}: folders nested more than {MAX_DEPTH} deep")
    children = node.get(key, [])
    if not isinstance(children, list):
        raise TaxonomyError(f"{name}: item {position}: {key!r} is not a list")
    for child in children:
        if not isinstance(child, dict):
            raise TaxonomyError(f"{name}: item {position}: a child that is not an object")
        yield child


def _text(node: dict[str, Any], key: str) -> str:
    value = node.get(key)
    return " ".join(value.split()) if isinstance(value, str) else ""


def _url(node: dict[str, Any], key: str, name: str, position: int) -> str:
    """A bookmark's address; one that is missing or not text makes the file malformed (it was skipped as
    `''`, and its topic was imported without that training document)."""
    value = node.get(key)
    if key not in node:
        raise TaxonomyError(f"{name}: item {position}: a bookmark without an address ({key!r})")
    if not isinstance(value, str):
        shown = repr(value)[:40]
        raise TaxonomyError(
            f"{name}: item {position}: a bookmark whose address ({key!r}) is {shown}, not text"
        )
    return value.strip()


def _bookmark(
    node: dict[str, Any], url_key: str, title: str, name: str, counter: _Ordinal
) -> tuple[str, str, int]:
    """(url, title, position) of a bookmark item, numbered in file order."""
    position = counter.next()
    return _url(node, url_key, name, position), title, position


def _chromium_folder(
    node: dict[str, Any], name: str, counter: _Ordinal, depth: int, container: bool = False
) -> BookmarkFolder:
    folder = BookmarkFolder(_text(node, "name"), counter.next(), container)
    for child in _children(node, "children", name, folder.line, depth):
        kind = child.get("type")
        if kind == "folder":
            folder.folders.append(_chromium_folder(child, name, counter, depth + 1))
        elif kind == "url":
            folder.bookmarks.append(_bookmark(child, "url", _text(child, "name"), name, counter))
        else:
            raise TaxonomyError(f"{name}: item {counter.next()}: an entry of unknown type {kind!r}")
    return folder


def _firefox_folder(node: dict[str, Any], name: str, counter: _Ordinal, depth: int) -> BookmarkFolder:
    """Firefox marks its own containers (menu, toolbar, unfiled, mobile, and the places root) with "root"."""
    folder = BookmarkFolder(_text(node, "title"), counter.next(), container="root" in node)
    for child in _children(node, "children", name, folder.line, depth):
        kind = child.get("type")
        if kind == FIREFOX_FOLDER:
            folder.folders.append(_firefox_folder(child, name, counter, depth + 1))
        elif kind == FIREFOX_BOOKMARK:
            folder.bookmarks.append(_bookmark(child, "uri", _text(child, "title"), name, counter))
        else:
            counter.next()  # separators and other places: nothing to learn from
    return folder


# --- Safari's property list ----------------------------------------------------------------------------


def plist_document(raw: bytes, name: str) -> Any:
    try:
        return plistlib.loads(raw)
    except Exception as exc:  # plistlib raises InvalidFileException, ValueError, ExpatError, ...
        raise TaxonomyError(f"{name}: a damaged property list ({type(exc).__name__}: {exc})") from exc


def safari_tree(document: Any, name: str) -> BookmarkFolder:
    """Safari's Bookmarks.plist: lists (folders) and leaves; its bar, menu and reading list are containers,
    the History proxy is left out."""
    if not isinstance(document, dict) or document.get("WebBookmarkType") != SAFARI_LIST:
        raise TaxonomyError(f"{name}: a property list, but not Safari's Bookmarks.plist")
    return _safari_folder(document, name, _Ordinal(), 0)


def _safari_folder(node: dict[str, Any], name: str, counter: _Ordinal, depth: int) -> BookmarkFolder:
    title = _text(node, "Title")
    folder = BookmarkFolder(title, counter.next(), container=title in SAFARI_CONTAINERS)
    for child in _children(node, "Children", name, folder.line, depth):
        kind = child.get("WebBookmarkType")
        if kind == SAFARI_LIST:
            folder.folders.append(_safari_folder(child, name, counter, depth + 1))
        elif kind == SAFARI_LEAF:
            titles = child.get("URIDictionary")
            title = _text(titles, "title") if isinstance(titles, dict) else ""
            folder.bookmarks.append(_bookmark(child, "URLString", title, name, counter))
        else:
            counter.next()  # the History proxy
    return folder
