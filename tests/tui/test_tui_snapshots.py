"""Snapshots of every screen at 100x30 over fixed node answers (a stand-in link: no clock, no network).

The Pilot tests drive a real node; these pin the layout, so the figures must not move between runs.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from textual.widgets import Input

from tui.app import TopicSwarmApp
from tui.link import NodeLink
from tui.records import (
    CrawlFigures,
    CurvePoint,
    Hit,
    LossSetting,
    MetaState,
    MetricSample,
    Peer,
    Proposal,
    ReceivedModel,
    Rejection,
    SearchResults,
    Status,
    Topic,
)
from tui.screens.dashboard import DashboardScreen

SIZE = (100, 30)
T0 = 1_700_000_000.0
HELD_OUT = "5-fold cross-validation on 64 labelled documents at loss 0.20"
TOPICS = [
    Topic("Databases", "Databases", None, 41, 12, 0.62, 0.91, ("sql", "index"), "running", "3", HELD_OUT),
    Topic("Databases/Postgres", "Postgres", "Databases", 17, 5, 0.55, 0.88, (), "paused", "1", HELD_OUT),
    Topic("Sysadmin", "Sysadmin", None, 23, 4, 0.40, None, (), "stopped", None, "", "no meta-classifier yet"),
]
FIGURES = CrawlFigures("running", True, 120, 3.5, 840, {"http_4xx": 7, "timeout": 2}, 2_400_000, "crawling")
FINISHED = CrawlFigures(
    "running",
    False,
    120,
    0.0,
    840,
    {"http_4xx": 7},
    2_400_000,
    "finished",
    "reached max_pages (120 of 120 documents); raise it with `topicswarm node run --max-pages N`",
    2.4,
)


def samples() -> list[MetricSample]:
    return [
        MetricSample(
            T0 + 5 * i,
            4 * i,
            2 + (i % 5),
            300 + 20 * i,
            {"http_4xx": i // 5},
            min(i // 4, 3),
            1000 * i,
            700 * i,
            {"Databases": 0.3 + 0.02 * i, "Sysadmin": 0.5 - 0.01 * i},
        )
        for i in range(30)
    ]


class FixedLink(NodeLink):
    """Answers as a node would, always the same."""

    def __init__(self) -> None:
        super().__init__(Path("/nonexistent"))

    async def status(self) -> Status:
        return Status("12D3KooWFixed", FIGURES, {"Databases": 0.62}, 3, 29_000, 20_300, 64, 21, True, True)

    async def metrics(self, since: float = 0.0) -> list[MetricSample]:
        return [s for s in samples() if s.t > since]

    async def topics(self) -> list[Topic]:
        return TOPICS

    async def search(self, q: str, **options) -> SearchResults:
        hits = (
            Hit(
                8,
                "http://127.0.0.11/intro.html",
                "What Is PostgreSQL?",
                "Databases/Postgres",
                0.93,
                "local",
                ("local",),
                3.2,
                "PostgreSQL is an object-relational database system.",
                "accepted",
            ),
            Hit(
                12,
                "http://127.0.0.12/ddl.html",
                "Data Definition",
                "Databases",
                0.81,
                "12D3KooWPeerA",
                ("12D3KooWPeerA",),
                2.7,
                "This chapter covers how one creates the database structures.",
                "accepted",
            ),
        )
        return SearchResults(q, hits, 2)

    async def peers(self) -> list[Peer]:
        return [
            Peer("12D3KooWPeerA", ("/ip4/127.0.0.1/tcp/4001",), T0, ("Databases",), 18_000, 9_000, ()),
            Peer(
                "12D3KooWPeerB",
                ("/ip4/127.0.0.1/tcp/4002",),
                T0,
                ("Sysadmin",),
                4_000,
                2_000,
                (Rejection("bad signature", 3),),
            ),
        ]

    async def models(self, topic: str | None = None) -> list[ReceivedModel]:
        return [
            ReceivedModel("Databases", "12D3KooWPeerA", "4", "svm", 0.87, 0.61, T0),
            ReceivedModel("Databases", "12D3KooWPeerB", "2", "svm", 0.52, 0.0, T0),
        ]

    async def meta(self, topic: str) -> MetaState:
        curve = tuple(CurvePoint(x / 10, 0.9 + 0.1 * (x / 9) ** 0.5) for x in range(10))
        held_out = tuple(CurvePoint(x / 10, 0.7 + 0.2 * (x / 9) ** 0.5) for x in range(10))
        return MetaState(topic, 0.2, curve, 40, 13, held_out, 64, 5, "", rejected=11)

    async def set_loss(self, topic: str, loss: float) -> LossSetting:
        return LossSetting(loss, 30, 24, rejected=10)

    async def proposals(self, topic: str | None = None) -> list[Proposal]:
        return [
            Proposal(
                "p1",
                "Databases",
                "indexes",
                ("index", "btree", "scan"),
                ("Index Types", "Multicolumn"),
                14,
                2,
                "open",
            ),
            Proposal(
                "p2",
                "Databases",
                "transactions",
                ("commit", "lock"),
                ("Transaction Isolation",),
                9,
                1,
                "open",
            ),
        ]

    async def stats_events(self):
        await asyncio.Event().wait()
        yield "stats", FIGURES


class FinishedLink(FixedLink):
    """A node whose crawl reached its page limit."""

    async def status(self) -> Status:
        return Status("12D3KooWFixed", FINISHED, {"Databases": 0.62}, 3, 29_000, 20_300, 64, 21, True, True)

    async def stats_events(self):
        await asyncio.Event().wait()
        yield "stats", FINISHED


def app(link: type[FixedLink] = FixedLink) -> TopicSwarmApp:
    return TopicSwarmApp(Path("/nonexistent"), link=link())


def navigate(keys: list[str]):
    async def run_before(pilot) -> None:
        await pilot.pause(0.5)
        await pilot.press(*keys)
        await pilot.pause(0.5)
        for field in pilot.app.screen.query(Input):
            field.cursor_blink = False
        app = pilot.app
        while app.telemetry.status is None or app.telemetry.last_sample_t < samples()[-1].t:
            await pilot.pause(0.1)  # hang-guarded by the snapshot plugin's timeout
        if isinstance(app.screen, DashboardScreen):
            app.screen.redraw()
        await pilot.pause(0.5)

    return run_before


@pytest.mark.parametrize(
    ("screen", "keys"),
    [
        ("dashboard", []),
        ("dashboard-finished", []),
        ("topics", ["2"]),
        ("results", ["3", "slash", *"postgres", "enter"]),
        ("peers", ["4"]),
        ("meta", ["5"]),
        ("refine", ["6"]),
        ("help", ["question_mark"]),
    ],
)
def test_screen_snapshot(snap_compare, screen, keys):
    link = FinishedLink if screen.endswith("-finished") else FixedLink
    assert snap_compare(app(link), terminal_size=SIZE, run_before=navigate(keys))


@pytest.fixture
def anyio_backend():
    return "asyncio"  # Textual runs under asyncio


@pytest.mark.anyio
async def test_slash_focuses_the_search_instead_of_starting_the_query():
    async with app().run_test(size=SIZE) as pilot:
        await pilot.press("3", "slash", *"postgres")
        await pilot.pause()
        assert pilot.app.screen.query_one("#query", Input).value == "postgres"
        await pilot.press("enter", "slash")  # from the hit list back to the search field
        await pilot.pause()
        assert pilot.app.screen.focused is pilot.app.screen.query_one("#query", Input)
