"""Command-line answers a newcomer met following the README (session 3): each says what to do."""

from __future__ import annotations

import argparse

import httpx
import pytest

from crawler.repository import Repository
from node.cli import build_parser, main
from node.cli.common import CliError
from node.cli.demo import build_line
from node.cli.search import print_hits
from node.client import Unauthorised, _raise_for
from node.datadir import DataDir
from node.wording import alternatives


def failure(capsys, argv: list[str]) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    return capsys.readouterr().err


def node_started(*args, **kwargs):
    """Stands in for the node service where none may start (a refused `node run` ran one till Ctrl-C)."""
    raise AssertionError("a node was started")


def test_offline_with_listen_or_bootstrap_is_refused_instead_of_ignored(tmp_path, capsys):
    for extra in (["--listen", "/ip4/127.0.0.1/tcp/4001"], ["--bootstrap", "/ip4/127.0.0.1/tcp/1/p2p/X"]):
        err = failure(capsys, ["node", "run", "--data", str(tmp_path), "--offline", *extra])
        assert "--offline runs without peers" in err and "drop --offline" in err
    assert not (tmp_path / "api.json").exists()  # no node was started


def test_search_before_anything_was_crawled_names_the_node_command(tmp_path, capsys):
    err = failure(capsys, ["search", "sql", "--data", str(tmp_path)])
    assert f"topicswarm node run --data {tmp_path}" in err and "topicswarm crawl --seed URL" in err


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ([], "no hits for 'sql join' with --verdict accepted (try --verdict any); 1 result without them"),
        (
            ["--origin", "pooled", "--topic", "Databases"],
            "no hits for 'sql join' with --topic Databases, --origin pooled (try --origin any), "
            "--verdict accepted (try --verdict any); 1 result without them",
        ),
    ],
)
def test_an_empty_answer_names_the_filters_that_narrowed_it(tmp_path, capsys, options, said):
    from crawler.repository import StoredPage
    from crawler.search import text_document

    rejected = text_document(
        "http://h.test/j", "Joins", "An sql join.", topic=None, confidence=0.0, accepted=False
    )
    with Repository(tmp_path / "repository.db") as repo, repo.transaction():
        repo.insert_page(StoredPage(rejected))  # a page no topic accepted
    capsys.readouterr()
    assert main(["search", "sql", "join", "--data", str(tmp_path), *options]) == 0
    assert capsys.readouterr().out.strip() == said


def test_an_empty_answer_blames_no_filter_when_no_page_matches_at_all(tmp_path, capsys):
    Repository(tmp_path / "repository.db").close()
    capsys.readouterr()
    assert main(["search", "sql", "join", "--data", str(tmp_path), "--origin", "local"]) == 0
    said = capsys.readouterr().out.strip()
    assert said == "no hits for 'sql join': no page or pooled result here matches it, whatever the filters"
    assert main(["search", "sql", "join", "--data", str(tmp_path), "--verdict", "any"]) == 0
    assert capsys.readouterr().out.strip() == "no hits for 'sql join'"  # no filter: nothing else to say


@pytest.mark.parametrize(("offset", "limit"), [(40, 10), (0, 0)])
def test_a_page_past_the_last_result_says_how_many_there_are_instead_of_none(capsys, offset, limit):
    args = argparse.Namespace(json=False, query="sql", offset=offset, limit=limit, topic=None)
    print_hits({"hits": [], "total": 40, "prefix": False}, args)
    shown = capsys.readouterr().out.strip()
    assert shown == f"none of 40 results shown with --offset {offset} --limit {limit}"


def test_demo_build_line_counts_peer_models_in_plain_english():
    built = {"peers_used": 1, "kept": 14, "rejected": 43, "abstained": 14}
    assert build_line(3, "Databases", built) == (
        "node 3: meta-classifier for Databases from its own model and 1 peer model, 14 documents kept, "
        "43 rejected, 14 abstained"
    )
    assert "and 2 peer models," in build_line(1, "Sysadmin", {**built, "peers_used": 2})


def test_a_refused_token_read_from_a_data_directory_says_which_file_and_how_to_fix_it(tmp_path):
    request = httpx.Request("GET", "http://127.0.0.1:45123/api/status")
    refusal = httpx.Response(401, json={"error": "unauthorised", "detail": "send a token"}, request=request)
    with pytest.raises(Unauthorised) as from_data:
        _raise_for(refusal, DataDir(tmp_path))
    said = str(from_data.value)
    assert "http://127.0.0.1:45123 refused the token in " + str(tmp_path / "api.token") in said
    assert f"topicswarm node run --data {tmp_path}" in said
    with pytest.raises(Unauthorised, match="refused the token: send a token"):
        _raise_for(refusal)  # a script's own token: the node's advice


def subcommands(parser, path=()):
    """(command words, parser) of every command and subcommand."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from subcommands(sub, (*path, name))


def test_every_command_help_says_what_the_command_does_and_every_option_what_it_is_for():
    commands = dict(subcommands(build_parser()))
    assert ("meta", "build") in commands and ("status",) in commands
    for words, parser in commands.items():
        assert parser.description, f"`topicswarm {' '.join(words)} --help` says nothing of what it does"
        for action in parser._actions:
            if action.option_strings and action.dest != "help":
                assert action.help, f"`topicswarm {' '.join(words)}`: {action.option_strings[0]} has no help"


@pytest.mark.parametrize(
    "command",
    [
        ["status"],
        ["search", "sql"],
        ["show", "3"],
        ["topics", "list"],
        ["export", "--format", "jsonl"],
        ["node", "run", "--offline"],  # it made the folder and ran a node without topics there
        ["config", "check"],  # it said "config.toml: absent, defaults apply" and exit 0
    ],
    ids=lambda command: "-".join(command[:2]),
)
def test_a_mistyped_data_directory_is_named_as_missing_rather_than_as_a_node_to_start(
    tmp_path, capsys, command, monkeypatch
):
    monkeypatch.setattr("node.service.NodeService", node_started)
    missing = tmp_path / "swram"
    argv = [*command, "--data", str(missing)]
    if command[0] == "export":
        argv += ["--out", str(tmp_path / "out.jsonl")]
    err = failure(capsys, argv)
    assert f"there is no data directory {missing}" in err and "topicswarm init" in err
    assert "node run" not in err and "nothing crawled" not in err and not missing.exists()


def test_a_node_is_not_run_on_a_folder_that_holds_no_data_directory(tmp_path, capsys, monkeypatch):
    """`node run --data ~` (or any folder `topicswarm init` never set up) filled it with a repository."""
    from node.cli.tui import ensure_node

    monkeypatch.setattr("node.service.NodeService", node_started)
    err = failure(capsys, ["node", "run", "--data", str(tmp_path), "--offline"])
    assert f"{tmp_path} is no data directory" in err and f"`topicswarm init --data {tmp_path}`" in err
    with pytest.raises(CliError, match="is no data directory"):  # `topicswarm tui` starts none there either
        ensure_node(DataDir(tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_importing_into_a_directory_that_did_not_exist_says_it_made_one(tmp_path, capsys):
    bookmarks = tmp_path / "bookmarks.html"
    bookmarks.write_text(
        "<!DOCTYPE NETSCAPE-Bookmark-file-1><DL><p><DT><H3>Math</H3><DL><p>"
        '<DT><A HREF="http://127.0.0.1:9/">x</A></DL><p></DL><p>'
    )
    missing = tmp_path / "swram"
    assert main(["topics", "import", "--data", str(missing), "--no-fetch", str(bookmarks)]) == 0
    assert f"made a new data directory {missing} (was --data mistyped?)" in capsys.readouterr().err
    assert main(["topics", "import", "--data", str(missing), "--no-fetch", str(bookmarks)]) == 0
    assert "made a new" not in capsys.readouterr().err  # only the first time


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["search", "sql", "--limit", "99999999999999999999"], "out of range: 0 to 1000000000"),
        (["search", "sql", "--offset", "-1"], "out of range"),
        (["export", "--query", "sql", "--limit", "1e3"], "is not a whole number"),
        (["node", "run", "--seed", "notaurl"], "is not an http(s) URL"),
        (["crawl", "--seed", "file:///etc/passwd"], "is not an http(s) URL"),
    ],
)
def test_counts_and_seeds_out_of_shape_are_refused_by_the_option_itself(argv, said, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(argv)
    assert said in capsys.readouterr().err


def command_groups() -> dict[str, list[str]]:
    """Every command with subcommands and its subcommands (`meta`: build, show, loss), from the parser."""
    groups: dict[str, list[str]] = {}
    for words, _ in subcommands(build_parser()):
        if len(words) == 2:
            groups.setdefault(words[0], []).append(words[1])
    return groups


@pytest.mark.parametrize("extra", [[], ["--data", "/tmp/swram"]], ids=["alone", "with-data"])
def test_a_command_group_without_its_subcommand_names_the_subcommands(capsys, extra):
    """`meta --data DIR` said "invalid choice: '/tmp/...'", taking the directory for a subcommand."""
    assert {"meta", "topics", "node", "simweb", "config"} <= set(command_groups())
    for group, choices in command_groups().items():
        with pytest.raises(SystemExit):
            main([group, *extra])
        err = capsys.readouterr().err
        assert err.startswith(f"usage: topicswarm {group} ")
        assert f"{group} needs a subcommand: {alternatives(choices)}" in err, err


def test_the_meta_group_names_its_subcommands_in_plain_words(capsys):
    with pytest.raises(SystemExit):
        main(["meta", "--data", "/tmp/swram"])
    assert "topicswarm meta: error: meta needs a subcommand: build, show or loss" in capsys.readouterr().err


def test_an_argument_a_command_does_not_take_is_refused_with_that_commands_usage(capsys):
    """`search sql --exact-topic Databases` printed the top level's usage (`topicswarm [-h] COMMAND ...`)."""
    with pytest.raises(SystemExit):
        main(["search", "sql", "--exact-topic", "Databases"])
    err = capsys.readouterr().err
    assert err.startswith("usage: topicswarm search ") and "topicswarm search: error: unrecognized" in err


def test_topic_keywords_without_a_key_asks_only_for_the_key(capsys):
    """ "required: KEY, words" though the words are optional (without them the keywords are shown)."""
    with pytest.raises(SystemExit):
        main(["topics", "keywords"])
    assert capsys.readouterr().err.rstrip().endswith("the following arguments are required: KEY")


def test_exact_topic_without_a_topic_is_refused_instead_of_ignored(tmp_path, capsys):
    Repository(tmp_path / "repository.db").close()
    err = failure(capsys, ["search", "sql", "--exact-topic", "--data", str(tmp_path)])
    assert "--exact-topic" in err and "needs --topic KEY" in err


def test_stored_pages_fetched_again_are_counted_in_plain_english():
    from node.cli.common import revisit_line

    assert revisit_line(1, 0, 1) == "1 stored page fetched again: 0 had changed, 1 was gone"
    assert revisit_line(5, 2, 3) == "5 stored pages fetched again: 2 had changed, 3 were gone"
