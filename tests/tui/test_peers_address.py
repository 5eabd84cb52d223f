"""A neighbour's address reads whole on the Peers screen at 100x30 (it was the last column, cut after
"/ip4/127.0.0.1/tcp/3" by the "/p2p/<id>" the id column names already), and `c` copies it whole, peer id
included, as `node run --bootstrap` takes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tui.test_dashboard_plots import lines_of
from tests.tui.test_newcomer_views import SIZE, T0, settle
from tests.tui.test_peer_blocking import BlockingLink, neighbours
from tui.app import TopicSwarmApp
from tui.records import Peer
from tui.screens.peers import listed

PEER = "12D3KooWKmasxbmgk76724zi44zez6S35soykRHoCGe7JCDo2CZN"
WHERE = "/ip4/192.168.100.123/tcp/44871"
TOPICS = ("Databases", "Mathematics", "Sysadmin")


@pytest.fixture
def anyio_backend():
    return "asyncio"


class OneNeighbourLink(BlockingLink):
    """A networked node with one neighbour sharing three topics, its address as peers announce it."""

    async def peers(self) -> list[Peer]:
        return [Peer(PEER, (f"{WHERE}/p2p/{PEER}",), T0, TOPICS, 11_400, 18_800, ())]


@pytest.mark.anyio
async def test_a_neighbours_address_reads_whole_at_100x30_and_c_copies_it_with_its_peer_id():
    app = TopicSwarmApp(Path("/nonexistent"), link=OneNeighbourLink())
    async with app.run_test(size=SIZE) as pilot:
        table = await neighbours(pilot, 1)
        await pilot.pause()
        row = lines_of(table)[1]
        assert f" {WHERE} " in row, row
        assert row.rstrip().endswith(" Databases +2"), row  # the topics that fit, the rest counted
        await pilot.press("c")
        await pilot.pause()
        assert app.clipboard == f"{WHERE}/p2p/{PEER}"


@pytest.mark.anyio
async def test_the_shared_topics_get_the_room_a_wider_terminal_has():
    app = TopicSwarmApp(Path("/nonexistent"), link=OneNeighbourLink())
    async with app.run_test(size=SIZE) as pilot:
        table = await neighbours(pilot, 1)
        await pilot.resize_terminal(160, 45)
        await settle(pilot, lambda: "Databases, Mathematics, Sysadmin" in lines_of(table)[1])


def test_names_that_do_not_fit_are_counted():
    assert listed(TOPICS, None) == "Databases, Mathematics, Sysadmin"
    assert listed(TOPICS, 25) == "Databases, Mathematics +1"
    assert listed(TOPICS, 12) == "Databases +2"
    assert listed(TOPICS, 5) == "3 topics"
    assert listed((), 20) == "–"
