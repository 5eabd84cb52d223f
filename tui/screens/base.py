"""What every node screen shares: the nav row, the status bar, the footer, and safe calls to the node."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer, Input, Select

from node.client import ClientError, NodeError
from tui.records import topic_choice
from tui.widgets.nav import NavBar
from tui.widgets.status_bar import StatusBar

if TYPE_CHECKING:
    from tui.app import TopicSwarmApp
    from tui.link import NodeLink

T = TypeVar("T")


TOPIC_CHOICE_WIDTH = 20  # columns a topic key has in the Meta and Refine screens' drop-downs (app.tcss: 28)
LIVE_REFRESH = 5.0  # seconds between reloads of a screen whose figures change as the node crawls


class NodeScreen(Screen[None]):
    """A screen over one node; subclasses compose `body()` and load their data in `reload()`."""

    NAME = ""
    LIST = ""  # selector of the screen's main list, where Escape from a text field goes
    LIVE: ClassVar[bool] = False  # figures that change as the node crawls: reloaded while shown (`tick`)
    _reloaded_at = 0.0  # time.monotonic() of the last reload
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "reload", "Refresh"),
        Binding("escape", "leave_field", "Leave field", show=False),
    ]

    @property
    def swarm(self) -> TopicSwarmApp:
        return self.app  # type: ignore[return-value]

    @property
    def link(self) -> NodeLink:
        return self.swarm.link

    def compose(self) -> ComposeResult:
        yield NavBar(self.NAME)
        yield from self.body()
        yield StatusBar()
        yield Footer()

    def body(self) -> ComposeResult:
        raise NotImplementedError

    def on_screen_resume(self) -> None:
        self.swarm.paint_status_bar(self.query_one(StatusBar))
        self._reloaded_at = time.monotonic()
        self.reload()

    def action_leave_field(self) -> None:
        """Escape from a text field (or a closed drop-down) to the screen's list, so the keys 1-6 and the
        screen's keys work again."""
        if not isinstance(self.focused, Input | Select):
            return
        target = next(iter(self.query(self.LIST)), None) if self.LIST else None
        if target is None or not target.focusable:
            target = next((w for w in self.focus_chain if not isinstance(w, Input)), None)
        if target is not None:
            target.focus()

    def action_reload(self) -> None:
        self.reload()

    def why_no_topic(self) -> str:
        """Why no topic is there to act on: the node's topics could not be read (it is down), or it has
        none yet (it said "import bookmarks" while the node was down)."""
        if not self.swarm.reachable:
            return f"the node's topics cannot be read: {self.swarm.problem or 'the node does not answer'}"
        return NO_TOPICS

    def tick(self) -> None:
        """Called on each status poll while the screen is shown: a `LIVE` screen reloads every
        `LIVE_REFRESH` seconds (the Topics screen kept "0+0, nothing to crawl" while the crawl ran)."""
        now = time.monotonic()
        if self.LIVE and now - self._reloaded_at >= LIVE_REFRESH:
            self._reloaded_at = now
            self.reload()

    def reload(self) -> None:
        """Fetch this screen's data (in a worker)."""

    async def ask(self, call: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T | None:
        """Await a node call; on failure show why (status bar and notification) and give None."""
        try:
            answer = await call(*args, **kwargs)
        except ClientError as exc:
            self.swarm.report_problem(exc)
            return None
        self.swarm.report_reachable()
        return answer

    async def ask_refusable(
        self, call: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any
    ) -> tuple[T | None, NodeError | None]:
        """Like `ask`, but a node's refusal comes back unreported, for the screen to show where its data
        would be (an offline node's Meta, Refine and models) or to take as a normal state (nothing yet)."""
        try:
            answer = await call(*args, **kwargs)
        except NodeError as refusal:
            return None, refusal
        except ClientError as exc:
            self.swarm.report_problem(exc)
            return None, None
        self.swarm.report_reachable()
        return answer, None


NO_TOPICS = "no topics yet: import bookmarks on the Topics screen (2, then i)"


class TopicScreen(NodeScreen):
    """A screen about one topic at a time, chosen in its Select (Meta, Refine)."""

    TOPIC_SELECT: ClassVar[str] = ""  # the Select's CSS id, e.g. "#meta-topic"

    def reload(self) -> None:
        self.fetch_topics()

    def topic(self) -> str | None:
        value = self.query_one(self.TOPIC_SELECT, Select).value
        return value if isinstance(value, str) else None

    @work(exclusive=True, group="topics")
    async def fetch_topics(self) -> None:
        topics = await self.ask(self.link.topics)
        if topics is None:
            return
        select = self.query_one(self.TOPIC_SELECT, Select)
        current = self.topic()
        keys = [t.key for t in topics]
        select.set_options([(topic_choice(k, TOPIC_CHOICE_WIDTH), k) for k in keys])
        if keys:
            select.value = current if current in keys else keys[0]
            self.topic_chosen(str(select.value))
        else:
            self.no_topics()

    def on_select_changed(self, event: Select.Changed) -> None:
        if isinstance(event.value, str):
            self.topic_chosen(event.value)

    def topic_chosen(self, topic: str) -> None:
        """Load what the screen shows about `topic`."""
        raise NotImplementedError

    def no_topics(self) -> None:
        """The node has no topics: say how to get some where the screen's content would be."""
        raise NotImplementedError
