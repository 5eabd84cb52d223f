"""The CLI start-up benchmark parses each command both ways in fresh interpreters and prints one row each."""

import json
import subprocess

import pytest

from simnet.bench.cli_startup import main, parse_seconds


def test_a_run_prints_a_row_per_command_with_both_medians_and_their_ratio(capsys):
    assert main(["--runs", "1", "status", "crawl pause"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [row["command"] for row in rows] == ["status", "crawl pause"]
    for row in rows:
        assert row["whole_parser_s"] > 0 and row["own_parser_s"] > 0
        assert row["ratio"] == pytest.approx(row["whole_parser_s"] / row["own_parser_s"], rel=0.01)


def test_a_command_the_parser_refuses_stops_the_benchmark_instead_of_timing_an_error():
    with pytest.raises(subprocess.CalledProcessError):
        parse_seconds(["search", "--no-such-option"], whole=False)
