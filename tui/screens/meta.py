"""The meta-classifier's loss/accuracy trade-off with the chosen loss marked, and the control to change it."""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.markup import escape
from textual.widgets import Input, Select, Static

from node.client import NodeError
from tui.messages import LossChanged, MetaFetched
from tui.records import CurvePoint, MetaState
from tui.screens.base import NO_TOPICS, TopicScreen
from tui.widgets.plots import NO_META, CurvePlot

LOSS_STEP = 0.05
MAX_LOSS = 0.95


def clamp_loss(loss: float) -> float:
    return round(min(MAX_LOSS, max(0.0, loss)), 4)


def build_report(answer: dict) -> str:
    """What a build did; its held-out accuracy is on the curve (the build's own figure is on training
    documents, which flatter it)."""
    used = answer.get("peers_used")
    members = (
        f"its own model and {used} peer model{'s' * (used != 1)}"
        if used
        else "its own model alone (no peer model yet)"
    )
    return f"built from {members}; held-out accuracy: see the curve"


def curve_title(meta: MetaState) -> str:
    """What the plotted curves are measured on, in the plot's border."""
    if meta.held_out:
        return (
            f"accuracy by loss · held-out: {meta.held_out_folds}-fold CV, {meta.held_out_documents} "
            "labelled docs · grey: training docs (optimistic)"
        )
    return f"accuracy vs loss on its training docs (optimistic; no held-out curve: {meta.held_out_why})"


def accuracy_text(meta: MetaState) -> str:
    """The accuracy at the chosen loss, held-out when measured, with what it was measured on."""
    held = _nearest(meta.held_out, meta.loss)
    trained = _nearest(meta.curve, meta.loss)
    if held is not None:
        text = f" · held-out accuracy ≈ {held.accuracy:.3f}"
        return text + ("" if trained is None else f" (on training docs {trained.accuracy:.3f})")
    if trained is not None:
        return f" · accuracy on training docs ≈ {trained.accuracy:.3f} (optimistic)"
    return ""


def _nearest(curve: tuple[CurvePoint, ...], loss: float) -> CurvePoint | None:
    return min(curve, key=lambda p: abs(p.loss - loss), default=None)


class MetaScreen(TopicScreen):
    NAME = "meta"
    TOPIC_SELECT = "#meta-topic"
    LIST = "#meta-topic"
    AUTO_FOCUS = "#meta-topic"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left_square_bracket", "step(-1)", "Loss -"),
        Binding("right_square_bracket", "step(1)", "Loss +"),
        Binding("l", "focus_loss", "Set loss"),
        Binding("b", "build", "Build"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.meta: MetaState | None = None
        self.building: str | None = None  # the topic whose meta-classifier is being built
        self.builds_finished = 0  # builds answered (built or refused) since the screen opened
        self.meta_missing = False  # the node has no meta-classifier of the chosen topic to show

    def body(self) -> ComposeResult:
        with Horizontal(id="meta-row"):
            yield Select([], prompt="topic", id="meta-topic")
            yield Input(placeholder="loss 0-0.95", id="loss", type="number")
            yield Static("", id="meta-counts")
        yield CurvePlot(id="curve")

    def on_mount(self) -> None:
        self.query_one("#meta-topic", Select).focus()
        self.query_one(CurvePlot).show((), None)

    def topic_chosen(self, topic: str) -> None:
        self.fetch_meta(topic)

    @work(exclusive=True, group="meta")
    async def fetch_meta(self, topic: str) -> None:
        meta, refusal = await self.ask_refusable(self.link.meta, topic)
        if refusal is not None:
            self.show_missing(topic, refusal)
        elif meta is not None:
            self.post_message(MetaFetched(meta))

    def no_topics(self) -> None:
        self.query_one(CurvePlot).show((), None, title="accuracy vs loss", empty=NO_TOPICS)

    def show_missing(self, topic: str, refusal: NodeError) -> None:
        """No meta-classifier to show: none built yet (a normal state, not an error), or the node cannot
        build one (offline: the reason goes where the curve would be, so `b` is not offered in vain)."""
        self.meta, self.meta_missing = None, True
        self.query_one("#loss", Input).value = ""
        self.query_one("#meta-counts", Static).update(f"{escape(topic)}: no meta-classifier")
        if refusal.status == 404:
            self.query_one(CurvePlot).show((), None, title="accuracy vs loss")
            return
        self.query_one(CurvePlot).show((), None, title="accuracy vs loss", empty=refusal.detail)
        self.swarm.report_problem(refusal)

    def on_meta_fetched(self, message: MetaFetched) -> None:
        if self.app.current_screen() is None:  # the answer came after the app shut down: nothing to show
            return
        self.meta, self.meta_missing = message.meta, False
        loss_input = self.query_one("#loss", Input)
        if not loss_input.has_focus:  # a fetch landing while the user types a loss leaves the typing alone
            loss_input.value = f"{message.meta.loss:.2f}"
        self._draw()

    def _draw(self) -> None:
        meta = self.meta
        if meta is None:
            return
        self.query_one(CurvePlot).show(meta.held_out, meta.loss, meta.curve, curve_title(meta))
        self.query_one("#meta-counts", Static).update(
            f"loss [b]{meta.loss:.2f}[/b] · kept [b]{meta.kept}[/b] · rejected [b]{meta.rejected}[/b] · "
            f"abstained [b]{meta.abstained}[/b]{accuracy_text(meta)}"
        )

    def action_step(self, direction: int) -> None:
        topic = self.topic()
        if topic is None or self.meta is None:
            plot = self.query_one(CurvePlot)
            self.notify(plot.empty_text or NO_META, severity="warning")  # an offline node's reason
            return
        self.change_loss(topic, clamp_loss(self.meta.loss + direction * LOSS_STEP))

    def action_focus_loss(self) -> None:
        self.query_one("#loss", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        topic = self.topic()
        try:
            loss = float(event.value)
        except ValueError:
            self.notify("the loss is a number between 0 and 0.95", severity="error")
            return
        if topic is not None:
            self.change_loss(topic, clamp_loss(loss))

    @work(exclusive=True, group="loss")
    async def change_loss(self, topic: str, loss: float) -> None:
        setting = await self.ask(self.link.set_loss, topic, loss)
        if setting is not None:
            self.post_message(LossChanged(topic, setting))

    def on_loss_changed(self, message: LossChanged) -> None:
        """Show the new counts at once, then the meta-classifier the node built again for the loss (which
        peers' models vote can depend on it, and so do its curves)."""
        if self.meta is not None and self.meta.topic == message.topic:
            setting = message.setting
            self.meta = replace(
                self.meta,
                loss=setting.loss,
                kept=setting.kept,
                rejected=setting.rejected,
                abstained=setting.abstained,
            )
            self.query_one("#loss", Input).value = f"{setting.loss:.2f}"
            self._draw()
        self.fetch_meta(message.topic)

    def action_build(self) -> None:
        topic = self.topic()
        if topic is None:
            self.notify(self.why_no_topic(), severity="warning")
            return
        self.build(topic, self.meta.loss if self.meta is not None else None)  # None: the node's default

    @work(exclusive=True, group="meta")
    async def build(self, topic: str, loss: float | None) -> None:
        self.building = topic
        try:
            at = "the node's default loss" if loss is None else f"loss {loss:.2f}"
            self.notify(f"building the meta-classifier of {topic} at {at}…")
            answer = await self.ask(self.link.build_meta, topic, loss)
            if answer is not None:
                self.notify(build_report(answer))
                meta = await self.ask(self.link.meta, topic)
                if meta is not None:
                    self.on_meta_fetched(MetaFetched(meta))
        finally:
            self.building = None
            self.builds_finished += 1
