"""Arguments and helpers every command shares."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from node.datadir import DataDir, default_data_dir

if TYPE_CHECKING:
    from crawler.repository import Repository


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


def data_dir(args: argparse.Namespace) -> DataDir:
    return DataDir(args.data if args.data is not None else default_data_dir())


def existing_data_dir(args: argparse.Namespace) -> DataDir:
    """The data directory of a command that only reads one: a missing one is a CLI error saying so."""
    data = data_dir(args)
    if (absent := data.absence()) is not None:
        raise CliError(absent)
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
    from crawler.repository import Repository, RepositoryError

    try:
        return Repository(path)
    except RepositoryError as exc:
        raise CliError(str(exc)) from exc


def listing_line(noun: str, read: int, queued: int, unchanged: int = 0) -> str:
    """Sitemaps of on-topic hosts (crawler.sitemaps) or feeds pages named (crawler.feeds), `noun` saying
    which ("sitemap", "feed"), in words."""
    line = f"{read} {noun}{'' if read == 1 else 's'} read, {queued} pages they list queued"
    return line + (f"; {unchanged} found unchanged when due again" if unchanged else "")


def revisit_line(fetched: int, changed: int, gone: int) -> str:
    """Stored pages fetched again (crawler.revisits), in words."""
    return f"{fetched} stored pages fetched again: {changed} had changed, {gone} were gone"


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
