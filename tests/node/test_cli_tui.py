"""`topicswarm tui` without a terminal says so instead of writing escape codes into a pipe and hanging."""

from __future__ import annotations

import socket

import pytest

from node.cli import main
from node.cli.common import CliError
from node.cli.tui import ensure_node
from node.datadir import DataDir


def test_tui_without_a_terminal_is_a_one_line_error(tmp_path, capsys):
    assert main(["tui", "--data", str(tmp_path / "node"), "--no-start"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("topicswarm: the UI needs a terminal") and "topicswarm status" in err
    assert not (tmp_path / "node").exists()  # and no node was started for it


@pytest.mark.slow
def test_a_node_the_ui_starts_that_cannot_listen_says_why(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        root = tmp_path / "node"
        root.mkdir()
        (root / "config.toml").write_text(f'[p2p]\nlisten_addrs = ["/ip4/127.0.0.1/tcp/{port}"]\n')
        with pytest.raises(CliError) as refused:
            ensure_node(DataDir(root), timeout=90.0)
    message = str(refused.value)
    assert f"port {port}" in message and "in use" in message and str(root / "node.log") in message
