"""`topicswarm node run` as a newcomer meets it: a taken listen port is refused with what to do (libp2p
listens with SO_REUSEPORT, so a second node used to share the port silently), and the ready line says how
other nodes reach a node listening on every interface."""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
from types import SimpleNamespace

from crawler.repository import Repository
from node.cli.node import ready_line
from simnet.paths import PROJECT_ROOT


def test_a_listen_port_in_use_is_refused_in_one_line(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        (tmp_path / "node").mkdir()  # a data directory: `node run` refuses a folder without a node's files
        (tmp_path / "node" / "config.toml").write_text("")
        command = [sys.executable, "-m", "node.cli", "node", "run", "--data", str(tmp_path / "node")]
        command += ["--listen", f"/ip4/127.0.0.1/tcp/{port}"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=PROJECT_ROOT)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"topicswarm: port {port} of /ip4/127.0.0.1/tcp/{port} is in use")
    assert "--listen" in done.stderr and "Traceback" not in done.stderr


def test_a_listen_or_bootstrap_address_not_in_multiaddr_form_is_refused_before_the_node_starts(tmp_path):
    command = [sys.executable, "-m", "node.cli", "node", "run", "--data", str(tmp_path / "node")]
    for option, form in (("--listen", "/ip4/HOST/tcp/PORT"), ("--bootstrap", "/p2p/PEER_ID")):
        done = subprocess.run(
            [*command, option, "127.0.0.1:4001"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=PROJECT_ROOT,
        )
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.startswith("topicswarm: '127.0.0.1:4001' is not a") and form in done.stderr
    assert not (tmp_path / "node").exists()  # refused before anything was made


def test_ready_line_gives_the_api_the_peer_id_and_the_addresses_to_join_through():
    addrs = ["/ip4/192.0.2.7/tcp/4001/p2p/12D3KooWX", "/ip4/10.0.0.7/tcp/4001/p2p/12D3KooWX"]
    service = SimpleNamespace(api_url="http://127.0.0.1:5", peer_id="12D3KooWX", addrs=lambda: addrs)
    assert ready_line(service) == f"node ready: api http://127.0.0.1:5 peer 12D3KooWX addrs {' '.join(addrs)}"
    offline = SimpleNamespace(api_url="http://127.0.0.1:5", peer_id=None, addrs=lambda: [])
    assert ready_line(offline) == "node ready: api http://127.0.0.1:5 peer - addrs (offline)"


def test_the_node_log_is_rotated_before_it_can_fill_the_disk(tmp_path, monkeypatch):
    import logging

    from node.cli import node as cli_node
    from node.datadir import DataDir

    monkeypatch.setattr(cli_node, "LOG_BYTES", 2000)
    data = DataDir(tmp_path / "node").ensure()
    cli_node.setup_logging(data, "INFO")
    try:
        for i in range(200):
            logging.getLogger("node.test").info("line %d of a flood %s", i, "x" * 40)
    finally:
        for handler in logging.getLogger().handlers[:]:
            handler.close()
            logging.getLogger().removeHandler(handler)
    logs = sorted(p.name for p in (tmp_path / "node").glob("node.log*"))
    assert logs == ["node.log", "node.log.1", "node.log.2", "node.log.3"]
    assert all(p.stat().st_size <= 2000 for p in (tmp_path / "node").glob("node.log*"))


def test_an_api_port_in_use_or_out_of_range_and_a_config_not_in_utf8_are_refused_in_one_line(tmp_path):
    data = tmp_path / "node"
    data.mkdir()
    command = [sys.executable, "-m", "node.cli", "node", "run", "--data", str(data), "--offline"]
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        (data / "config.toml").write_text(f"[node]\napi_port = {port}\n")
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=PROJECT_ROOT)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"port {port} of the control API is in use" in done.stderr
    (data / "config.toml").write_text("[node]\napi_port = 70000\n")
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=PROJECT_ROOT)
    assert done.returncode == 2 and "api_port must be a TCP port" in done.stderr, done.stderr
    (data / "config.toml").write_bytes(b"[node]\n# caf\xe9\n")
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=PROJECT_ROOT)
    assert done.returncode == 2 and "is not UTF-8 text" in done.stderr and "Traceback" not in done.stderr


def test_a_repository_damaged_past_its_header_stops_the_node_with_the_way_back(tmp_path):
    repository = tmp_path / "node" / "repository.db"
    Repository(repository).close()
    with sqlite3.connect(repository) as db:  # the frontier's first page, which a starting node reads
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'frontier'").fetchone()[0]
    db.close()
    with open(repository, "r+b") as f:
        f.seek(page_size * (root - 1))
        f.write(b"\x07" * page_size)
    command = [sys.executable, "-m", "node.cli", "node", "run", "--data", str(repository.parent), "--offline"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=PROJECT_ROOT)
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 2 and last.startswith(f"topicswarm: the node stopped: {repository} is damaged")
    assert f"topicswarm repair --data {repository.parent}" in last and "topicswarm backup" in last
    assert "stop the node" not in last
