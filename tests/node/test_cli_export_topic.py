"""`topicswarm export --topic` with a key the taxonomy lacks is an error, not an empty file."""

from __future__ import annotations

from pathlib import Path

from node.cli import main

BOOKMARKS = Path(__file__).parent.parent / "crawler" / "fixtures" / "chrome-bookmarks.html"


def test_export_of_an_unknown_topic_names_where_topics_are_listed(tmp_path, capsys):
    data = str(tmp_path / "node")
    assert main(["topics", "import", "--data", data, "--no-fetch", str(BOOKMARKS)]) == 0
    out = tmp_path / "out.csv"
    assert main(["export", "--data", data, "--format", "csv", "--out", str(out), "--topic", "Nope"]) == 2
    assert "no topic 'Nope': list topics with `topicswarm topics list`" in capsys.readouterr().err
    assert not out.exists()
    assert main(["export", "--data", data, "--format", "csv", "--out", str(out), "--topic", "Databases"]) == 0
    assert capsys.readouterr().out.startswith("wrote 0 rows")
