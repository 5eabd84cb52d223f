"""Clustering proposals (label, top terms, sample titles, size, abstained): accept, rename, reject."""

from __future__ import annotations

from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.markup import escape
from textual.widgets import DataTable, Input, Select, Static

from tui.messages import ProposalDecided, ProposalsFetched
from tui.records import Proposal
from tui.screens.base import NO_TOPICS, TopicScreen
from tui.widgets.prompt import Prompt


def proposal_details(p: Proposal) -> str:
    titles = "\n".join(f"• {escape(t)}" for t in p.sample_titles[:8]) or "–"
    return (
        f"[b]{escape(p.label)}[/b]  ({escape(p.status)})\n"
        f"subtopic of {escape(p.topic)} · {p.size} documents · {p.abstained} abstained\n\n"
        f"top terms: {escape(', '.join(p.top_terms)) or '–'}\n\nsample titles:\n{titles}\n\n"
        "[dim]a accept · n accept under a new name · x reject[/dim]"
    )


class RefineScreen(TopicScreen):
    NAME = "refine"
    TOPIC_SELECT = "#refine-topic"
    LIST = "#proposals"
    AUTO_FOCUS = "#proposals"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("g", "propose", "Propose"),
        Binding("a", "accept", "Accept"),
        Binding("n", "rename", "Rename"),
        Binding("x", "reject", "Reject"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.proposals: list[Proposal] = []

    def body(self) -> ComposeResult:
        with Horizontal(id="refine-row"):
            yield Select([], prompt="topic", id="refine-topic")
            yield Input(placeholder="k (node's)", id="k", type="integer")  # blank: cooperation.cluster_k
            yield Static(
                "g or Enter in k: cluster the topic into k subtopics (2-32; blank: the node's)",
                id="refine-hint",
            )
        with Horizontal(id="refine-pane"):
            yield DataTable(id="proposals", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="proposal-side"):
                yield Static("no proposals yet", id="proposal-details")

    def on_mount(self) -> None:
        table = self.query_one("#proposals", DataTable)
        table.add_column("label", width=20, key="label")
        table.add_column("size", width=5, key="size")
        table.add_column("abst", width=5, key="abstained")
        table.add_column("status", width=9, key="status")

    def topic_chosen(self, topic: str) -> None:
        self.fetch_proposals(topic)

    @work(exclusive=True, group="proposals")
    async def fetch_proposals(self, topic: str) -> None:
        proposals, refusal = await self.ask_refusable(self.link.proposals, topic)
        if refusal is not None:  # offline: say so where proposals would be, not only in the status bar
            self.query_one("#proposal-details", Static).update(f"no proposals: {escape(refusal.detail)}")
            self.swarm.report_problem(refusal)
        elif proposals is not None:
            self.post_message(ProposalsFetched(topic, proposals))

    def on_proposals_fetched(self, message: ProposalsFetched) -> None:
        if message.topic != self.topic():
            return
        self.proposals = sorted(message.proposals, key=lambda p: (not p.pending, -p.size, p.id))
        table = self.query_one("#proposals", DataTable)
        table.clear()
        for p in self.proposals:
            table.add_row(p.label, str(p.size), str(p.abstained), p.status, key=p.id)
        table.border_title = f"proposals for {message.topic} ({len(self.proposals)})"
        details = self.query_one("#proposal-details", Static)
        if self.proposals:
            table.move_cursor(row=0)
            details.update(proposal_details(self.proposals[0]))
        else:
            details.update("no proposals yet: press g to cluster this topic's documents")

    def selected(self) -> Proposal | None:
        table = self.query_one("#proposals", DataTable)
        if not self.proposals or not 0 <= table.cursor_row < len(self.proposals):
            return None
        return self.proposals[table.cursor_row]

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        p = self.selected()
        if p is not None:
            self.query_one("#proposal-details", Static).update(proposal_details(p))

    def no_topics(self) -> None:
        self.query_one("#proposal-details", Static).update(NO_TOPICS)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "k":  # Enter in the field that asks for k did nothing
            self.action_propose()

    def action_propose(self) -> None:
        topic = self.topic()
        if topic is None:
            self.notify(self.why_no_topic(), severity="warning")
            return
        try:
            k = int(self.query_one("#k", Input).value) or None
        except ValueError:  # blank: the node's cooperation.cluster_k
            k = None
        self.propose(topic, k)

    @work(exclusive=True, group="proposals")
    async def propose(self, topic: str, k: int | None) -> None:
        into = f"{k} subtopics" if k else "subtopics (as many as the node's cooperation.cluster_k)"
        self.notify(f"clustering {topic} into {into}…")
        proposals = await self.ask(self.link.refine, topic, k)
        if proposals is not None:
            all_of_topic = await self.ask(self.link.proposals, topic)
            self.post_message(
                ProposalsFetched(topic, all_of_topic if all_of_topic is not None else proposals)
            )

    def pending_selection(self) -> Proposal | None:
        """The highlighted proposal while it awaits a decision (a decided one says so instead)."""
        p = self.selected()
        if p is None:
            self.notify("no proposal selected: press g to cluster the topic", severity="warning")
        elif not p.pending:
            self.notify(f"{p.label} is already {p.status}", severity="warning")
            return None
        return p

    def action_accept(self) -> None:
        p = self.pending_selection()
        if p is not None:
            self.decide(p, "accept", None)

    def action_rename(self) -> None:
        p = self.pending_selection()
        if p is not None:
            self.app.push_screen(
                Prompt(f"Name of the new subtopic of {p.topic}", p.label),
                lambda name: self.decide(p, "accept", name) if name else None,
            )

    def action_reject(self) -> None:
        p = self.pending_selection()
        if p is not None:
            self.decide(p, "reject", None)

    @work(group="decide")
    async def decide(self, p: Proposal, action: str, name: str | None) -> None:
        if action == "accept":
            decided = await self.ask(self.link.accept, p.id, name)
        else:
            decided = await self.ask(self.link.reject, p.id)
        if decided is not None:
            self.post_message(ProposalDecided(decided, action))

    def on_proposal_decided(self, message: ProposalDecided) -> None:
        p = message.proposal
        verb = "accepted: new subtopic" if message.action == "accept" else "rejected"
        # what follows an acceptance, as `refine --accept` says it
        learns = f": {p.learns}" if message.action == "accept" and p.learns else ""
        self.notify(f"{verb} {p.label}{learns}", timeout=10 if learns else 5)
        topic = self.topic()
        if topic is not None:
            self.fetch_proposals(topic)
