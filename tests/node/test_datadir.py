"""The data directory's small files are written whole or not at all, and a full disk is one line."""

from __future__ import annotations

import errno
import os
import stat

import pytest

from node.cli import main
from node.datadir import DataDir, write_atomically


def no_room(fd: int) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_write_the_disk_has_no_room_for_leaves_the_old_file_and_names_the_path(tmp_path, monkeypatch):
    path = tmp_path / "config.toml"
    path.write_text("old = 1\n")
    monkeypatch.setattr(os, "fsync", no_room)
    with pytest.raises(OSError) as caught:
        write_atomically(path, "new = 2\n")
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(path)
    assert path.read_text() == "old = 1\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml"]  # no partial file left


def test_the_token_is_private_and_an_empty_token_file_gets_a_new_token(tmp_path):
    data = DataDir(tmp_path / "node")
    token = data.read_or_create_token()
    assert len(token) >= 32 and data.read_or_create_token() == token
    assert stat.S_IMODE(data.api_token.stat().st_mode) == 0o600
    data.api_token.write_text("")  # what a disk that filled mid-write used to leave
    fresh = data.read_or_create_token()
    assert fresh and fresh != token and data.api_token.read_text().strip() == fresh


def test_init_on_a_full_disk_says_so_in_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(os, "fsync", no_room)
    root = tmp_path / "node"
    assert main(["init", "--data", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"topicswarm: No space left on device: {root / 'config.toml'}"
    assert list(root.iterdir()) == []


@pytest.mark.parametrize("how", ["option", "environment"])
def test_a_tilde_the_shell_left_alone_means_the_home_directory(tmp_path, monkeypatch, capsys, how):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    if how == "option":
        args = ["init", "--data=~/swarm"]
    else:
        monkeypatch.setenv("TOPICSWARM_DATA", "~/swarm")
        args = ["init"]
    assert main(args) == 0
    assert (tmp_path / "home" / "swarm" / "config.toml").exists()
    assert not (tmp_path / "~").exists()
    assert str(tmp_path / "home" / "swarm") in capsys.readouterr().out


def test_the_python_client_reads_a_data_directory_given_with_a_tilde(tmp_path, monkeypatch):
    from node.client import NodeClient, NodeUnreachable

    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["init", "--data", str(tmp_path / "swarm")]) == 0
    with pytest.raises(NodeUnreachable, match="no node is running") as refused:
        NodeClient.from_data_dir("~/swarm")
    assert "~" not in str(refused.value)
