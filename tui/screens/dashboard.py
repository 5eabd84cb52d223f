"""Live crawl figures as plots: pages/s, frontier, harvest rate per topic, errors, peers, bytes exchanged."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from textual.app import ComposeResult
from textual.containers import Grid
from textual.markup import escape
from textual.widgets import Static

from node.wording import counted
from tui.records import CrawlFigures, Status
from tui.screens.base import NodeScreen
from tui.widgets.plots import BarPlot, SeriesPlot
from tui.widgets.status_bar import human_bytes

REDRAW_INTERVAL = 1.0
PLOTTED_TOPICS = 6  # harvest series the chart draws; past them, the top-level topics (their subtopics summed)
HARVEST_TITLE = "harvest rate per topic"
HARVEST_SHARE = "classifier-accepted share"
T = TypeVar("T")
NO_ANSWER = "[b]no answer from the node yet[/b] · the status bar says why"


class DashboardScreen(NodeScreen):
    """Redraws at most once per REDRAW_INTERVAL however fast figures arrive (plots are costly to build)."""

    NAME = "dashboard"

    def __init__(self) -> None:
        super().__init__()
        self._drawn_version: tuple[int, bool] | None = None  # the telemetry's version and reachability drawn
        self._redraw_pending = False

    def body(self) -> ComposeResult:
        yield Static(id="summary")
        with Grid(id="plots"):
            yield SeriesPlot("pages per second", id="plot-pages")
            yield SeriesPlot(HARVEST_TITLE, id="plot-harvest")
            yield SeriesPlot("frontier size", counts=True, id="plot-frontier")
            yield BarPlot("errors by kind", id="plot-errors")
            yield SeriesPlot("peers online", counts=True, id="plot-peers")
            yield SeriesPlot("KB exchanged", id="plot-bytes")  # as the Peers screen counts them

    def on_mount(self) -> None:
        # the node's harvest, not the demo summary's share relevant by the ground truth
        self.query_one("#plot-harvest", SeriesPlot).border_subtitle = HARVEST_SHARE
        self.set_interval(REDRAW_INTERVAL, self._redraw_if_pending)

    def reload(self) -> None:
        self._drawn_version = None
        self.redraw()

    def schedule_redraw(self) -> None:
        self._redraw_pending = True

    def _redraw_if_pending(self) -> None:
        if self._redraw_pending:
            self.redraw()

    def redraw(self) -> None:
        self._redraw_pending = False
        data = self.swarm.telemetry
        drawn = (data.version, self.swarm.reachable)
        if drawn == self._drawn_version:
            return
        self._drawn_version = drawn
        figures, status = data.latest, data.status
        if status is None and figures == CrawlFigures():  # said "crawl stopped · 0 pages" before any answer
            self.query_one("#summary", Static).update(NO_ANSWER)
        else:
            # a node that went down kept showing "crawling" beside the status bar's "unreachable"
            stale = "" if self.swarm.reachable else "[b]last known, the node does not answer:[/b] "
            self.query_one("#summary", Static).update(stale + summary(figures, status))
        self.query_one("#plot-pages", SeriesPlot).show({"pages/s": data.pages_per_s})
        self.query_one("#plot-frontier", SeriesPlot).show({"frontier": data.frontier})
        harvest, shown = plotted_harvest(data.harvest)
        plot = self.query_one("#plot-harvest", SeriesPlot)
        plot.border_title = f"harvest · {shown}" if shown else HARVEST_TITLE
        plot.show(harvest)
        self.query_one("#plot-errors", BarPlot).show(data.errors)
        self.query_one("#plot-peers", SeriesPlot).show({"peers": data.peers_online})
        kilobytes = {
            name: [(t, v / 1024) for t, v in series]
            for name, series in (("in", data.bytes_in), ("out", data.bytes_out))
        }
        self.query_one("#plot-bytes", SeriesPlot).show(kilobytes)


def summary(figures: CrawlFigures, status: Status | None) -> str:
    """The crawl in one line, why it does not run (and what to do) on its own line beneath, then the rest:
    revisits, hosts down, the node's documents and peers. Appended to one line, they wrapped at 100
    columns into "1 revisited, 0 changed" above "by the user; ...", which read as one phrase."""
    lines = [
        f"[b]{escape(figures.headline())}[/b] · {figures.pages} pages · {figures.rate_text()} · "
        f"frontier {figures.frontier_size} · {human_bytes(figures.bytes_crawled)} crawled"
    ]
    if figures.active and figures.in_flight:
        lines[0] += f" · {figures.in_flight} in flight"
    if figures.detail:  # why the crawler does not run, and what to do
        lines.append(f"[dim]{escape(figures.detail)}[/dim]")
    rest = []
    if figures.revisited:
        rest.append(f"{figures.revisited} revisited, {figures.changed} changed")
    if figures.hosts_waiting:  # failed repeatedly: their links wait for a try (crawler.politeness)
        rest.append(f"{counted(figures.hosts_waiting, 'host')} down, {figures.links_waiting} links waiting")
    if status is not None:
        rest.append(
            f"docs {status.local_documents} local, {status.pooled_documents} pooled"
            f" · {status.peers_online} peers · exchanged in {human_bytes(status.bytes_in)}"
            f" out {human_bytes(status.bytes_out)}"
        )
    if rest:
        lines.append(" · ".join(rest))
    return "\n".join(lines)


def plotted_harvest(harvest: Mapping[str, T], most: int = PLOTTED_TOPICS) -> tuple[dict[str, T], str]:
    """The topics' harvest series the chart draws, and which they are when not every topic: up to `most`
    topics each; past that, the top-level topics (a folder's harvest sums its subtopics'), so a node of
    150 topics does not plot the first six of them by name."""
    if len(harvest) <= most:
        return dict(sorted(harvest.items())), ""
    top = sorted(topic for topic in harvest if "/" not in topic) or sorted(harvest)
    chosen = top[:most]
    return {topic: harvest[topic] for topic in chosen}, f"{len(chosen)} of {len(harvest)} topics"
