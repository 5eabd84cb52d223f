"""The `topicswarm` command line.

Each command group lives in its own module in this package with a `register(subparsers)` function that
adds its parsers and sets `func` (called with the parsed arguments, returns the exit code).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sqlite3
import sys

from node.cli.common import CliError, data_dir
from node.wording import alternatives

# Modules of this package that add commands, in the order `--help` lists them.
COMMAND_MODULES = [
    "config",
    "init",
    "node",
    "status",
    "peers",
    "meta",
    "refine",
    "simweb",
    "topics",
    "crawl",
    "search",
    "documents",
    "export",
    "backup",
    "repair",
    "demo",
    "tui",
]
# The module that adds each command, so a command builds only its own module's parsers: building them all
# imported the repository, the crawler and the search stack, and `topicswarm status` took a second.
COMMANDS = {
    "config": "config",
    "init": "init",
    "node": "node",
    "status": "status",
    "peers": "peers",
    "meta": "meta",
    "refine": "refine",
    "simweb": "simweb",
    "topics": "topics",
    "crawl": "crawl",
    "search": "search",
    "show": "documents",
    "feedback": "documents",
    "export": "export",
    "backup": "backup",
    "repair": "repair",
    "demo": "demo",
    "tui": "tui",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: of every command, or only of the module that adds `command` when it is
    one (`--help` and a mistyped command need all of it)."""
    parser = argparse.ArgumentParser(
        prog="topicswarm",
        description="A peer-to-peer network of focused web crawlers.",
        epilog=(
            "Getting started: topicswarm init; topicswarm topics import bookmarks.html; topicswarm node run "
            "(or topicswarm demo). Commands on a node take --data DIR; each explains itself with --help."
        ),
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in [COMMANDS[command]] if command in COMMANDS else COMMAND_MODULES:
        importlib.import_module(f"node.cli.{name}").register(sub)
    describe_by_help(parser)
    return parser


def describe_by_help(parser: argparse.ArgumentParser) -> None:
    """A command's one-line help (what the parent's list shows) heads its own `--help` too, where it has no
    description of its own: `topicswarm status --help` said only its options."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {choice.dest: choice.help for choice in action._choices_actions}
        for name, subparser in action.choices.items():
            if subparser.description is None and helps.get(name):
                subparser.description = helps[name][0].upper() + helps[name][1:] + "."
            describe_by_help(subparser)


def parse_command_line(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """The parsed command line; a search's unquoted `-word` is a word of its query (argparse took it for
    an option it did not know, and refused the command with the top-level usage). Arguments the command
    does not take are refused with its own usage, not the top level's."""
    argv = sys.argv[1:] if argv is None else argv
    refuse_missing_subcommand(parser, argv)
    args, extras = parser.parse_known_args(argv)
    if extras and getattr(args, "words_from_dashes", False) and all(_excluded_word(e) for e in extras):
        args.query += extras
    elif extras:
        named_command(parser, argv)[0].error(f"unrecognized arguments: {' '.join(extras)}")
    return args


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser] | None:
    """The subcommands of a command group (`meta`: build, show, loss), None for a command without."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices
    return None


def named_command(
    parser: argparse.ArgumentParser, argv: list[str]
) -> tuple[argparse.ArgumentParser, list[str]]:
    """The parser of the command (or subcommand) the arguments name, for errors in its own usage, and the
    words that name it."""
    words: list[str] = []
    for arg in argv:
        subcommands = _subcommands(parser)
        if subcommands is None or arg not in subcommands:
            break
        parser = subcommands[arg]
        words.append(arg)
    return parser, words


def refuse_missing_subcommand(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """A command group given no subcommand is told which it needs: `meta --data DIR` took DIR for one
    ("invalid choice: '/tmp/...'"), and `meta` alone said "required: COMMAND"."""
    group, words = named_command(parser, argv)
    subcommands = _subcommands(group)
    if not words or subcommands is None:  # the top level alone prints its help
        return
    rest = argv[len(words) :]
    if not rest or (rest[0].startswith("-") and rest[0] not in ("-h", "--help")):
        group.error(f"{' '.join(words)} needs a subcommand: {alternatives(list(subcommands))}")


def _excluded_word(arg: str) -> bool:
    """A search's `-word` (or `-"a phrase"`), not a mistyped `--option`."""
    return arg.startswith("-") and not arg.startswith("--") and len(arg) > 1


def command_named(argv: list[str]) -> str | None:
    """The command the arguments name: their first, unless it is an option (the top level has only -h)."""
    return argv[0] if argv and not argv[0].startswith("-") else None


def main(argv: list[str] | None = None) -> int:
    parser = build_parser(command_named(sys.argv[1:] if argv is None else argv))
    args = parse_command_line(parser, argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except CliError as exc:
        print(f"topicswarm: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into `head` and the like: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except OSError as exc:  # a full disk, a read-only folder: the user's to fix, so no traceback
        where = f": {exc.filename}" if exc.filename else ""
        print(f"topicswarm: {exc.strerror or exc}{where}", file=sys.stderr)
        return 2
    except sqlite3.DatabaseError as exc:
        damage = damaged_repository(args, exc)
        if damage is None:
            raise
        print(f"topicswarm: {damage}", file=sys.stderr)
        return 2


def damaged_repository(args: argparse.Namespace, exc: sqlite3.DatabaseError) -> str | None:
    """What to say when a command met a damaged page of the repository it read (no traceback: the way back
    is `topicswarm repair`); None for any other database error."""
    from crawler.repository_faults import damaged, is_damaged
    from node.client import node_running

    if not is_damaged(exc) or not hasattr(args, "data"):
        return None
    data = data_dir(args)
    return damaged(data.repository, f"SQLite said: {exc}", node_stopped=not node_running(data))


if __name__ == "__main__":
    sys.exit(main())
