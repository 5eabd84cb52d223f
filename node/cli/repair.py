"""`topicswarm repair`: a damaged repository becomes a sound one holding every row SQLite can still read."""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
import time
from contextlib import closing
from pathlib import Path

from crawler.repository import requeue_lost_pages
from crawler.salvage import (
    SIDE_FILES,
    SalvageError,
    SalvageReport,
    integrity_problem,
    remove_database,
    salvage,
)
from node.cli.common import CliError, add_data_arg, existing_data_dir, print_json
from node.client import node_running


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "repair",
        help="salvage a damaged repository: keep every row SQLite can still read, and the damaged file",
    )
    add_data_arg(parser)
    parser.add_argument("--json", action="store_true", help="the report as one JSON object")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    data = existing_data_dir(args)
    repository = data.repository
    if node_running(data):
        raise CliError(
            f"a node runs on {data.root}: stop it first (`topicswarm node stop --data {data.root}`)"
        )
    repairing = repository.with_name(repository.name + ".repairing")
    if not repository.exists() and repairing.exists():  # stopped between moving the damaged file and this
        repairing.replace(repository)
        print(f"finished a repair stopped after moving the damaged file aside: {repository}", file=sys.stderr)
    if not repository.exists():
        raise CliError(f"{data.root} has no repository.db yet: nothing to repair")
    remove_database(repairing)  # what a repair stopped while it salvaged left
    problem = integrity_problem(repository)
    if problem is None:
        if args.json:
            print_json({"repaired": False, "problem": None, "repository": str(repository)})
        else:
            print(f"{repository} is sound (SQLite's integrity check found nothing): nothing to repair")
        return 0
    needed, free = repository.stat().st_size, shutil.disk_usage(repository.parent).free
    if free < needed:  # the salvaged copy is about as large as the damaged file, without its free pages
        raise CliError(
            f"no repair made, {repository} is as it was: its copy needs about {needed / 2**20:.0f} MB "
            f"beside it and {free / 2**20:.0f} MB are free; free some space and run the repair again"
        )
    try:
        report = salvage(repository, repairing)
    except SalvageError as exc:
        raise CliError(f"no repair made, {repository} is as it was: {exc}") from exc
    try:
        with closing(sqlite3.connect(repairing, isolation_level=None)) as conn:
            requeued = requeue_lost_pages(conn)
    except sqlite3.Error as exc:
        remove_database(repairing)
        raise CliError(f"no repair made, {repository} is as it was: {exc}") from exc
    kept_aside = _move_aside(repository)
    repairing.replace(repository)
    if args.json:
        answer = {"repaired": True, "problem": problem, "damaged_copy": str(kept_aside), "requeued": requeued}
        print_json({**answer, **report.to_json()})
    else:
        print(describe(report, problem, kept_aside, requeued))
    return 0


def _move_aside(repository: Path) -> Path:
    """The damaged file (and its log) under a dated name beside it, never deleted: what could not be read
    today may be read by other tools."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = repository.with_name(f"{repository.name}.damaged-{stamp}")
    number = 1
    while any(aside.with_name(aside.name + suffix).exists() for suffix in ("", *SIDE_FILES)):
        number += 1
        aside = repository.with_name(f"{repository.name}.damaged-{stamp}-{number}")
    for suffix in ("", *SIDE_FILES):
        source = repository.with_name(repository.name + suffix)
        if source.exists():
            source.replace(aside.with_name(aside.name + suffix))
    return aside


def describe(report: SalvageReport, problem: str, kept_aside: Path, requeued: int = 0) -> str:
    lines = [f"repaired {report.source} (SQLite found: {problem})"]
    for table in report.tables:
        losses = [f"{table.unreadable_rows} rows that could not be read"] if table.unreadable_rows else []
        losses += [_stretch(after, upto) for after, upto in table.unreadable_stretches]
        if table.invalid:
            losses.append(f"{table.invalid} rows refused as invalid")
        if table.unread_tail:
            losses.append("the rows after the first unreadable one")
        if losses:
            lines.append(f"  {table.name}: {table.kept} rows kept; lost {', '.join(losses)}")
    kept = "every row was read" if report.intact else f"{sum(t.kept for t in report.tables)} rows kept in all"
    lines.append(f"  {kept}; indexes and the search index were built afresh")
    if requeued:
        lines.append(f"  {requeued} crawled pages whose rows were lost are queued to be fetched again")
    lines.append(f"the damaged file is kept as {kept_aside.name}: delete it once the node runs well")
    lines.append(f"run the node again: topicswarm node run --data {report.source.parent}")
    return "\n".join(lines)


def _stretch(after: int | None, upto: int | None) -> str:
    """A stretch of unreadable rowids (after, upto] in words; None is an open end."""
    if after is None:
        return "every row" if upto is None else f"the rows up to id {upto}"
    return f"the rows after id {after}" if upto is None else f"the rows with ids {after + 1}-{upto}"
