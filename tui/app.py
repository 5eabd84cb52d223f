"""The topicswarm terminal UI: a client of one node's control API (Textual under asyncio).

Six screens (one Textual mode each, so each keeps its state): dashboard, topics, results, peers, meta,
refine. Keys 1-6 switch screens, `?` shows help, ctrl+p the command palette. Live crawl figures arrive
from the node's event stream as coalescing `StatsUpdated` messages; status and metrics history are polled.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar

from textual import work
from textual.app import App, ScreenStackError, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen

from node.client import ClientError, NodeError, NodeUnreachable, Unauthorised
from tui.link import NodeLink
from tui.messages import MetricsFetched, NodeEvent, NodeProblem, NodeReachable, StatsUpdated, StatusFetched
from tui.records import short_peer_id
from tui.screens.base import NodeScreen
from tui.screens.dashboard import DashboardScreen
from tui.screens.help import HelpScreen
from tui.screens.meta import MetaScreen
from tui.screens.peers import PeersScreen
from tui.screens.refine import RefineScreen
from tui.screens.results import ResultsScreen
from tui.screens.topics import TopicsScreen
from tui.telemetry import Telemetry
from tui.widgets.nav import SCREENS
from tui.widgets.status_bar import StatusBar

STATUS_INTERVAL = 2.0
METRICS_INTERVAL = 5.0
RECONNECT_DELAY = 3.0
PROBLEM_HOLD = 20.0  # seconds a refusal stays in the status bar once the node answers again
CRAWL_COMMANDS = (  # action, command, what it does beyond its name
    ("start", "Start", ""),
    ("pause", "Pause", ": the requests in flight finish first"),
    ("stop", "Stop", " at once: the requests in flight are cancelled, their links kept"),
)


def describe(exc: ClientError) -> str:
    """One line for the status bar: what went wrong and what to do."""
    if isinstance(exc, NodeError):
        return f"{exc.kind}: {exc.detail}"
    if isinstance(exc, Unauthorised | NodeUnreachable):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


class TopicSwarmApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "topicswarm"
    MODES: ClassVar[dict[str, str | Callable[[], Screen]]] = {
        "dashboard": DashboardScreen,
        "topics": TopicsScreen,
        "results": ResultsScreen,
        "peers": PeersScreen,
        "meta": MetaScreen,
        "refine": RefineScreen,
    }
    DEFAULT_MODE = "dashboard"
    BINDINGS: ClassVar[list[BindingType]] = [
        *(
            Binding(str(n), f"show('{name}')", title, show=False)
            for n, (name, title) in enumerate(SCREENS, 1)
        ),
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, data_dir: Path, *, link: NodeLink | None = None, live: bool = True) -> None:
        super().__init__()
        self.data_dir = Path(data_dir)
        self.link = link or NodeLink(self.data_dir)
        self.live = live
        self.telemetry = Telemetry()
        self.problem = ""
        self.problem_at = 0.0
        self.reachable = True
        self.results_topic: str | None = None  # a topic whose results the Results screen lists next

    # -- lifecycle -------------------------------------------------------------------------------------------
    def on_mount(self) -> None:
        self.sub_title = str(self.data_dir)
        if self.live:
            self.poll_status()
            self.poll_metrics()
            self.stream_events()
            self.set_interval(STATUS_INTERVAL, self.poll_status)
            self.set_interval(METRICS_INTERVAL, self.poll_metrics)

    async def on_unmount(self) -> None:
        self.workers.cancel_all()
        await self.link.close()

    # -- navigation ------------------------------------------------------------------------------------------
    def action_show(self, name: str) -> None:
        if name != self.current_mode:
            self.switch_mode(name)

    def notify(self, message: str, **options: Any) -> None:
        """Every notification is plain text (the screens' too, which come through here): they carry the
        node's words, whose brackets ("[node] max_pages in config.toml") Textual's markup took for styles
        and dropped."""
        super().notify(message, **{**options, "markup": False})

    def show_results(self, topic: str) -> None:
        """The Results screen listing the topic's most confident results (the Topics screen's `v`)."""
        self.results_topic = topic
        if self.current_mode == "results":
            self.screen.reload()  # type: ignore[attr-defined]
        else:
            self.switch_mode("results")

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for _, (name, title) in enumerate(SCREENS, 1):
            yield SystemCommand(
                f"Go to {title}", f"Show the {title.lower()} screen", lambda n=name: self.action_show(n)
            )
        for action, what, how in CRAWL_COMMANDS:
            yield SystemCommand(
                f"{what} crawling",
                f"{what} the crawl of every topic{how}",
                lambda a=action: self.crawl_all(a),
            )
        yield SystemCommand(
            "Stop the node", "Stop the node as Ctrl-C would (it saves its state), then quit", self.stop_node
        )
        yield SystemCommand("Help", "Keys of every screen", self.action_help)

    # -- polling and the live stream -------------------------------------------------------------------------
    @work(exclusive=True, group="status")
    async def poll_status(self) -> None:
        try:
            status = await self.link.status()
        except ClientError as exc:
            self.post_message(NodeProblem(describe(exc), connection=not isinstance(exc, NodeError)))
            return
        self.post_message(StatusFetched(status))

    @work(exclusive=True, group="metrics")
    async def poll_metrics(self) -> None:
        try:
            samples = await self.link.metrics(self.telemetry.last_sample_t)
        except ClientError:
            return  # poll_status reports the problem
        self.post_message(MetricsFetched(samples))

    @work(exclusive=True, group="events")
    async def stream_events(self) -> None:
        while True:
            try:
                async for kind, data in self.link.stats_events():
                    if kind == "stats":
                        self.post_message(StatsUpdated(data, time.time()))
                    else:
                        self.post_message(NodeEvent(kind, data))
            except ClientError as exc:
                self.post_message(NodeProblem(describe(exc), connection=True))
                await self.link.reset()
            await asyncio.sleep(RECONNECT_DELAY)

    @work(exclusive=True, group="stop")
    async def stop_node(self) -> None:
        """Stop the node, then quit: `q` leaves it running, and one `topicswarm tui` started in the background
        had no other way to stop than `kill`."""
        try:
            pid = await self.link.stop_node()
        except ClientError as exc:
            self.report_problem(exc)
            return
        self.exit(
            message=f"the node (pid {pid}) is stopping: it saves its frontier and state; "
            f"`topicswarm tui --data {self.data_dir}` starts it again"
        )

    @work(group="crawl")
    async def crawl_all(self, action: str) -> None:
        try:
            answer = await self.link.crawl(action)
        except ClientError as exc:
            self.report_problem(exc)
            return
        self.notify(answer)
        self.poll_status()

    def on_stats_updated(self, message: StatsUpdated) -> None:
        self.telemetry.add_live(message.figures, message.at)
        self.report_reachable()
        for bar in self.status_bars():
            bar.show_figures(message.figures)
        if self.on_dashboard():
            self.screen.schedule_redraw()

    def on_status_fetched(self, message: StatusFetched) -> None:
        self.telemetry.set_status(message.status)
        self.report_reachable()
        for bar in self.status_bars():
            bar.show_status(message.status)
        if self.on_dashboard():
            self.screen.schedule_redraw()
        screen = self.current_screen()
        if isinstance(screen, NodeScreen):
            screen.tick()

    def on_metrics_fetched(self, message: MetricsFetched) -> None:
        self.telemetry.add_samples(message.samples)
        if self.on_dashboard():
            self.screen.schedule_redraw()

    def on_node_event(self, message: NodeEvent) -> None:
        # Meta-classifiers are rebuilt every cooperation round: the Meta screen shows them; a toast is noise.
        if message.kind in ("model", "refine") and isinstance(message.data, dict):
            topic = message.data.get("topic") or "a topic"
            if message.kind == "model":
                origin = str(message.data.get("origin") or "a peer")
                source = "this node retrained it" if origin == "local" else f"from {short_peer_id(origin)}"
                self.notify(f"new model for {topic}: {source}", timeout=3)
            elif self.current_mode != "refine":  # the Refine screen shows them as they come
                self.notify(f"subtopic proposals for {topic}: see Refine (6)", timeout=3)

    def on_node_problem(self, message: NodeProblem) -> None:
        self.show_problem(message.text, connection=message.connection)

    def on_node_reachable(self, message: NodeReachable) -> None:
        for bar in self.status_bars():
            bar.clear_problem()

    def current_screen(self) -> Screen | None:
        """The active screen, or None while the app starts or shuts down (a worker's answer can arrive
        after the last screen left the stack, when `self.screen` raises ScreenStackError)."""
        try:
            return self.screen
        except ScreenStackError:
            return None

    def status_bars(self) -> list[StatusBar]:
        screen = self.current_screen()
        return list(screen.query(StatusBar)) if screen is not None else []

    def on_dashboard(self) -> bool:
        return isinstance(self.current_screen(), DashboardScreen)

    # -- problems --------------------------------------------------------------------------------------------
    def report_problem(self, exc: ClientError) -> None:
        """A failed request: the status bar and a notification say why and what to do."""
        self.show_problem(describe(exc), connection=not isinstance(exc, NodeError))

    def show_problem(self, text: str, *, connection: bool = False) -> None:
        changed = text != self.problem
        self.problem, self.problem_at = text, time.monotonic()
        self.reachable = self.reachable and not connection
        for bar in self.status_bars():
            bar.show_problem(text, connection=connection)
        if connection and self.on_dashboard():  # its figures are now the last known ones
            self.screen.schedule_redraw()
        if changed:
            self.notify(text, title="node", severity="error", timeout=6)

    def report_reachable(self) -> None:
        """The node answered: a connection problem is over; a refusal stays PROBLEM_HOLD seconds (it used to
        stay until the next connection problem, long after it mattered)."""
        stale = bool(self.problem) and time.monotonic() - self.problem_at > PROBLEM_HOLD
        if not self.reachable or stale:
            self.reachable, self.problem = True, ""
            self.post_message(NodeReachable())

    def paint_status_bar(self, bar: StatusBar) -> None:
        """A screen coming back shows the latest known state at once."""
        if self.telemetry.status is not None:
            bar.show_status(self.telemetry.status)
        if self.problem:
            bar.show_problem(self.problem, connection=not self.reachable)
        else:  # one that ended while another screen was shown (only the shown screen's bar is cleared)
            bar.clear_problem()
