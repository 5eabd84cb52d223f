"""Arguments and helpers every command shares."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from node.datadir import DataDir, default_data_dir
from node.wording import counted

if TYPE_CHECKING:
    from crawler.repository import Repository
    from node.client import NodeClient


class CliError(Exception):
    """A failure the user can act on: printed as one line, exit code 2, never a traceback."""


def add_data_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        metavar="DIR",
        help="the node's data directory (default: $TOPICSWARM_DATA or ~/.local/share/topicswarm)",
    )


def add_client_args(parser: argparse.ArgumentParser) -> None:
    """The options of a command that asks the running node: which node, and its answer as JSON for scripts."""
    add_data_arg(parser)
    parser.add_argument("--json", action="store_true", help="print the node's answer as JSON")


def data_dir(args: argparse.Namespace) -> DataDir:
    return DataDir(args.data if args.data is not None else default_data_dir())


def existing_data_dir(args: argparse.Namespace) -> DataDir:
    """The data directory of a command that only reads one: a missing one is a CLI error saying so."""
    data = data_dir(args)
    if (absent := data.absence()) is not None:
        raise CliError(absent)
    return data


def data_dir_set_up(args: argparse.Namespace) -> DataDir:
    """The data directory a node runs on: one `topicswarm init` set up (or a crawl filled), else a CLI error
    saying so. Run on a mistyped --data, a node started from nothing, without topics, and seemed to work."""
    data = data_dir(args)
    if (why := data.not_set_up()) is not None:
        raise CliError(why)
    return data


def data_dir_for_writing(args: argparse.Namespace) -> DataDir:
    """The data directory, made when missing, with a word on stderr when it was: a mistyped --data used
    to start a second node from nothing without a sign."""
    data = data_dir(args)
    if not data.root.exists():
        print(f"topicswarm: made a new data directory {data.root} (was --data mistyped?)", file=sys.stderr)
    return data.ensure()


def open_repository(path: Path) -> Repository:
    """The repository at `path` (made when missing); one that cannot be opened is a one-line CLI error."""
    from crawler.errors import RepositoryError
    from crawler.repository import Repository

    try:
        return Repository(path)
    except RepositoryError as exc:
        raise CliError(str(exc)) from exc


# node.client is imported where it is used: it brings httpx, which commands that never ask a node skip
@contextmanager
def api_errors() -> Iterator[None]:
    """Client errors inside become one-line CLI errors."""
    from node.client import ClientError, NodeError

    try:
        yield
    except NodeError as exc:
        raise CliError(f"the node refused: {exc.detail}") from exc
    except ClientError as exc:
        raise CliError(str(exc)) from exc


@contextmanager
def connect(args: argparse.Namespace) -> Iterator[NodeClient]:
    """A client of the node of `--data`; client errors become one-line CLI errors."""
    from node.client import NodeClient

    with api_errors(), NodeClient.from_data_dir(data_dir(args)) as client:
        yield client


def node_client_or_none(data: DataDir) -> NodeClient | None:
    """A client when a node runs for `data` (commands then go through the API), else None (direct access)."""
    from node.client import NodeClient, NodeUnreachable, node_running

    if not node_running(data):
        return None
    try:
        return NodeClient.from_data_dir(data)
    except NodeUnreachable:
        return None


def print_json(answer: Any) -> None:
    """`--json`: an answer as one line, for scripts."""
    print(json.dumps(answer, ensure_ascii=False, indent=None))


def listing_line(noun: str, read: int, queued: int, unchanged: int = 0) -> str:
    """Sitemaps of on-topic hosts (crawler.sitemaps) or feeds pages named (crawler.feeds), `noun` saying
    which ("sitemap", "feed"), in words."""
    line = f"{counted(read, noun)} read, {queued} pages they list queued"
    return line + (f"; {unchanged} found unchanged when due again" if unchanged else "")


def revisit_line(fetched: int, changed: int, gone: int) -> str:
    """Stored pages fetched again (crawler.revisits), in words."""
    were_gone = f"{gone} {'was' if gone == 1 else 'were'} gone"
    return f"{counted(fetched, 'stored page')} fetched again: {changed} had changed, {were_gone}"


MAX_COUNT = (
    10**9
)  # the largest count an option takes (SQLite's integers end at 2**63: larger ones overflowed)


def count(text: str) -> int:
    """An option's count of pages, hits or documents: a whole number from 0 to `MAX_COUNT`."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value <= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"{text} is out of range: 0 to {MAX_COUNT}")
    return value


def http_url(text: str) -> str:
    """A --seed: an absolute http(s) URL (anything else was queued and dropped without a word)."""
    from crawler.urls import normalize_url

    if not text.lower().startswith(("http://", "https://")) or normalize_url(text) is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not an http(s) URL, e.g. https://example.org/")
    return text
