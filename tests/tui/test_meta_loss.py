"""What a newcomer saw wrong on the Meta screen's loss control and on the help (session 40), pinned over a
stand-in link: fast `[` / `]` presses dropped while the node rebuilt, out-of-range losses taken unsaid, a
typed loss left in the field after Escape while another one was in force."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from textual.content import Content
from textual.widgets import Input, Static

from node.client import NodeError
from tests.tui.test_newcomer_views import OFFLINE, SIZE, StandInLink, settle
from tui.app import TopicSwarmApp
from tui.records import CurvePoint, LossSetting, MetaState
from tui.screens.meta import MetaScreen

RANGE = "the loss is a number between 0 and 0.95"


@pytest.fixture
def anyio_backend():
    return "asyncio"


class SlowRebuildLink(StandInLink):
    """A node that takes `rebuild` seconds to apply a loss (it builds the meta-classifier again), as a real
    one does: key presses come faster than its answers."""

    def __init__(self, loss: float, rebuild: float = 0.3) -> None:
        super().__init__(NodeError("unavailable", OFFLINE, 503))
        self.loss = loss
        self.rebuild = rebuild
        self.applied: list[float] = []  # the losses set_loss was called with, in order
        self.built: list[float | None] = []  # the losses build_meta was called with

    async def meta(self, topic: str) -> MetaState:
        curve = tuple(CurvePoint(x / 20, 0.9 - x / 100) for x in range(20))
        return MetaState(topic, self.loss, curve, 40, 10, curve, 50, 5, "")

    async def set_loss(self, topic: str, loss: float) -> LossSetting:
        self.applied.append(loss)
        await asyncio.sleep(self.rebuild)
        self.loss = loss
        return LossSetting(loss, 30, 20)

    async def build_meta(self, topic: str, loss: float | None) -> dict:
        self.built.append(loss)
        if loss is not None:
            self.loss = loss
        return {"peers_used": 0}


async def open_meta(pilot, app) -> MetaScreen:
    await pilot.press("5")
    await settle(pilot, lambda: isinstance(app.screen, MetaScreen) and app.screen.meta is not None)
    await pilot.pause()
    return app.screen


def header(screen: MetaScreen) -> str:
    return Content.from_markup(str(screen.query_one("#meta-counts", Static).content)).plain


def field(screen: MetaScreen) -> str:
    return screen.query_one("#loss", Input).value


def notices(app) -> list[str]:
    return [n.message for n in app._notifications]


async def press_every(pilot, key: str, times: int, interval: float = 0.1) -> None:
    for _ in range(times):
        await pilot.press(key)
        await pilot.pause(interval)


@pytest.mark.anyio
async def test_fast_loss_steps_each_move_the_loss_and_the_node_applies_the_last_one():
    """10 presses of `[` at 0.1 s moved 0.95 only to 0.75: each press stepped from the loss the node had
    confirmed, which lagged behind its rebuilds, and each call cancelled the one before."""
    link = SlowRebuildLink(0.95)
    app = TopicSwarmApp(Path("/nonexistent"), link=link)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_meta(pilot, app)
        await press_every(pilot, "left_square_bracket", 10)
        assert header(screen).startswith("loss 0.45") and field(screen) == "0.45"  # the choice, at once
        await settle(pilot, lambda: link.loss == 0.45 and "kept" in header(screen))
        assert len(link.applied) < 10 and link.applied[-1] == 0.45  # coalesced, the last one applied
        assert header(screen).startswith("loss 0.45 · kept 40") and screen.meta.loss == 0.45
        link.applied.clear()
        await press_every(pilot, "right_square_bracket", 9, interval=0.05)
        assert header(screen).startswith("loss 0.90")
        await settle(pilot, lambda: link.loss == 0.90 and "kept" in header(screen))
        assert link.applied[-1] == 0.90 and field(screen) == "0.90"


class RefusingLink(SlowRebuildLink):
    """A node that refuses to apply any loss."""

    async def set_loss(self, topic: str, loss: float) -> LossSetting:
        self.applied.append(loss)
        raise NodeError("unavailable", "the node is rebuilding already", 503)


@pytest.mark.anyio
async def test_a_loss_the_node_did_not_apply_gives_way_to_the_one_in_force():
    """The screen shows a chosen loss before the node applied it; if the node refuses it, it must not
    stay there as if it were in force."""
    link = RefusingLink(0.5)
    app = TopicSwarmApp(Path("/nonexistent"), link=link)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_meta(pilot, app)
        await pilot.press("right_square_bracket")
        assert header(screen).startswith("loss 0.55 · being applied")
        await settle(pilot, lambda: link.applied == [0.55] and "kept" in header(screen))
        assert header(screen).startswith("loss 0.50") and field(screen) == "0.50"
        assert "rebuilding already" in app.problem


@pytest.mark.anyio
async def test_a_loss_step_past_the_end_of_its_range_says_the_range():
    """`]` stopped at 0.95 without a word, while the plot's axis runs to 1.00."""
    link = SlowRebuildLink(0.95, rebuild=0.0)
    app = TopicSwarmApp(Path("/nonexistent"), link=link)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_meta(pilot, app)
        await pilot.press("right_square_bracket")
        await pilot.pause(0.6)
        assert "at most 0.95" in notices(app)[-1] and link.applied == []
        link.loss = 0.0
        screen.reload()
        await settle(pilot, lambda: screen.meta.loss == 0.0)
        await pilot.press("left_square_bracket")
        await pilot.pause(0.6)
        assert "at least 0" in notices(app)[-1] and link.applied == []


@pytest.mark.anyio
@pytest.mark.parametrize("typed", ["7", "-1", "1e9"])
async def test_a_typed_loss_out_of_range_is_refused_with_the_range_not_clamped_unsaid(typed):
    """`7` became 0.95 and `-1` became 0.00 without a word; only an empty field got the message."""
    link = SlowRebuildLink(0.2, rebuild=0.0)
    app = TopicSwarmApp(Path("/nonexistent"), link=link)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_meta(pilot, app)
        await pilot.press("l", "ctrl+a", "ctrl+k", *typed, "enter")
        await pilot.pause(0.6)
        assert notices(app)[-1] == RANGE
        assert link.applied == [] and screen.meta.loss == 0.2 and header(screen).startswith("loss 0.20")


@pytest.mark.anyio
async def test_escape_from_the_loss_field_discards_the_typed_loss_so_field_header_and_build_agree():
    """Typing 0.3 then Escape left 0.3 in the field while the header said 0.00, and `b` built at 0.00."""
    link = SlowRebuildLink(0.0, rebuild=0.0)
    app = TopicSwarmApp(Path("/nonexistent"), link=link)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_meta(pilot, app)
        await pilot.press("l", "ctrl+a", "ctrl+k", "0", ".", "3", "escape")
        await pilot.pause()
        assert field(screen) == "0.00" and header(screen).startswith("loss 0.00")
        assert "not applied" in notices(app)[-1]
        await pilot.press("b")
        await settle(pilot, lambda: screen.builds_finished == 1)
        assert link.built == [0.0] and link.applied == []
