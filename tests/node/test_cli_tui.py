"""`topicswarm tui` without a terminal says so instead of writing escape codes into a pipe and hanging."""

from __future__ import annotations

from node.cli import main


def test_tui_without_a_terminal_is_a_one_line_error(tmp_path, capsys):
    assert main(["tui", "--data", str(tmp_path / "node"), "--no-start"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("topicswarm: the UI needs a terminal") and "topicswarm status" in err
    assert not (tmp_path / "node").exists()  # and no node was started for it
