"""The dashboard's plots read whole at 100x30 and 160x45: the harvest chart's legend beneath its canvas
(drawn on the canvas, it hid the lines and was cut to the plot's width), time axes ending at 0 with round
ticks (plotext dropped "0.0" after "-36.2"), and errors by kind with their counts written out (plotext's
bars straddled rows and their axis read "0 290 870" or "0.0 1.2 2.5")."""

from __future__ import annotations

import re
from itertools import pairwise
from pathlib import Path

import pytest
from textual.geometry import Region
from textual.widget import Widget

from tests.tui.test_tui_snapshots import T0, FixedLink
from tui.app import TopicSwarmApp
from tui.records import MetricSample, topic_choice
from tui.screens.dashboard import PLOTTED_TOPICS, DashboardScreen, plotted_harvest
from tui.widgets.plots import LEGEND_KEY, legend_lines, time_ticks, value_ticks

SIZES = [(100, 30), (160, 45)]
LONG_KEY = "Computers/Programming/Languages/Python"
HARVEST = {"Databases": 0.62, "Mathematics": 0.41, LONG_KEY: 0.18}
ERRORS = {"robots_disallowed": 1160, "http_5xx": 203, "http_4xx": 87, "timeout": 29, "too_many_redirects": 2}


class BusyLink(FixedLink):
    """Two and a half minutes of a crawl with three topics, one of them a long subtopic key, and errors of
    five kinds, counts from 2 to over a thousand."""

    async def metrics(self, since: float = 0.0) -> list[MetricSample]:
        samples = [
            MetricSample(
                T0 + 5 * i,
                4 * i,
                2 + (i % 5),
                300 + 20 * i,
                {kind: count * i // 29 for kind, count in ERRORS.items()},
                min(i // 4, 3),
                1000 * i,
                700 * i,
                {topic: rate * (1 + i / 29) / 2 for topic, rate in HARVEST.items()},
            )
            for i in range(30)
        ]
        return [s for s in samples if s.t > since]


@pytest.fixture
def anyio_backend():
    return "asyncio"


def lines_of(widget: Widget) -> list[str]:
    """The widget's lines as the terminal shows them, inside its border."""
    width, height = widget.outer_size
    return [strip.text[1:-1] for strip in widget.render_lines(Region(0, 0, width, height))[1:-1]]


async def dashboard(pilot) -> DashboardScreen:
    app = pilot.app
    while app.telemetry.last_sample_t < T0 + 5 * 29 or not app.telemetry.errors:
        await pilot.pause(0.1)  # hang-guarded by pytest-timeout
    app.screen.redraw()
    await pilot.pause(0.3)
    return app.screen


@pytest.mark.anyio
@pytest.mark.parametrize("size", SIZES)
async def test_the_harvest_legend_names_every_topic_beneath_the_canvas(size):
    async with TopicSwarmApp(Path("/nonexistent"), link=BusyLink()).run_test(size=size) as pilot:
        screen = await dashboard(pilot)
        plot = screen.query_one("#plot-harvest")
        lines, width = lines_of(plot), plot.content_size.width
    below = lines[next(i for i, line in enumerate(lines) if "s ago" in line) + 1 :]
    legend = " ".join(below)
    for topic in HARVEST:
        assert f"{LEGEND_KEY}{topic_choice(topic, width - len(LEGEND_KEY))}" in legend, (topic, lines)
    assert "Databases" not in "".join(lines[: len(lines) - len(below)])  # nothing written on the canvas


@pytest.mark.anyio
@pytest.mark.parametrize("size", SIZES)
async def test_time_axes_end_at_now_with_round_ticks(size):
    async with TopicSwarmApp(Path("/nonexistent"), link=BusyLink()).run_test(size=size) as pilot:
        screen = await dashboard(pilot)
        plots = [screen.query_one(f"#plot-{name}") for name in ("pages", "harvest", "frontier", "peers")]
        axes = [next(line for line in lines_of(p) if re.search(r"-\d", line)) for p in plots]
    for axis in axes:
        ticks = axis.split()
        assert ticks[-1] == "0", axis
        assert all(re.fullmatch(r"-?\d+", tick) for tick in ticks), axis
        steps = {int(b) - int(a) for a, b in pairwise(ticks)}
        assert len(steps) == 1, axis  # evenly spaced: none dropped


@pytest.mark.anyio
@pytest.mark.parametrize("size", SIZES)
async def test_errors_by_kind_show_each_kind_whole_with_its_count(size):
    async with TopicSwarmApp(Path("/nonexistent"), link=BusyLink()).run_test(size=size) as pilot:
        screen = await dashboard(pilot)
        lines = lines_of(screen.query_one("#plot-errors"))
    for row, (kind, count) in zip(lines, sorted(ERRORS.items(), key=lambda kc: -kc[1]), strict=False):
        assert re.fullmatch(rf"\s*{kind} [█▏▎▍▌▋▊▉]+\s+{count}\s*", row), lines


def test_a_legend_too_long_for_its_lines_counts_the_names_left_out():
    lines = legend_lines(["Databases", "Mathematics", "Sysadmin", "Zoology"], 26, 2)
    assert [line.plain for line in lines] == ["━━ Databases", "━━ Mathematics  +2 more"]
    assert legend_lines([LONG_KEY], 20, 1)[0].plain == "━━ …Languages/Python"


def test_ticks_are_round_numbers_that_fit():
    assert time_ticks(145.0, 25) == ([-100.0, -50.0, 0.0], ["-100", "-50", "0"], "s")
    assert time_ticks(3600.0, 25)[1:] == (["-60", "-40", "-20", "0"], "min")
    assert value_ticks(0.0, 0.88, 5) == [0.0, 0.5, 1.0]
    assert value_ticks(0.0, 3.0, 13, counts=True) == [0.0, 1.0, 2.0, 3.0]


def test_a_node_of_many_topics_plots_its_top_level_topics_and_says_so():
    few = {"Databases": [1], "Sysadmin": [2]}
    assert plotted_harvest(few) == (few, "")
    many = {f"{top}/{leaf:02d}": [leaf] for top in ("Math", "Science", "Sysadmin") for leaf in range(50)}
    many |= {"Math": [0], "Science": [0], "Sysadmin": [0]}
    plotted, which = plotted_harvest(many)
    assert list(plotted) == ["Math", "Science", "Sysadmin"] and which == "3 of 153 topics"
    tops = {f"Topic{i}": [i] for i in range(PLOTTED_TOPICS + 2)} | {"Topic0/a": [0]}
    plotted, which = plotted_harvest(tops)
    assert len(plotted) == PLOTTED_TOPICS and which == f"{PLOTTED_TOPICS} of {PLOTTED_TOPICS + 3} topics"
