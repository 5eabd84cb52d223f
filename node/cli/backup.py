"""`topicswarm backup`: a consistent copy of the data directory, also while the node runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from node.backup import BackupError, BackupReport, back_up
from node.cli.common import CliError, add_data_arg, data_dir, print_json


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "backup", help="copy the data directory (repository, identity, config) into a new folder, even live"
    )
    add_data_arg(parser)
    parser.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help="a new or empty folder to copy into"
    )
    parser.add_argument("--json", action="store_true", help="the report as one JSON object")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        report = back_up(data_dir(args), args.out)
    except BackupError as exc:
        raise CliError(f"no backup made: {exc}") from exc
    if args.json:
        print_json(report.to_json())
    else:
        print(describe(report))
    return 0


def describe(report: BackupReport) -> str:
    if report.repository_bytes is None:
        stored = "no repository yet"
    else:
        documents = "" if report.documents is None else f", {report.documents} documents"
        stored = f"repository.db {report.repository_bytes / 2**20:.1f} MB{documents}, checked"
    others = [name for name in report.files if name != "repository.db"]
    return (
        f"backed up {report.source} into {report.target}: {stored}; {', '.join(others) or 'no other files'}\n"
        f"to restore: stop the node, then run it with --data {report.target} (or copy those files back). "
        "Never run both at once: they share one identity"
    )
