"""A command builds the parser of the module that adds it (`node.cli.COMMANDS`), so what that module imports
at its top is paid by the command, and what every command module imports is paid by `--help`. The node's
learning stack (scikit-learn, the service) belongs to the commands that use it, imported when they run;
the commands that only ask the running node (`status`, `peers`, `crawl pause`, `show`, `feedback`) need no
more than its client."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import subprocess
import sys

import pytest

from node.cli import COMMAND_MODULES, COMMANDS, build_parser, command_named, main

HEAVY = ("sklearn", "node.service", "crawler.focus", "libp2p", "textual")
# what a question to the running node has no use for: the arrays, the repository, the crawler's event loop
NODE_CLIENT_ONLY = (*HEAVY, "numpy", "scipy", "sqlite_utils", "trio", "crawler.repository", "crawler.engine")


def loaded_by(code: str, modules: tuple[str, ...]) -> list[str]:
    probe = f"import sys, node.cli; {code}; print(' '.join(m for m in {modules!r} if m in sys.modules))"
    answer = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return answer.stdout.split()


def test_building_the_whole_command_line_leaves_the_learning_stack_and_the_node_unimported():
    assert loaded_by("node.cli.build_parser()", HEAVY) == []


@pytest.mark.parametrize(
    "argv",
    [
        ["status"],
        ["peers", "--json"],
        ["crawl", "pause"],
        ["topics", "list"],
        ["show", "7"],
        ["feedback", "7", "relevant"],
    ],
)
def test_a_command_that_asks_the_running_node_parses_without_the_arrays_the_repository_or_trio(argv):
    code = f"node.cli.build_parser(node.cli.command_named({argv!r})).parse_args({argv!r})"
    assert loaded_by(code, NODE_CLIENT_ONLY) == []


def commands_of(module: str) -> set[str]:
    parser = argparse.ArgumentParser()
    importlib.import_module(f"node.cli.{module}").register(parser.add_subparsers())
    (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return set(subparsers.choices)


def test_every_command_is_mapped_to_the_module_that_adds_it():
    added = {command: module for module in COMMAND_MODULES for command in commands_of(module)}
    assert added == COMMANDS


def test_a_command_alone_parses_as_it_does_in_the_whole_command_line():
    argv = ["search", "sql", "join", "--origin", "pooled", "--limit", "3"]
    alone = build_parser(command_named(argv)).parse_args(argv)
    whole = build_parser().parse_args(argv)
    assert vars(alone) | {"func": None} == vars(whole) | {"func": None}
    assert alone.func is whole.func


@pytest.mark.parametrize("argv", [[], ["--help"], ["no-such-command"]])
def test_no_command_help_and_an_unknown_command_list_every_command(argv, capsys):
    with contextlib.suppress(SystemExit):  # --help and a usage error exit, no command returns 2
        main(argv)
    shown = capsys.readouterr()
    assert [c for c in COMMANDS if c not in shown.out + shown.err] == []
