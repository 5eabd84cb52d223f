"""The Results screen keeps the user's place: a refresh keeps the cursor on its hit, words typed and left
without Enter are not searched behind the user's back, and a topic opened from the Topics screen puts the
focus in its list. A peer's result names the peer as the Peers screen does, and notifications keep the
node's brackets."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable, Input

from node.client import NodeError
from tests.tui.test_newcomer_views import SIZE, URL, StandInLink, settle
from tui.app import TopicSwarmApp
from tui.records import Document, Hit, SearchResults, short_peer_id, topic_choice
from tui.screens.results import ResultsScreen, document_view, preview
from tui.screens.topics import TopicsScreen

PEER = "12D3KooWAbcdefghijklmnopqrstuvwxyz"


def hit(doc_id: int, origin: str = "local") -> Hit:
    return Hit(doc_id, f"{URL}?{doc_id}", f"page {doc_id}", "Databases", 0.9, origin, (origin,), 1.0, "", "")


class ListingLink(StandInLink):
    """Five results for any words, and what it was asked."""

    def __init__(self) -> None:
        super().__init__(NodeError("not_found", "none", 404))
        self.asked: list[str] = []

    async def search(self, q: str, **options) -> SearchResults:
        self.asked.append(q)
        hits = (*(hit(i) for i in range(1, 5)), hit(5, PEER))
        return SearchResults(q, hits, len(hits), browsed=not q.strip())


class PagingLink(StandInLink):
    """An answer of 120 results, given 50 at a time from the offset asked."""

    def __init__(self) -> None:
        super().__init__(NodeError("not_found", "none", 404))

    async def search(self, q: str, offset: int = 0, **options) -> SearchResults:
        hits = tuple(hit(i) for i in range(offset + 1, min(offset + 50, 120) + 1))
        return SearchResults(q, hits, 120, browsed=not q.strip())


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def listed(pilot, app) -> DataTable:
    await pilot.press("3")
    await settle(pilot, lambda: isinstance(app.screen, ResultsScreen) and app.screen.results.hits)
    return app.screen.query_one("#hits", DataTable)


@pytest.mark.anyio
async def test_a_refresh_keeps_the_cursor_on_its_result():
    app = TopicSwarmApp(Path("/nonexistent"), link=ListingLink())
    async with app.run_test(size=SIZE) as pilot:
        table = await listed(pilot, app)
        await pilot.press("escape", "down", "down", "down")
        await settle(pilot, lambda: table.cursor_row == 3)
        asked = len(app.link.asked)
        await pilot.press("r")
        await settle(pilot, lambda: len(app.link.asked) > asked)
        await pilot.pause(0.2)
        assert table.cursor_row == 3 and app.screen.selected().doc_id == 4


@pytest.mark.anyio
async def test_words_left_without_enter_are_not_searched_when_the_screen_comes_back():
    app = TopicSwarmApp(Path("/nonexistent"), link=ListingLink())
    async with app.run_test(size=SIZE) as pilot:
        await listed(pilot, app)
        await pilot.press("slash", *"sql 2", "escape", "1")
        await settle(pilot, lambda: not isinstance(app.screen, ResultsScreen))
        asked = len(app.link.asked)
        await pilot.press("3")
        await settle(pilot, lambda: len(app.link.asked) > asked)
        assert "sql 2" not in app.link.asked
        assert app.screen.query_one("#query", Input).value == ""  # the field says what was searched


@pytest.mark.anyio
async def test_a_topic_opened_from_the_topics_screen_puts_the_focus_in_its_list():
    app = TopicSwarmApp(Path("/nonexistent"), link=ListingLink())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await settle(pilot, lambda: isinstance(app.screen, TopicsScreen) and app.screen.topics)
        await pilot.press("v")
        await settle(pilot, lambda: isinstance(app.screen, ResultsScreen) and app.screen.results.hits)
        assert isinstance(app.focused, DataTable)
        await pilot.press("down")  # the list's keys work at once
        await settle(pilot, lambda: app.focused.cursor_row == 1)


@pytest.mark.anyio
async def test_a_peers_result_names_the_peer_as_the_peers_screen_does():
    app = TopicSwarmApp(Path("/nonexistent"), link=ListingLink())
    async with app.run_test(size=SIZE) as pilot:
        table = await listed(pilot, app)
        assert table.get_row_at(4)[1] == short_peer_id(PEER) == "12D3Ko…uvwxyz"


def test_a_peers_stored_result_offers_no_fetch_and_shows_the_users_marks():
    pooled = Document.from_json(
        {"doc_id": 5, "url": URL, "title": "t", "origin": PEER, "feedback": [{"kind": "relevant"}]}
    )
    shown = document_view(pooled)
    assert "f fetch again" not in shown and "your feedback: relevant" in shown
    assert "f fetch again" in document_view(Document.from_json({"doc_id": 4, "url": URL, "title": "t"}))


@pytest.mark.anyio
async def test_a_notification_keeps_the_nodes_brackets():
    app = TopicSwarmApp(Path("/nonexistent"), link=ListingLink())
    async with app.run_test(size=SIZE) as pilot:
        app.screen.notify("raise it with [node] max_pages in config.toml")
        await pilot.pause()
        shown = [n for n in app._notifications if "max_pages" in n.message]
        assert shown and not shown[-1].markup  # as markup, "[node]" was taken for a style and dropped


@pytest.mark.anyio
async def test_the_rest_of_a_long_answer_comes_as_the_cursor_reaches_its_end():
    app = TopicSwarmApp(Path("/nonexistent"), link=PagingLink())
    async with app.run_test(size=SIZE) as pilot:
        table = await listed(pilot, app)
        assert table.row_count == 50 and table.border_title == "50 of 120 most confident (more below)"
        await pilot.press("escape", "ctrl+end")
        await settle(pilot, lambda: table.row_count == 100)
        await pilot.press("ctrl+end")
        await settle(pilot, lambda: table.row_count == 120)
        assert table.border_title == "120 of 120 most confident"
        assert [h.doc_id for h in app.screen.results.hits] == list(range(1, 121))


def test_a_long_topic_key_shows_its_end_in_a_drop_down():
    assert topic_choice("Databases", 20) == "Databases"
    assert topic_choice("Databases/Transactions", 20) == "…abases/Transactions"
    assert len(topic_choice("Databases/Transactions", 14)) == 14


def test_a_verdict_says_what_it_means_beside_the_crawlers_confidence():
    abstained = Hit(4, URL, "page", "Databases", 1.11, "local", ("local",), 1.0, "", "abstained")
    shown = preview(abstained)
    assert "verdict: abstained (left undecided at your loss" in shown and "confidence 1.11" in shown
    assert "not filtered yet" in preview(hit(5))  # no verdict: no meta-classifier judged it yet
