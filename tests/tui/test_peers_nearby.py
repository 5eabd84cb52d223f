"""The Peers screen names the communities the neighbours are in and the node is not, and the node's topics
each may be another name for: a folder named otherwise than a community's key meets nobody."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from tests.tui.test_newcomer_views import SIZE, settle
from tests.tui.test_peer_blocking import neighbours
from tests.tui.test_peers_address import OneNeighbourLink
from tui.app import TopicSwarmApp
from tui.records import NearbyCommunity, Peer


@pytest.fixture
def anyio_backend():
    return "asyncio"


class StrangersLink(OneNeighbourLink):
    """A neighbour in Science/Mathematics and Science, while this node has Mathematics."""

    async def peers(self) -> list[Peer]:
        self.nearby = [
            NearbyCommunity("Science/Mathematics", 1, ("Mathematics",)),
            NearbyCommunity("Science", 1, ()),
        ]
        return await super().peers()


def shown(app: TopicSwarmApp) -> str:
    line = app.screen.query_one("#nearby", Static)
    return str(line.render()) if line.display else ""


@pytest.mark.anyio
async def test_the_communities_neighbours_are_in_are_named_with_the_topic_each_may_be():
    app = TopicSwarmApp(Path("/nonexistent"), link=StrangersLink())
    async with app.run_test(size=SIZE) as pilot:
        await neighbours(pilot, 1)
        await settle(pilot, lambda: "Science/Mathematics" in shown(app))
        text = " ".join(shown(app).split())
        assert "Science/Mathematics (1 peer, like your Mathematics), Science (1 peer)" in text
        assert "`topicswarm topics rename --data /nonexistent Mathematics Science/Mathematics`" in text


@pytest.mark.anyio
async def test_no_line_when_the_neighbours_share_every_community():
    app = TopicSwarmApp(Path("/nonexistent"), link=OneNeighbourLink())
    async with app.run_test(size=SIZE) as pilot:
        await neighbours(pilot, 1)
        await pilot.pause()
        assert shown(app) == ""
