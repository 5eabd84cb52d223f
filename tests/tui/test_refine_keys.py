"""The Refine screen's k field: Enter in it clusters the topic, as g does."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input

from node.client import NodeError
from tests.tui.test_newcomer_views import SIZE, StandInLink, settle
from tui.app import TopicSwarmApp
from tui.records import Proposal
from tui.screens.refine import RefineScreen


class ClusteringLink(StandInLink):
    """A node that clusters on request and has no proposals before; records the k asked for."""

    def __init__(self) -> None:
        super().__init__(NodeError("not_found", "none", 404))
        self.asked: list[tuple[str, int | None]] = []

    async def proposals(self, topic: str | None = None) -> list[Proposal]:
        return []

    async def refine(self, topic: str, k: int | None) -> list[Proposal]:
        self.asked.append((topic, k))
        return []


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_enter_in_the_k_field_clusters_the_topic_into_k():
    link = ClusteringLink()
    app = TopicSwarmApp(Path("/nonexistent"), link=link)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        await settle(pilot, lambda: isinstance(app.screen, RefineScreen) and app.screen.topic() is not None)
        app.screen.query_one("#k", Input).focus()
        await pilot.press("3", "enter")
        await settle(pilot, lambda: bool(link.asked))
        assert link.asked == [("Databases", 3)]
