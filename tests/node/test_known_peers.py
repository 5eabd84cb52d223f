"""A node saves its neighbour list in its data directory and, restarted, rejoins through it: without
--bootstrap, and on a new port its peers could not have redialled."""

from __future__ import annotations

import dataclasses
import json
import logging
from types import SimpleNamespace

import pytest
import trio

from node.datadir import DataDir
from node.network import read_known_peers, save_known_peers, start_network
from p2p.membership import Neighbour
from p2p.settings import P2PSettings
from p2p.wire_testing import wait_until, wire_key

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"),
    pytest.mark.usefixtures("collect_leaks"),  # libp2p's dial sockets, collected under this module's filter
]

ADDR = ("/ip4/127.0.0.1/tcp/4001",)


def neighbour(n: int, last_contact: float = 1000.0) -> Neighbour:
    return Neighbour(wire_key(n).peer_id, ADDR, last_contact)


def test_saved_neighbours_read_back_as_they_were(tmp_path):
    path = tmp_path / "peers.json"
    peers = [neighbour(1, 1000.0), neighbour(2, 2000.0)]
    view = save_known_peers(path, peers, frozenset())
    assert read_known_peers(path) == peers
    assert view == {(p.peer_id, p.addrs) for p in peers}


def test_an_unchanged_or_empty_list_is_not_written(tmp_path):
    path = tmp_path / "peers.json"
    assert save_known_peers(path, [], frozenset()) == frozenset() and not path.exists()
    view = save_known_peers(path, [neighbour(1)], frozenset())
    path.write_text("left alone")
    later = [neighbour(1, 5000.0)]  # only the contact time moved
    assert save_known_peers(path, later, view) == view and path.read_text() == "left alone"
    assert save_known_peers(path, [], view) == view and path.read_text() == "left alone"


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        "[]",
        json.dumps(
            {
                "type": "neighbours",
                "version": 1,
                "entries": [{"peer_id": "x", "addrs": [], "last_contact": 1}],
            }
        ),
        json.dumps({"type": "neighbours", "version": 1, "entries": [], "extra": 1}),
        "[" * 100_000,
    ],
    ids=["not-json", "wrong-shape", "bad-peer-id", "unknown-field", "deep-nesting"],
)
def test_a_malformed_file_is_ignored_with_a_warning_and_moved_aside_as_it_is(tmp_path, caplog, text):
    path = tmp_path / "peers.json"
    path.write_text(text)
    with caplog.at_level(logging.WARNING, logger="node.network"):
        assert read_known_peers(path) == []
    assert "not a saved neighbour list" in caplog.text and "moved to peers.json.unreadable" in caplog.text
    assert not path.exists() and (tmp_path / "peers.json.unreadable").read_text() == text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="node.network"):
        assert read_known_peers(path) == []  # the next start: nothing to warn about
    assert caplog.text == ""


def test_a_file_that_is_no_text_is_moved_aside_too(tmp_path, caplog):
    path = tmp_path / "peers.json"
    path.write_bytes(b"\xff\xfe garbage")
    with caplog.at_level(logging.WARNING, logger="node.network"):
        assert read_known_peers(path) == []
    assert (tmp_path / "peers.json.unreadable").read_bytes() == b"\xff\xfe garbage" and not path.exists()


def test_a_failed_save_is_logged_and_tried_again_next_time(tmp_path, caplog):
    path = tmp_path / "missing-directory" / "peers.json"
    with caplog.at_level(logging.WARNING, logger="node.network"):
        assert save_known_peers(path, [neighbour(1)], frozenset()) == frozenset()
    assert "neighbour list was not saved" in caplog.text


def node_side(root, bootstrap=()):
    """What `start_network` reads of a node: its config's [p2p] section, data directory, CLI options and
    the peers its user blocked."""
    p2p = dataclasses.replace(
        P2PSettings(), dht_enabled=False, exchange_period=0.2, connect_timeout=3.0, request_timeout=10.0
    )
    config = SimpleNamespace(p2p=p2p)
    return SimpleNamespace(
        config=config,
        data=DataDir(root).ensure(),
        listen=("/ip4/127.0.0.1/tcp/0",),
        bootstrap=tuple(bootstrap),
        peer_blocks=SimpleNamespace(blocked={}),
    )


@pytest.mark.trio
async def test_a_node_without_neighbours_leaves_no_malformed_list_behind(tmp_path):
    """It saves no list (it found nobody), so a malformed one stayed, warned about at every start."""
    side = node_side(tmp_path / "alone")
    side.data.known_peers.write_text("garbage")
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            await nursery.start(start_network, side)
            nursery.cancel_scope.cancel()
    assert not side.data.known_peers.exists()
    assert (tmp_path / "alone" / "peers.json.unreadable").read_text() == "garbage"


@pytest.mark.trio
async def test_a_node_restarted_without_bootstrap_rejoins_the_peer_it_knew(tmp_path):
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            first = await nursery.start(start_network, node_side(tmp_path / "first"))
            joining = node_side(tmp_path / "second", bootstrap=first.addrs()[:1])
            async with trio.open_nursery() as running:
                second = await running.start(start_network, joining)
                await wait_until(lambda: first.peer_id in second.membership.peer_ids(), 20)
                old_addrs = second.addrs()
                running.cancel_scope.cancel()  # stopped: the list is saved on the way out
            saved = read_known_peers(joining.data.known_peers)
            assert [n.peer_id for n in saved] == [first.peer_id]

            again = await nursery.start(start_network, node_side(tmp_path / "second"))
            assert again.peer_id == second.peer_id and again.addrs() != old_addrs
            await wait_until(lambda: first.peer_id in again.membership.peer_ids(), 20)
            nursery.cancel_scope.cancel()
