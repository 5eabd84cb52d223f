"""The peers screen blocks the selected neighbour after a confirmation and unblocks a blocked peer."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Button, DataTable, Input, Label

from node.client import NodeError
from tests.tui.test_newcomer_views import FINISHED, SIZE, T0, StandInLink, settle
from tui.app import TopicSwarmApp
from tui.records import Peer, Status
from tui.screens.peers import PeersScreen
from tui.widgets.confirm import Confirm

NEIGHBOUR, BLOCKED = "12D3KooWNeighbourAAAAAAAAAAAA", "12D3KooWBlockedBBBBBBBBBBBBBB"


@pytest.fixture
def anyio_backend():
    return "asyncio"


class BlockingLink(StandInLink):
    """A networked node with one neighbour and one blocked peer; records what the screen asked."""

    def __init__(self) -> None:
        super().__init__(NodeError("not_found", "none", 404))
        self.calls: list[tuple[str, str]] = []

    async def status(self) -> Status:
        return Status("12D3KooWSelf", FINISHED, {}, 1, 0, 0, 200, 0, True, True)

    async def peers(self) -> list[Peer]:
        return [
            Peer(NEIGHBOUR, ("/ip4/127.0.0.1/tcp/4001",), T0, ("Databases",), 10, 10, ()),
            Peer(BLOCKED, (), T0, (), 0, 0, (), blocked=True),
        ]

    async def block_peer(self, peer_id: str) -> dict:
        self.calls.append(("block", peer_id))
        return {"peer_id": peer_id, "blocked": True, "models_forgotten": 2, "results_removed": 7}

    async def unblock_peer(self, peer_id: str) -> dict:
        self.calls.append(("unblock", peer_id))
        return {"peer_id": peer_id, "blocked": False}


async def neighbours(pilot, rows: int) -> DataTable:
    """The Peers screen's neighbours table once it lists `rows` peers."""
    await pilot.press("4")
    await settle(pilot, lambda: isinstance(pilot.app.screen, PeersScreen))
    table = pilot.app.screen.query_one("#peers", DataTable)
    await settle(pilot, lambda: table.row_count == rows)
    return table


@pytest.mark.anyio
async def test_b_blocks_the_selected_neighbour_once_confirmed_and_unblocks_a_blocked_peer():
    link = BlockingLink()
    app = TopicSwarmApp(Path("/nonexistent"), link=link)
    async with app.run_test(size=SIZE) as pilot:
        table = await neighbours(pilot, 2)
        assert table.border_title == "neighbours (1) · blocked (1)"
        assert app.screen.query_one("#rejected", DataTable).border_title == "rejected messages: none"
        assert str(table.get_row_at(1)[1]).startswith("blocked since ")
        table.focus()
        for cancel in ("escape", "n", "enter"):  # Enter by habit presses the focused Cancel
            await pilot.press("b")
            await settle(pilot, lambda: isinstance(app.screen, Confirm))
            await pilot.press(cancel)
            await settle(pilot, lambda: isinstance(app.screen, PeersScreen))
        assert link.calls == []
        await pilot.press("b")
        await settle(pilot, lambda: isinstance(app.screen, Confirm))
        await pilot.press("y")
        await settle(pilot, lambda: link.calls == [("block", NEIGHBOUR)])
        await settle(pilot, lambda: any("7 results removed" in n.message for n in app._notifications))
        table = app.screen.query_one("#peers", DataTable)
        table.focus()
        await pilot.press("down", "b")
        await settle(pilot, lambda: link.calls[-1] == ("unblock", BLOCKED))


@pytest.mark.anyio
async def test_the_block_confirmation_names_the_peer_and_has_buttons_not_a_text_field():
    link = BlockingLink()
    app = TopicSwarmApp(Path("/nonexistent"), link=link)
    async with app.run_test(size=SIZE) as pilot:
        await neighbours(pilot, 2)
        await pilot.press("b")
        await settle(pilot, lambda: isinstance(app.screen, Confirm))
        dialog = app.screen
        assert not dialog.query(Input)
        assert f"Block peer {NEIGHBOUR}?" in str(dialog.query_one(Label).render())
        assert [str(b.label) for b in dialog.query(Button)] == ["Block (y)", "Cancel (n)"]
        assert dialog.focused is dialog.query_one("#confirm-no", Button)
        await pilot.click("#confirm-no")
        await settle(pilot, lambda: isinstance(app.screen, PeersScreen))
        assert link.calls == []
        await pilot.press("b")
        await settle(pilot, lambda: isinstance(app.screen, Confirm))
        await pilot.click("#confirm-yes")
        await settle(pilot, lambda: link.calls == [("block", NEIGHBOUR)])
