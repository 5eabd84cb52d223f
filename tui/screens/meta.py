"""The meta-classifier's loss/accuracy trade-off with the chosen loss marked, and the control to change it."""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.markup import escape
from textual.timer import Timer
from textual.widgets import Input, Select, Static

from node.client import NodeError
from node.wording import alone_text, counted
from tui.messages import LossChanged, MetaFetched
from tui.records import CurvePoint, MetaState
from tui.screens.base import NO_TOPICS, TopicScreen
from tui.widgets.plots import NO_META, CurvePlot

LOSS_STEP = 0.05
MAX_LOSS = 0.95
LOSS_RANGE = f"the loss is a number between 0 and {MAX_LOSS}"
APPLY_AFTER = 0.4  # seconds without another loss key before the node is asked to apply the chosen loss


def clamp_loss(loss: float) -> float:
    return round(min(MAX_LOSS, max(0.0, loss)), 4)


def parse_loss(text: str) -> float | None:
    """The typed loss, or None when it is not a number from 0 to MAX_LOSS: `7` became 0.95 and `-1` 0.00
    without a word, so a value out of range is refused like one that is not a number."""
    try:
        loss = float(text)
    except ValueError:
        return None
    return round(loss, 4) if 0.0 <= loss <= MAX_LOSS else None  # NaN fails both comparisons


def same_loss(a: float, b: float) -> bool:
    return abs(a - b) < 1e-6


def build_report(answer: dict) -> str:
    """What a build did; its held-out accuracy is on the curve (the build's own figure is on training
    documents, which flatter it)."""
    used = answer.get("peers_used")
    members = f"its own model and {counted(used, 'peer model')}" if used else alone_text(answer)
    return f"built from {members}; held-out accuracy: see the curve"


def curve_title(meta: MetaState) -> str:
    """What the plotted curves are measured on, in the plot's border."""
    if meta.held_out:
        return (
            f"accuracy by loss · held-out: {meta.held_out_folds}-fold CV, {meta.held_out_documents} "
            "labelled docs · grey: training docs (optimistic)"
        )
    return f"accuracy vs loss on its training docs (optimistic; no held-out curve: {meta.held_out_why})"


def counts_text(meta: MetaState, loss: float) -> str:
    """The header: the chosen `loss`, and the counts once the node applied it (until then they are of the
    loss before, so they are left out rather than shown beside a loss they do not belong to)."""
    if not same_loss(loss, meta.loss):
        return f"loss [b]{loss:.2f}[/b] · being applied (the node builds again){accuracy_text(meta, loss)}"
    return (
        f"loss [b]{loss:.2f}[/b] · kept [b]{meta.kept}[/b] · rejected [b]{meta.rejected}[/b] · "
        f"abstained [b]{meta.abstained}[/b]{accuracy_text(meta, loss)}"
    )


def accuracy_text(meta: MetaState, loss: float) -> str:
    """The accuracy at `loss` read off the curves, held-out when measured, with what it was measured on."""
    held = _nearest(meta.held_out, loss)
    trained = _nearest(meta.curve, loss)
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
        self.pending: tuple[str, float] | None = None  # (topic, loss) chosen, not yet applied by the node
        self._apply_timer: Timer | None = None

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
        self._draw()

    def chosen_loss(self) -> float | None:
        """The loss the screen shows: the one last chosen until the node has applied it, else the one in
        force (a header showing the node's last answer lagged behind fast key presses)."""
        if self.meta is None:
            return None
        if self.pending is not None and self.pending[0] == self.meta.topic:
            return self.pending[1]
        return self.meta.loss

    def _draw(self) -> None:
        meta, loss = self.meta, self.chosen_loss()
        if meta is None or loss is None:
            return
        self.query_one(CurvePlot).show(meta.held_out, loss, meta.curve, curve_title(meta))
        self.query_one("#meta-counts", Static).update(counts_text(meta, loss))
        loss_input = self.query_one("#loss", Input)
        if not loss_input.has_focus:  # a redraw while the user types a loss leaves the typing alone
            loss_input.value = f"{loss:.2f}"

    def action_step(self, direction: int) -> None:
        """One step of the loss per press, from the loss last chosen (stepping from the node's last answer
        dropped presses that came faster than its rebuilds); at an end of the range, say where it ends."""
        topic, loss = self.topic(), self.chosen_loss()
        if topic is None or loss is None:
            plot = self.query_one(CurvePlot)
            self.notify(plot.empty_text or NO_META, severity="warning")  # an offline node's reason
            return
        stepped = clamp_loss(loss + direction * LOSS_STEP)
        if same_loss(stepped, loss):
            end = f"at most {MAX_LOSS:.2f}" if direction > 0 else "at least 0"
            self.notify(f"the loss is {end} (it is {loss:.2f})", severity="warning")
            return
        self.choose_loss(topic, stepped, APPLY_AFTER)

    def action_focus_loss(self) -> None:
        self.query_one("#loss", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        loss = parse_loss(event.value)
        if loss is None:
            self.notify(LOSS_RANGE, severity="error")
            return
        topic = self.topic()
        if topic is not None:
            self.choose_loss(topic, loss, 0.0)

    def on_input_blurred(self, event: Input.Blurred) -> None:
        """Leaving the loss field (Escape, tab) discards a loss typed without Enter: the field kept it while
        the header showed the loss in force, and `b` built at the latter."""
        loss = self.chosen_loss()
        if event.input.id != "loss" or not self.app.app_focus or loss is None:
            return  # the terminal lost the focus: the typing is still the user's
        typed = parse_loss(event.value)
        if event.value.strip() and (typed is None or not same_loss(typed, loss)):
            self.notify(f"loss {event.value} not applied (Enter applies a typed loss)", severity="warning")
        event.input.value = f"{loss:.2f}"

    def choose_loss(self, topic: str, loss: float, delay: float) -> None:
        """Show the chosen loss at once, and have the node apply it once no other choice came for `delay`
        seconds: each application rebuilds the meta-classifier, so fast presses make one call, the last."""
        self.pending = (topic, loss)
        self._draw()
        if self._apply_timer is not None:
            self._apply_timer.stop()
        if delay > 0:
            self._apply_timer = self.set_timer(delay, self.apply_pending)
        else:  # Enter on a typed loss: nothing to wait for (a timer of 0 s divides by zero)
            self.apply_pending()

    def apply_pending(self) -> None:
        self._apply_timer = None
        if self.pending is not None:
            self.change_loss(*self.pending)

    @work(exclusive=True, group="loss")
    async def change_loss(self, topic: str, loss: float) -> None:
        setting = await self.ask(self.link.set_loss, topic, loss)
        if setting is not None:
            self.post_message(LossChanged(topic, setting))
        elif self.pending == (topic, loss):  # not applied (the status bar says why): show the one in force
            self.pending = None
            self._draw()

    def on_loss_changed(self, message: LossChanged) -> None:
        """Show the new counts at once, then the meta-classifier the node built again for the loss (which
        peers' models vote can depend on it, and so do its curves). An answer for a loss chosen before the
        last choice of the same topic is stale: the call for the last one follows."""
        setting = message.setting
        if self.pending is not None and self.pending[0] == message.topic:
            if not same_loss(self.pending[1], setting.loss):
                return
            self.pending = None
        if self.meta is not None and self.meta.topic == message.topic:
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
        self.build(topic, self.chosen_loss())  # None: the node's default

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
