"""CLI start-up: parsing a command with the whole command line against its own module's parser alone.

Every `topicswarm` call pays for the modules its parser imports before it does anything (`status` sends one
request). Each command here is parsed in a fresh interpreter both ways, alternating, `--runs` times: with
`node.cli.build_parser()` (every command module, as before node.cli.COMMANDS) and with
`build_parser(command)` (what `topicswarm` does now). Prints the median wall time of each and their ratio,
then one JSON line per command. Nothing is sent to a node: this measures imports and parsing only.

    python -m simnet.bench.cli_startup --runs 9 status "search sql join" "topics list"
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import time

from node.cli import command_named


def parse_seconds(argv: list[str], whole: bool) -> float:
    """Wall time of a fresh interpreter that builds the parser (whole, or the command's) and parses argv."""
    command = None if whole else command_named(argv)
    code = f"import node.cli; node.cli.build_parser({command!r}).parse_args({argv!r})"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    return time.perf_counter() - start


def measure(argv: list[str], runs: int) -> dict[str, float]:
    whole, alone = [], []
    for _ in range(runs):  # alternating, so a busy spell of a shared machine falls on both
        whole.append(parse_seconds(argv, whole=True))
        alone.append(parse_seconds(argv, whole=False))
    whole_s, alone_s = statistics.median(whole), statistics.median(alone)
    return {
        "whole_parser_s": round(whole_s, 4),
        "own_parser_s": round(alone_s, 4),
        "ratio": round(whole_s / alone_s, 2),
    }


def interpreter_seconds() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("commands", nargs="*", default=["status", "search sql join", "peers --json"])
    parser.add_argument("--runs", type=int, default=7, help="interpreters started per command and way")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    bare = statistics.median(interpreter_seconds() for _ in range(args.runs))  # what any Python command pays
    print(f"python -c pass           {bare:.3f} s (median of {args.runs} runs)")
    rows = []
    for text in args.commands:
        row = {"command": text, **measure(shlex.split(text), args.runs)}
        rows.append(row)
        print(
            f"{text:<24} whole parser {row['whole_parser_s']:.3f} s  own parser {row['own_parser_s']:.3f} s  "
            f"ratio {row['ratio']:.2f}"
        )
    for row in rows:
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
