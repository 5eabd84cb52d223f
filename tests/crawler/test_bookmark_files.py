"""Every browser's bookmark file imports as the same topics: the HTML exports, Chromium's `Bookmarks` JSON,
Firefox's JSON backups (plain and .jsonlz4) and Safari's Bookmarks.plist; broken ones are refused by name."""

from __future__ import annotations

import json
import plistlib
import struct
from pathlib import Path

import lz4.block
import pytest

from crawler.bookmark_files import MAX_DEPTH, MOZLZ4_MAGIC
from crawler.taxonomy import (
    NEGATIVE,
    POSITIVE,
    Taxonomy,
    TaxonomyError,
    TrainingDocument,
    bookmarks_html,
    netscape_html,
    parse_bookmarks,
    read_bookmarks,
    read_taxonomy,
)

FIXTURES = Path(__file__).parent / "fixtures"


def documents(taxonomy) -> set[tuple[str, int, str, str]]:
    return {(d.topic, d.polarity, d.url, d.title) for d in taxonomy.documents}


def mozlz4(text: str) -> bytes:
    """Firefox's .jsonlz4 framing: the magic, then an LZ4 block led by its size (4 bytes, little-endian)."""
    return MOZLZ4_MAGIC + lz4.block.compress(text.encode("utf-8"))


def test_chrome_profile_bookmarks_file_gives_the_topics_of_its_html_export():
    from_json = read_bookmarks(FIXTURES / "chrome-Bookmarks.json")
    from_html = read_bookmarks(FIXTURES / "chrome-bookmarks.html")
    assert from_json.topics == from_html.topics
    assert documents(from_json) == documents(from_html)
    assert any("Hacker News" in s and "in no folder" in s for s in from_json.skipped)
    assert any("javascript:" in s for s in from_json.skipped)


def test_firefox_json_backup_gives_the_topics_of_its_html_export():
    from_json = read_bookmarks(FIXTURES / "firefox-bookmarks-2024-05-06.json")
    from_html = read_bookmarks(FIXTURES / "firefox-bookmarks.html")
    assert from_json.topics == from_html.topics
    assert documents(from_json) == documents(from_html)
    # the menu's place: query and the toolbar's loose bookmark are skipped, each with its item number
    assert any(s.startswith("item ") and "Recently Bookmarked" in s for s in from_json.skipped)
    assert any("Getting Started" in s for s in from_json.skipped)


def test_firefox_automatic_jsonlz4_backup_imports_without_exporting(tmp_path):
    backup = tmp_path / "bookmarks-2024-05-06_52_AbCdEf==.jsonlz4"
    backup.write_bytes(mozlz4((FIXTURES / "firefox-bookmarks-2024-05-06.json").read_text(encoding="utf-8")))
    taxonomy = read_taxonomy(backup)
    assert documents(taxonomy) == documents(read_bookmarks(FIXTURES / "firefox-bookmarks.html"))


def test_safari_plist_lifts_bar_and_menu_keeps_top_level_folders_and_skips_the_reading_list(tmp_path):
    xml = read_bookmarks(FIXTURES / "safari-Bookmarks.plist")
    assert xml.topics == ("Databases", "Databases/Query Optimisation", "Sysadmin")
    assert ("", NEGATIVE, "https://www.bbc.com/sport", "BBC Sport") in documents(xml)
    assert (
        "Databases",
        POSITIVE,
        "https://www.sqlite.org/lang_select.html",
        "SELECT \u2013 SQLite",
    ) in documents(xml)
    assert any("A long read" in s for s in xml.skipped)
    binary = tmp_path / "Bookmarks.plist"  # Safari writes the binary form
    binary.write_bytes(plistlib.dumps(plistlib.loads((FIXTURES / "safari-Bookmarks.plist").read_bytes())))
    assert documents(read_bookmarks(binary)) == documents(xml)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"roots": {"bookmark_bar": {"type": "folder", "children": [1, 2]}}}', "not an object"),
        (b'{"roots": {"bookmark_bar": {"type": "folder", "children": {"a": 1}}}}', "is not a list"),
        (b'{"roots": {"bookmark_bar": {"type": "folder", "children": [{"type": "app"}]}}}', "unknown type"),
        (b'{"version": 1}', "neither a Chrome/Edge Bookmarks file"),
        (
            b'{"roots": {"bookmark_bar": {"type": "folder",\n "children": [}}}',
            r"\.json:2:\d+: not valid JSON",
        ),
        (b'{"a":' * 100_000, "not valid JSON"),
        (MOZLZ4_MAGIC + b"\x01", "truncated"),
        (MOZLZ4_MAGIC + struct.pack("<I", 2**31) + b"\0" * 16, "claims 2147483648 bytes"),
        (MOZLZ4_MAGIC + struct.pack("<I", 100) + b"\xff" * 16, "damaged .jsonlz4"),
        (b"bplist00\x00\x01garbage", "damaged property list"),
        (plistlib.dumps({"Children": []}), "not Safari's Bookmarks.plist"),
    ],
    ids=lambda value: value[:24].decode("latin-1") if isinstance(value, bytes) else value,
)
def test_a_broken_bookmarks_file_is_refused_with_what_is_wrong(tmp_path, content, message):
    path = tmp_path / "bookmarks.json"
    path.write_bytes(content)
    with pytest.raises(TaxonomyError, match=message):
        read_taxonomy(path)


def chrome_bar(bookmark: dict) -> dict:
    """A Chrome Bookmarks document: one folder, Databases, on the bar, holding `bookmark`."""
    folder = {"type": "folder", "name": "Databases", "children": [bookmark]}
    return {"roots": {"bookmark_bar": {"type": "folder", "name": "Bookmarks bar", "children": [folder]}}}


def firefox_menu(bookmark: dict) -> dict:
    folder = {"type": "text/x-moz-place-container", "title": "Databases", "children": [bookmark]}
    return {"type": "text/x-moz-place-container", "root": "placesRoot", "children": [folder]}


def safari_bar(leaf: dict) -> dict:
    folder = {"WebBookmarkType": "WebBookmarkTypeList", "Title": "Databases", "Children": [leaf]}
    return {"WebBookmarkType": "WebBookmarkTypeList", "Children": [folder]}


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        (
            "Bookmarks",
            json.dumps(chrome_bar({"type": "url", "name": "pg", "url": 5})).encode(),
            r"Bookmarks: item 3: a bookmark whose address \('url'\) is 5, not text",
        ),
        (
            "Bookmarks",
            json.dumps(chrome_bar({"type": "url", "name": "pg"})).encode(),
            r"Bookmarks: item 3: a bookmark without an address \('url'\)",
        ),
        (
            "Bookmarks",
            json.dumps({"roots": {"bookmark_bar": {"name": "Bookmarks bar", "children": []}}}).encode(),
            "Bookmarks: item 1: the root 'bookmark_bar' is not a folder",
        ),
        (
            "bookmarks.json",
            json.dumps(firefox_menu({"type": "text/x-moz-place", "title": "pg", "uri": None})).encode(),
            r"item 3: a bookmark whose address \('uri'\) is None",
        ),
        (
            "Bookmarks.plist",
            plistlib.dumps(safari_bar({"WebBookmarkType": "WebBookmarkTypeLeaf", "URLString": 5})),
            r"item 3: a bookmark whose address \('URLString'\) is 5",
        ),
    ],
    ids=["url-a-number", "url-missing", "root-without-type", "firefox-uri-null", "safari-url-a-number"],
)
def test_a_bookmark_or_root_folder_of_the_wrong_shape_is_refused_with_its_item_number(
    tmp_path, name, content, message
):
    """Such a bookmark was skipped as "'' is not a web page" and its topic imported without it; such a root
    was passed over, and the file refused as having "no topic folders"."""
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(TaxonomyError, match=message):
        read_taxonomy(path)


def test_chromes_own_entries_beside_the_root_folders_are_not_folders_to_import(tmp_path):
    path = tmp_path / "Bookmarks"
    document = chrome_bar({"type": "url", "name": "pg", "url": "https://www.postgresql.org/"})
    document["roots"] |= {"meta_info": {"last_visited": "13359910307"}, "sync_transaction_version": "7"}
    path.write_text(json.dumps(document), encoding="utf-8")
    assert documents(read_taxonomy(path)) == {("Databases", POSITIVE, "https://www.postgresql.org/", "pg")}


def test_bookmarks_outside_every_folder_leave_no_topic_in_json_either(tmp_path):
    path = tmp_path / "Bookmarks"
    bar = {
        "type": "folder",
        "name": "Bookmarks bar",
        "children": [{"type": "url", "name": "a", "url": "https://a/"}],
    }
    path.write_text(json.dumps({"roots": {"bookmark_bar": bar}}), encoding="utf-8")
    with pytest.raises(TaxonomyError, match="no topic folders"):
        read_taxonomy(path)


@pytest.mark.parametrize(
    ("browser_file", "html_export"),
    [
        ("chrome-Bookmarks.json", "chrome-bookmarks.html"),
        ("firefox-bookmarks-2024-05-06.json", "firefox-bookmarks.html"),
    ],
)
def test_any_browsers_file_becomes_the_html_the_demo_and_scenarios_split(browser_file, html_export):
    text = bookmarks_html(FIXTURES / browser_file)
    assert text.startswith("<!DOCTYPE NETSCAPE-Bookmark-file-1>")
    again, export = parse_bookmarks(text), read_bookmarks(FIXTURES / html_export)
    assert again.topics == export.topics
    assert documents(again) == documents(export)


def test_an_html_export_is_handed_on_as_it_is():
    path = FIXTURES / "firefox-bookmarks.html"
    assert bookmarks_html(path) == path.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "head",
    ['<META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=windows-1252">\n', ""],
    ids=["declared", "undeclared"],
)
def test_an_export_in_a_legacy_code_page_keeps_its_folder_names(tmp_path, head):
    # Older browsers wrote the export in the system's code page, not UTF-8
    export = (
        f"<!DOCTYPE NETSCAPE-Bookmark-file-1>\n{head}<DL><p>\n<DT><H3>Küche</H3>\n<DL><p>\n"
        '<DT><A HREF="http://example.org/crème">Crème brûlée</A>\n</DL><p>\n</DL><p>\n'
    )
    path = tmp_path / "bookmarks.html"
    path.write_bytes(export.encode("cp1252"))
    taxonomy = read_bookmarks(path)
    assert taxonomy.topics == ("Küche",)
    assert {d.title for d in taxonomy.documents} == {"Crème brûlée"}
    assert "Küche" in bookmarks_html(path)


def test_netscape_html_escapes_what_html_would_read_as_markup():
    title, url = 'Joins <& "outer"> joins', "https://example.org/q?a=1&b=<2>"
    document = TrainingDocument("A/B", POSITIVE, url=url, title=title)
    again = parse_bookmarks(netscape_html(Taxonomy(("A", "A/B"), (document,), "tricky")))
    assert again.topics == ("A", "A/B")
    assert documents(again) == {("A/B", POSITIVE, url, title)}


def nested_html(depth: int) -> bytes:
    head = "<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL><p>\n" + "<DT><H3>a</H3>\n<DL><p>\n" * depth
    return (head + '<DT><A HREF="https://a/">a</A>\n' + "</DL><p>\n" * (depth + 1)).encode()


def nested_chrome(depth: int) -> bytes:
    node: dict = {"type": "url", "name": "a", "url": "https://a/"}
    for _ in range(depth):
        node = {"type": "folder", "name": "a", "children": [node]}
    return json.dumps({"roots": {"bookmark_bar": node}}).encode()


def nested_safari(depth: int) -> bytes:
    leaf = "<dict><key>URLString</key><string>https://a/</string>"
    leaf += "<key>WebBookmarkType</key><string>WebBookmarkTypeLeaf</string></dict>"
    folder = "<dict><key>Title</key><string>a</string><key>WebBookmarkType</key>"
    folder += "<string>WebBookmarkTypeList</string><key>Children</key><array>"
    body = folder * depth + leaf + "</array></dict>" * depth
    return (
        '<?xml version="1.0"?>\n<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "x">\n'
        f'<plist version="1.0">{body}</plist>'
    ).encode()


@pytest.mark.parametrize("nested", [nested_html, nested_chrome, nested_safari])
def test_folders_nested_past_the_limit_are_refused_and_within_it_imported(tmp_path, nested):
    path = tmp_path / "bookmarks"
    path.write_bytes(nested(3000 if nested is nested_html else 300))
    with pytest.raises(TaxonomyError, match=f"nested more than {MAX_DEPTH} deep"):
        read_taxonomy(path)
    path.write_bytes(nested(MAX_DEPTH - 2))
    assert len(read_taxonomy(path).topics) >= MAX_DEPTH - 3
