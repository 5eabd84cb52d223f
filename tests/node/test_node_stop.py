"""Stopping a node without its terminal (`topicswarm node stop`, `POST /api/node/stop`): a node that
`topicswarm tui` started in the background had no way to stop but `kill`. A stop through the API is the
SIGTERM path: in-flight pages finish, the frontier and the repository are saved, and `api.json` goes last,
so `node stop` returns once all of that is done."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import trio

from node.cli import main
from node.client import AsyncNodeClient, NodeStopping, node_address, node_running
from node.datadir import DataDir
from node.service import NodeService
from simnet.paths import PROJECT_ROOT
from tests.node.test_api import quiet_config
from tests.waiting import wait_until


@pytest.mark.trio
async def test_a_stop_through_the_api_answers_then_stops_the_node_which_removes_api_json_last(tmp_path):
    data = DataDir(tmp_path / "node")
    service = NodeService(data, quiet_config(), offline=True)
    seen_while_saving = []
    closing = service.topics.held_out.close

    def close_and_look() -> None:  # the last thing the node saves before api.json goes
        seen_while_saving.append(json.loads(data.api_address.read_text()).get("stopping"))
        closing()

    service.topics.held_out.close = close_and_look
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            await nursery.start(service.run)
            async with AsyncNodeClient.from_data_dir(data) as client:
                answer = await client.stop_node()
    assert answer == {"stopping": True, "pid": os.getpid()}
    assert seen_while_saving == [True]
    assert not data.api_address.exists()


def test_a_second_node_run_is_told_how_to_stop_the_first_and_node_stop_returns_once_it_has_exited(
    tmp_path, capsys
):
    data = DataDir(tmp_path / "node")
    assert main(["init", "--data", str(data.root)]) == 0  # `node run` runs only on a data directory set up
    command = [sys.executable, "-m", "node.cli", "node", "run", "--data", str(data.root), "--offline"]
    node = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=PROJECT_ROOT
    )
    try:
        wait_until(lambda: node_running(data) or node.poll() is not None, 120, "node start")
        assert main(["node", "run", "--data", str(data.root), "--offline"]) == 2
        assert f"`topicswarm node stop --data {data.root}`" in capsys.readouterr().err
        assert main(["node", "stop", "--data", str(data.root)]) == 0
        assert capsys.readouterr().out.startswith(f"node stopped (pid {node.pid}): frontier and state saved")
        assert not node_running(data)
        _, said = node.communicate(timeout=30)
    finally:
        node.kill()
        node.wait()
    assert node.returncode == 0, said
    assert "node stopped: frontier and state saved" in said


def test_node_stop_without_a_running_node_says_how_to_start_one(tmp_path, capsys):
    (tmp_path / "node").mkdir()
    assert main(["node", "stop", "--data", str(tmp_path / "node")]) == 2
    assert f"no node is running for {tmp_path / 'node'}" in capsys.readouterr().err


def test_a_node_marked_stopping_still_holds_its_directory_and_commands_say_it_is_stopping(tmp_path, capsys):
    data = DataDir(tmp_path / "node").ensure()
    data.read_or_create_token()
    marked = {"url": "http://127.0.0.1:9", "pid": os.getpid(), "stopping": True}
    data.api_address.write_text(json.dumps(marked))
    assert node_running(data)  # `node run` refuses a second node, `node stop` waits
    with pytest.raises(NodeStopping):
        node_address(data)
    assert main(["status", "--data", str(data.root)]) == 2
    said = capsys.readouterr().err
    assert f"(pid {os.getpid()}) is stopping" in said and "ConnectError" not in said
