"""`topicswarm search` as a newcomer types it: unquoted words, and hits printed one readable block each."""

from __future__ import annotations

from node.cli import build_parser
from node.cli.search import print_hits

ANSWER = {
    "hits": [
        {
            "title": "Query Language Understood by SQLite",
            "score": 1.5,
            "url": "http://127.0.0.12/lang.html",
            "topic": "Databases",
            "confidence": 1.2322978438802235,
            "origins": ["local"],
            "preview": "A list of [[SQL]] keywords is\nalso provided.   The [[SQL]] language\n\nsyntax",
        }
    ],
    "total": 1,
}


def test_unquoted_words_are_one_query():
    args = build_parser().parse_args(["search", "--data", "/tmp/x", "vacuum", "tables", "--limit", "3"])
    assert args.query == ["vacuum", "tables"] and args.limit == 3


def test_a_hit_shows_rounded_confidence_and_a_one_line_preview(capsys):
    args = build_parser().parse_args(["search", "sql"])
    print_hits(ANSWER, args)
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == "    Databases  conf 1.23  from local"
    assert lines[3] == "    A list of [[SQL]] keywords is also provided. The [[SQL]] language syntax"
    assert lines[4] == "1 of 1 results"
