"""What a newcomer saw wrong on the help (session 40): keys 1-6 listed "anywhere" though they do nothing
while the help is open, and lines wrapping mid-phrase at 100x30."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.content import Content
from textual.widgets import Static

from node.client import NodeError
from tests.tui.test_newcomer_views import SIZE, StandInLink, settle
from tui.app import TopicSwarmApp
from tui.screens.help import HelpScreen, help_text


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_help_promises_keys_1_to_6_only_once_it_is_closed_and_its_lines_do_not_wrap():
    """Help listed 1-6 "anywhere", yet they do nothing while it is open; at 100x30 some of its lines
    wrapped mid-phrase."""
    app = TopicSwarmApp(Path("/nonexistent"), link=StandInLink(NodeError("not_found", "none", 404)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await settle(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.press("2")
        assert isinstance(app.screen, HelpScreen)  # what the help says of 1-6 must hold here
        lines = [Content.from_markup(line).plain for line in help_text().splitlines()]
        one_to_six = next(i for i, line in enumerate(lines) if line.strip().startswith("1-6"))
        assert lines[one_to_six - 1] == "on every screen, once this help is closed"  # its section heading
        await pilot.pause()
        text = app.screen.query_one("#help-text", Static)
        assert text.size.height == len(help_text().splitlines())  # no line took a second row
