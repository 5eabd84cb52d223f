"""`topicswarm search` as a newcomer types it: unquoted words, and hits printed one readable block each."""

from __future__ import annotations

import pytest

from node.cli import build_parser, parse_command_line
from node.cli.search import print_hits

ANSWER = {
    "hits": [
        {
            "doc_id": 7,
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


def test_an_unquoted_minus_word_leaves_pages_out_instead_of_failing_as_an_unknown_option():
    parser = build_parser()
    args = parse_command_line(parser, ["search", "sql", "-mysql", "--limit", "3", "-postgres"])
    assert args.query == ["sql", "-mysql", "-postgres"] and args.limit == 3
    with pytest.raises(SystemExit):  # a mistyped option is still one
        parse_command_line(parser, ["search", "sql", "--limt", "3"])
    with pytest.raises(SystemExit):  # and other commands take no stray words
        parse_command_line(parser, ["status", "-x"])


def test_a_hit_shows_rounded_confidence_and_a_one_line_preview(capsys):
    args = build_parser().parse_args(["search", "sql"])
    args.query = "sql"  # as `run` joins the words
    print_hits(ANSWER, args)
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == "    Databases  conf 1.23  from local  doc 7"
    assert lines[3] == "    A list of [[SQL]] keywords is also provided. The [[SQL]] language syntax"
    assert lines[4] == "1 of 1 results (`topicswarm show DOC`: the stored page)"


def test_hits_found_as_the_starts_of_words_say_so_before_the_list(capsys):
    args = build_parser().parse_args(["search", "sq"])
    args.query = "sq"
    print_hits({**ANSWER, "prefix": True}, args)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "few pages have the words 'sq'; these results include words that start with them"
    assert lines[1].startswith(" 1. Query Language")
    print_hits(ANSWER, args)
    assert capsys.readouterr().out.startswith(" 1. Query Language")


def test_a_hit_stored_with_terminal_escapes_prints_without_them(capsys):
    # A repository filled before pages lost their control characters may still hold some
    hit = {**ANSWER["hits"][0], "title": "SQL\x1b]0;owned\x07", "preview": "text\x1b[2J here"}
    args = build_parser().parse_args(["search", "sql"])
    args.query = "sql"
    print_hits({**ANSWER, "hits": [hit]}, args)
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "SQL ]0;owned" in out and "text [2J here" in out
