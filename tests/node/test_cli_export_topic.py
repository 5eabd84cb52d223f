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
    assert main(["export", "--data", data, "--format", "csv", "--out", str(out), "--topic", "databases"]) == 2
    assert "no topic 'databases' (did you mean 'Databases'?)" in capsys.readouterr().err
    assert main(["export", "--data", data, "--format", "csv", "--out", str(out), "--topic", "Databases"]) == 0
    assert capsys.readouterr().out.startswith("wrote 0 rows")


def test_an_export_of_a_search_found_by_the_starts_of_words_says_so(tmp_path, capsys):
    from crawler.repository import Repository, StoredPage
    from crawler.search import text_document

    data = tmp_path / "node"
    data.mkdir()
    with Repository(data / "repository.db") as repo, repo.transaction():
        repo.insert_page(StoredPage(text_document("http://h.test/pg", "Roles", "PostgreSQL manages roles.")))
    out = tmp_path / "out.jsonl"
    argv = ["export", "--data", str(data), "--format", "jsonl", "--out", str(out)]
    assert main([*argv, "--query", "postgres"]) == 0
    said = capsys.readouterr().out.splitlines()
    assert said == [
        "few pages have the words 'postgres'; exporting pages with words that start with them",
        f"wrote 1 row to {out}",
    ]
    assert main([*argv, "--query", "postgresql"]) == 0
    assert capsys.readouterr().out.splitlines() == [f"wrote 1 row to {out}"]


def test_an_export_of_a_query_that_matched_nothing_says_so_and_whether_the_topic_is_why(tmp_path, capsys):
    """It printed only "wrote 0 rows", which read as an export that failed."""
    from crawler.repository import Repository, StoredPage
    from crawler.search import text_document

    data = tmp_path / "node"
    assert main(["topics", "import", "--data", str(data), "--no-fetch", str(BOOKMARKS)]) == 0
    page = text_document("http://h.test/pg", "Roles", "PostgreSQL manages roles.", topic="Databases")
    with Repository(data / "repository.db") as repo, repo.transaction():
        repo.insert_page(StoredPage(page))
    out = tmp_path / "out.jsonl"
    argv = ["export", "--data", str(data), "--format", "jsonl", "--out", str(out), "--query"]
    capsys.readouterr()
    said = {}
    for query, topic in (
        ("zebra", []),
        ("postgresql", ["--topic", "Sysadmin"]),
        ("zebra", ["--topic", "Sysadmin"]),
    ):
        assert main([*argv, query, *topic]) == 0
        said[query, bool(topic)] = capsys.readouterr().out.strip()
        assert out.read_text() == ""  # what is written is as before: nothing
    assert said == {
        ("zebra", False): f"wrote 0 rows to {out}: the query 'zebra' matched nothing",
        ("postgresql", True): f"wrote 0 rows to {out}: the query 'postgresql' matched nothing in --topic "
        "Sysadmin; 1 result without it",
        ("zebra", True): f"wrote 0 rows to {out}: the query 'zebra' matched nothing, in --topic Sysadmin or "
        "any other",
    }
