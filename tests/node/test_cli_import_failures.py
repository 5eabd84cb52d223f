"""`topicswarm topics import` says why bookmarked pages were not fetched and what to do about it."""

from __future__ import annotations

from node.cli import main
from node.cli.topics import fetch_failure_advice

UNREACHABLE = """<!DOCTYPE NETSCAPE-Bookmark-file-1>
<TITLE>Bookmarks</TITLE>
<DL><p>
    <DT><H3>Databases</H3>
    <DL><p>
        <DT><A HREF="http://127.0.0.1:9/a.html">A</A>
        <DT><A HREF="http://127.0.0.1:9/b.html">B</A>
    </DL><p>
</DL><p>
"""
QUICK = "[crawler]\nretry_times = 0\ndownload_timeout = 2.0\nrobotstxt_defer_delay = 1.0\n"


def test_import_with_unreachable_bookmarks_names_the_errors_and_the_next_step(tmp_path, capsys):
    data = tmp_path / "node"
    data.mkdir()
    (data / "config.toml").write_text(QUICK)
    bookmarks = tmp_path / "bookmarks.html"
    bookmarks.write_text(UNREACHABLE)
    assert main(["topics", "import", "--data", str(data), str(bookmarks)]) == 0
    out = capsys.readouterr().out
    assert "2 could not be fetched" in out
    advice = out.splitlines()[-1]
    assert advice.startswith("  not fetched: ") and "no topic has training text" in advice
    assert "run `topicswarm topics import` again" in advice


def test_advice_says_the_other_pages_still_teach_when_only_some_failed():
    advice = fetch_failure_advice({"http_4xx": 2}, 2, 10)
    assert "http_4xx 2" in advice and "learn from the other pages" in advice
    assert "network" not in advice
