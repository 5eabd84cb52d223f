"""`topicswarm tui [--data DIR]`: the terminal UI over the node of DIR (started in the background if none)."""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from node.cli.common import CliError, add_data_arg, data_dir
from node.client import node_running
from node.datadir import DataDir

START_TIMEOUT = 60.0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "tui",
        help="terminal UI over a node (starts the node in the background when none runs)",
        description="Attach the terminal UI to the node of a data directory. When no node runs there, "
        "one is started detached (`topicswarm node run --data DIR`, logging to DIR/node.log) and keeps "
        "running after the UI quits.",
    )
    add_data_arg(parser)
    parser.add_argument("--no-start", action="store_true", help="only attach; fail when no node runs")
    parser.set_defaults(func=run)


def ensure_node(data: DataDir, timeout: float = START_TIMEOUT) -> subprocess.Popen[bytes] | None:
    """Start `topicswarm node run` detached for `data` unless a node serves it; wait until its API answers."""
    if node_running(data):
        return None
    if (why := data.not_set_up()) is not None:  # said here: the node's own refusal would go to a log in it
        raise CliError(why)
    log_path = data.root / "node.log"
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "node.cli", "node", "run", "--data", str(data.root)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if node_running(data):
            return process
        if process.poll() is not None:
            reason = last_error_line(log_path)
            raise CliError(
                f"the node exited with code {process.returncode} while starting"
                + (f": {reason}" if reason else "")
                + f" (log: {log_path})"
            )
        time.sleep(0.2)
    raise CliError(f"the node did not start within {timeout:.0f} s: see {log_path}")


def last_error_line(log_path: Path) -> str:
    """The node's own one-line refusal (`topicswarm: ...`, e.g. a port in use) from the end of its log, so
    the user reads why without opening the log."""
    try:
        lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-20:]
    except OSError:
        return ""
    refusals = [line.removeprefix("topicswarm: ") for line in lines if line.startswith("topicswarm: ")]
    return refusals[-1] if refusals else ""


def run(args: argparse.Namespace) -> int:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise CliError(
            "the UI needs a terminal (stdin and stdout): run it in one; without one, "
            "`topicswarm status` and the other commands show what the node does"
        )
    data = DataDir(data_dir(args).root.resolve())
    if args.no_start:
        if not node_running(data):
            raise CliError(
                f"no node is running for {data.root}: start one with `topicswarm node run --data {data.root}`"
            )
    else:
        process = ensure_node(data)
        if process is not None:
            print(f"started a node for {data.root} (pid {process.pid}, log {data.root / 'node.log'})")
    from tui.app import TopicSwarmApp

    TopicSwarmApp(data.root).run()
    return 0
