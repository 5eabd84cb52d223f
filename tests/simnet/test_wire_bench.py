"""The wire bench answers --help with its options and runs on the sizes asked for."""

import json
import sys

import pytest

from simnet.bench import wire


def test_help_prints_the_options_and_measures_nothing(monkeypatch, capsys):
    def measured(*args):
        raise AssertionError("--help ran the bench")

    monkeypatch.setattr(wire, "model_figures", measured)
    monkeypatch.setattr(sys, "argv", ["python -m simnet.bench.wire", "--help"])
    with pytest.raises(SystemExit) as done:
        wire.main()
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage:") and "--sparse-weights N" in out and "--items N" in out


@pytest.mark.parametrize("argv", [["--sparse-weights", "0"], ["--items", "0"], ["--items", "many"]])
def test_sizes_out_of_range_are_refused_before_measuring(argv, capsys):
    with pytest.raises(SystemExit) as done:
        wire.main(argv)
    assert done.value.code == 2 and "error:" in capsys.readouterr().err


def test_a_run_prints_one_json_line_with_the_sizes_asked_for(monkeypatch, capsys):
    monkeypatch.setattr(wire, "N_FEATURES", 2**10)  # a small dense model keeps the test quick
    assert wire.main(["--sparse-weights", "100", "--items", "3"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    figures = json.loads(line)
    assert sorted(figures) == ["model_dense_2^18", "model_sparse_2^18_100", "result_page"]
    assert figures["result_page"]["items"] == 3
    assert wire.thousands(20_000) == "20k"
