"""Closing the terminal (SIGHUP) stops a node in the foreground, and the demo with its nodes, as Ctrl-C
does: by default SIGHUP killed the process alone, a node unsaved and the demo's nodes left running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from node.cli import main
from node.client import node_running
from node.datadir import DataDir
from simnet.paths import PROJECT_ROOT
from tests.waiting import wait_until


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_node_whose_terminal_closed_stops_as_ctrl_c_stops_it(tmp_path):
    data = DataDir(tmp_path / "node")
    assert main(["init", "--data", str(data.root)]) == 0
    command = [sys.executable, "-m", "node.cli", "node", "run", "--data", str(data.root), "--offline"]
    node = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=PROJECT_ROOT
    )
    try:
        wait_until(lambda: node_running(data) or node.poll() is not None, 120, "node start")
        node.send_signal(signal.SIGHUP)
        _, err = node.communicate(timeout=60)
    finally:
        if node.poll() is None:
            node.kill()
            node.wait()
    assert node.returncode == 0, err[-2000:]
    assert "node stopped: frontier and state saved" in err
    assert not data.api_address.exists()


@pytest.mark.slow
def test_a_demo_whose_terminal_closed_stops_its_nodes(tmp_path):
    keep = tmp_path / "demo"
    command = [sys.executable, "-m", "node.cli", "demo", "--no-ui", "--keep", str(keep), "--web", "fixture"]
    demo = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=PROJECT_ROOT
    )
    nodes = [DataDir(keep / f"node{i}") for i in (1, 2, 3)]
    try:
        wait_until(lambda: all(node_running(n) for n in nodes) or demo.poll() is not None, 180, "the nodes")
        assert demo.poll() is None
        pids = [json.loads(n.api_address.read_text())["pid"] for n in nodes]
        demo.send_signal(signal.SIGHUP)
        demo.communicate(timeout=120)
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
    assert demo.returncode == 128 + signal.SIGHUP
    wait_until(lambda: not any(alive(pid) for pid in pids), 60, "the demo's nodes to stop")
