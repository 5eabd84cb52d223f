import json
from pathlib import Path

from node.cli import main

FIXTURES = Path(__file__).parent.parent / "crawler" / "fixtures"


def test_import_then_list_as_json(tmp_path, capsys):
    data = str(tmp_path / "node")
    assert (
        main(["topics", "import", "--data", data, "--no-fetch", str(FIXTURES / "chrome-bookmarks.html")]) == 0
    )
    out = capsys.readouterr().out
    assert out.startswith("imported 4 topics with 5 training documents")
    assert "javascript:" in out
    assert main(["topics", "list", "--data", data, "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    by_key = {row["key"]: row for row in rows}
    assert by_key["Databases"]["positives"] == 2
    assert by_key[""]["negatives"] == 1
    assert main(["topics", "list", "--data", data]) == 0
    assert "Query Optimisation" in capsys.readouterr().out


def test_one_topic_with_one_bookmark_is_counted_in_the_singular(tmp_path, capsys):
    one = tmp_path / "one.html"
    one.write_text(
        "<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL><p>\n<DT><H3>Databases</H3>\n<DL><p>\n"
        '<DT><A HREF="https://www.postgresql.org/">PostgreSQL</A>\n</DL><p>\n</DL><p>\n'
    )
    assert main(["topics", "import", "--data", str(tmp_path / "node"), "--no-fetch", str(one)]) == 0
    assert capsys.readouterr().out.startswith("imported 1 topic with 1 training document from")


def test_malformed_file_is_one_line_error_and_stores_nothing(tmp_path, capsys):
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL><p>\n<DT><H3>A</H3>\n<DL><p>\n")
    data = str(tmp_path / "node")
    assert main(["topics", "import", "--data", data, str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:4:" in err or f"{bad}:3:" in err
    assert main(["topics", "list", "--data", data]) == 2
    assert "there is no data directory" in capsys.readouterr().err  # not even a folder was made
