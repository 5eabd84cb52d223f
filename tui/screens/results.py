"""Search over local and pooled results: a ranked table, a preview pane, feedback and opening in a browser.
Without words the screen lists the most confident results under its filters, so a user browses a topic or
the peers' results before knowing what to type."""

from __future__ import annotations

import os
import re
import sys
import time
import webbrowser
from dataclasses import replace
from typing import ClassVar

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.markup import escape
from textual.widgets import DataTable, Input, Select, Static

from node.wording import NOTHING_MATCHES, counted, without_filters
from tui.messages import FeedbackSent, QuerySubmitted, ResultsFetched
from tui.records import Document, Hit, SearchResults, short_peer_id, topic_choice
from tui.screens.base import NodeScreen
from tui.widgets.status_bar import human_bytes

ORIGINS = [("any origin", "any"), ("this node", "local"), ("peers", "pooled")]
VERDICTS = [("accepted", "accepted"), ("abstained", "abstained"), ("any verdict", "any")]
ALL_TOPICS = "*"
TOPIC_FILTER_WIDTH = 14  # columns a topic key has in the topic filter (app.tcss: 22)
NO_VERDICT = "not filtered yet (accepted by the crawler; no meta-classifier has judged it)"
VERDICT_MEANS = {  # a verdict's word alone left "abstained" beside a confidence of 1.11 unexplained
    "accepted": "accepted (kept by the topic's meta-classifier at your loss)",
    "rejected": "rejected (the topic's meta-classifier filtered it out at your loss)",
    "abstained": "abstained (left undecided at your loss: the models disagree on it, or none is sure enough; "
    "the confidence is the crawler's)",
}


def verdict_text(verdict: str | None) -> str:
    return VERDICT_MEANS.get(verdict or "", verdict) if verdict else NO_VERDICT


def keys_hint(enter: str, local: bool) -> str:
    """The keys a result's pane takes; `f` only for this node's own pages (a peer's result is not this
    node's to fetch)."""
    fetch = " · f fetch again" if local else ""
    return f"[dim]{enter} · + relevant · - irrelevant · o open in browser{fetch}[/dim]"


def graphical_session() -> bool:
    """Whether a browser can open beside the UI. Without a display, webbrowser falls back to a text browser
    (lynx, w3m) in this very terminal, which fights the UI for it."""
    return sys.platform in ("darwin", "win32") or bool(
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    )


def origin_label(hit: Hit) -> str:
    return "this node" if hit.is_local else f"peer {short_peer_id(hit.origin)}"


QUERY_TERM = re.compile(r"\[\[(.+?)\]\]")  # the node marks query terms in previews as [[term]]


def highlighted(text: str) -> str:
    """The preview as markup: its text escaped, the node's query-term marks shown in bold reverse. Line
    breaks become spaces: a page's navigation lines ("Home", "Menu", ...) used to fill the pane one word
    per line and push the marked passages out of sight."""
    parts = QUERY_TERM.split(" ".join(text.split()))
    marked = (escape(part) if i % 2 == 0 else f"[b reverse]{escape(part)}[/]" for i, part in enumerate(parts))
    return "".join(marked)


def preview(hit: Hit) -> str:
    peers = [o for o in hit.origins if o not in ("local", hit.origin)]
    also = f" (also from {counted(len(peers), 'peer')})" if peers else ""
    return (
        f"[b]{escape(hit.title)}[/b]\n{escape(hit.url)}\n\n"
        f"topic: {escape(hit.topic or '–')} · confidence {hit.confidence:.2f}\n"
        f"verdict: {escape(verdict_text(hit.verdict))}\n"
        f"origin: {escape(origin_label(hit) + also)}\n\n{highlighted(hit.preview)}\n\n"
        + keys_hint("Enter the stored page", hit.is_local)
    )


def document_view(doc: Document) -> str:
    """The stored page behind a hit: how it was fetched and judged, and the start of its text."""
    judged = "accepted by its topic's classifier" if doc.accepted else "not accepted by a topic's classifier"
    confidence = "–" if doc.confidence is None else f"{doc.confidence:.2f}"
    fetched = time.strftime("%Y-%m-%d %H:%M", time.localtime(doc.fetched_at)) if doc.fetched_at else "–"
    lines = [
        f"[b]{escape(doc.title)}[/b]",
        escape(doc.url),
        "",
        f"topic: {escape(doc.topic or '–')} · confidence {confidence} · {judged}",
        f"verdict: {escape(verdict_text(doc.verdict))}",
    ]
    if doc.origin != "local":  # a pooled result: its preview is all this node holds of it
        lines.append(
            f"a result of peer {escape(short_peer_id(doc.origin))}, received {fetched}: this node holds its "
            "preview"
        )
        if doc.feedback:
            lines.append(f"your feedback: {escape(', '.join(doc.feedback))}")
        lines += ["", "[dim]the peer's preview:[/dim]", escape(" ".join(doc.text.split()))]
        lines += ["", keys_hint("Enter back to the result", local=False)]
        return "\n".join(lines)
    lines.append(
        f"fetched {fetched} · depth {doc.depth} · {human_bytes(doc.size)} · {doc.links} links · "
        f"language {escape(doc.lang or '–')}"
    )
    if doc.duplicate_of is not None:
        lines.append(f"a copy of document {doc.duplicate_of}")
    if doc.feedback:
        lines.append(f"your feedback: {escape(', '.join(doc.feedback))}")
    shown = len(doc.text)
    extent = (
        f"all {doc.text_length:,}" if shown >= doc.text_length else f"first {shown:,} of {doc.text_length:,}"
    )
    lines += ["", f"[dim]text ({extent} characters):[/dim]", escape(" ".join(doc.text.split()))]
    lines += ["", keys_hint("Enter back to the result", local=True)]
    return "\n".join(lines)


class SearchInput(Input):
    """The query field: `/` in an empty field is the "search" key the README and footer name, not the
    query's first character (the field has the focus when the screen opens, so it used to read "/sql")."""

    async def _on_key(self, event: events.Key) -> None:
        if event.character == "/" and not self.value:
            event.stop()
            event.prevent_default()
            return
        await super()._on_key(event)


class ResultsScreen(NodeScreen):
    NAME = "results"
    LIST = "#hits"
    AUTO_FOCUS = "#query"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "focus_search", "Search"),
        Binding("plus,equals_sign", "feedback(True)", "Relevant"),
        Binding("minus", "feedback(False)", "Irrelevant"),
        Binding("o", "open", "Open"),
        Binding("f", "revisit", "Fetch again"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.results = SearchResults("", (), 0)
        self.feedback_given: dict[int, bool] = {}
        self.document_shown: int | None = None  # the hit whose stored page the preview pane shows
        self.wanted_topic: str | None = None  # the topic filter to set once the node's topics are listed
        self.asked: QuerySubmitted | None = None  # the search the table answers, for its next page

    def body(self) -> ComposeResult:
        with Horizontal(id="search-row"):
            yield SearchInput(
                placeholder='search local and pooled results: words, "a phrase", -word, site:host (Enter)',
                id="query",
            )
            yield Select([("all topics", ALL_TOPICS)], value=ALL_TOPICS, allow_blank=False, id="topic-filter")
            yield Select(ORIGINS, value="any", allow_blank=False, id="origin-filter")
            yield Select(VERDICTS, value="accepted", allow_blank=False, id="verdict-filter")
        with Horizontal(id="results-pane"):
            table: DataTable[str | Text] = DataTable(id="hits", cursor_type="row", zebra_stripes=True)
            yield table
            with VerticalScroll(id="preview-pane"):
                yield Static("the most confident results appear here; type words to search", id="preview")

    def on_mount(self) -> None:
        table = self.query_one("#hits", DataTable)
        # 21 + 13 + 10 + 4 plus a padding of 2 per column fit the table's 56 columns at 100x30
        table.add_column("title", width=21, key="title")
        table.add_column("origin", width=13, key="origin")
        table.add_column("topic", width=10, key="topic")
        table.add_column("conf", width=4, key="conf")
        self.query_one("#query", Input).focus()

    def reload(self) -> None:
        """The answer again, for the words last searched: words typed and left without Enter were searched
        silently when the screen came back, under a title naming the previous ones."""
        query = self.query_one("#query", Input)
        if self.swarm.results_topic is not None:  # the Topics screen asked for one topic's results
            self.wanted_topic, self.swarm.results_topic = self.swarm.results_topic, None
            self.results = SearchResults("", (), 0)
            self.query_one("#hits", DataTable).focus()  # the user came to look through them
        query.value = self.results.query
        self.fetch_topics()
        self.submit()

    @work(exclusive=True, group="topics")
    async def fetch_topics(self) -> None:
        topics = await self.ask(self.link.topics)
        if topics is None:
            return
        select = self.query_one("#topic-filter", Select)
        current = select.value
        choices = ((topic_choice(t.key, TOPIC_FILTER_WIDTH), t.key) for t in topics)
        select.set_options([("all topics", ALL_TOPICS), *choices])
        keys = {ALL_TOPICS, *(t.key for t in topics)}
        wanted, self.wanted_topic = self.wanted_topic, None
        select.value = wanted if wanted in keys else current if current in keys else ALL_TOPICS

    def action_focus_search(self) -> None:
        self.query_one("#query", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "query":
            self.submit()
            self.query_one("#hits", DataTable).focus()

    def on_select_changed(self, event: Select.Changed) -> None:
        self.submit()

    def submit(self) -> None:
        """The query typed, or without words the most confident results under the filters."""
        q = self.query_one("#query", Input).value.strip()
        topic = self.wanted_topic or self.query_one("#topic-filter", Select).value
        self.post_message(
            QuerySubmitted(
                q,
                None if topic == ALL_TOPICS else str(topic),
                str(self.query_one("#origin-filter", Select).value),
                str(self.query_one("#verdict-filter", Select).value),
            )
        )

    def on_query_submitted(self, message: QuerySubmitted) -> None:
        self.asked = message
        self.search(message)

    @work(exclusive=True, group="search")
    async def search(self, query: QuerySubmitted) -> None:
        results, refusal = await self.ask_refusable(
            self.link.search, query.query, topic=query.topic, origin=query.origin, verdict=query.verdict
        )
        if results is not None:
            self.post_message(ResultsFetched(results))
            return
        if refusal is not None:
            self.swarm.report_problem(refusal)
        why = refusal.detail if refusal is not None else "the node could not be reached: nothing was searched"
        # the previous query's hits stayed under the new query's words, as if they were its answer
        self.post_message(ResultsFetched(SearchResults(query.query, (), 0), why_none=why))

    def on_results_fetched(self, message: ResultsFetched) -> None:
        kept = self.selected() if message.results.query == self.results.query else None  # a refresh
        self.results = message.results
        table = self.query_one("#hits", DataTable)
        table.clear()
        for hit in self.results.hits:
            table.add_row(*self._cells(hit), key=str(hit.doc_id))
        shown = len(self.results.hits)
        table.border_title = self._title()
        if message.why_none:
            query = self.results.query
            table.border_title = f"no search for “{query}”" if query else "no results"
            self.query_one("#preview", Static).update(escape(message.why_none))
        elif shown:
            ids = [hit.doc_id for hit in self.results.hits]
            row = ids.index(kept.doc_id) if kept is not None and kept.doc_id in ids else 0
            table.move_cursor(row=row)  # a refresh keeps the user's place
            self._preview(self.results.hits[row])
        else:
            self.query_one("#preview", Static).update(self._nothing_found())

    def _title(self) -> str:
        """How many of the answer's results the table holds, and what it answers."""
        shown = len(self.results.hits)
        widened = " and words it starts" if self.results.prefix and shown else ""
        more = " (more below)" if shown < self.results.total else ""
        return f"{shown} of {self.results.total} {self._searched()}{widened}{more}"

    def _searched(self) -> str:
        """What the table answers: the words, or with none the most confident results."""
        if not self.results.browsed:
            return f"for “{self.results.query}”"
        return "most confident" + (f" for “{self.results.query}”" if self.results.query else "")

    def _nothing_found(self) -> str:
        """No hits, and the filters that narrowed the search (as `topicswarm search` names them); on a node
        with no documents at all, how to get some."""
        found = f"nothing found for “{self.results.query}”" if self.results.query else "no results"
        status = self.swarm.telemetry.status
        if status is not None and status.local_documents + status.pooled_documents == 0:
            return f"{found}: the node holds no pages yet (the Topics screen, 2, imports bookmarks with i)"
        if self.results.widened_total == 0:
            return f"{found}: {NOTHING_MATCHES}"
        narrowing = []
        if self.query_one("#topic-filter", Select).value != ALL_TOPICS:
            narrowing.append("the topic filter (try all topics)")
        if self.query_one("#origin-filter", Select).value != "any":
            narrowing.append("the origin filter (try any origin)")
        if self.query_one("#verdict-filter", Select).value != "any":
            narrowing.append("the verdict filter (try any verdict)")
        without = without_filters(self.results.widened_total)
        return found + (f" with {' and '.join(narrowing)}{without}" if narrowing else "")

    def _cells(self, hit: Hit) -> tuple[str | Text, ...]:
        mark = {True: "✔ ", False: "✘ "}.get(self.feedback_given.get(hit.doc_id), "")  # type: ignore[call-overload]
        return (
            Text(mark + hit.title, no_wrap=True, overflow="ellipsis"),
            "this node" if hit.is_local else short_peer_id(hit.origin),  # as the Peers screen names it
            Text(hit.topic.rsplit("/", 1)[-1] or "–", no_wrap=True, overflow="ellipsis"),
            f"{hit.confidence:.2f}",
        )

    def selected(self) -> Hit | None:
        table = self.query_one("#hits", DataTable)
        if not self.results.hits or table.cursor_row < 0 or table.cursor_row >= len(self.results.hits):
            return None
        return self.results.hits[table.cursor_row]

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        hit = self.selected()
        if hit is not None:
            self._preview(hit)
        if hit is not None and hit == self.results.hits[-1] and len(self.results.hits) < self.results.total:
            self.load_more()

    @work(exclusive=True, group="more")
    async def load_more(self) -> None:
        """The next page of the answer once the cursor reaches the last row: "50 of 106" left 56 out of
        reach."""
        asked, shown = self.asked, self.results
        if asked is None:
            return
        page = await self.ask(
            self.link.search,
            asked.query,
            topic=asked.topic,
            origin=asked.origin,
            verdict=asked.verdict,
            offset=len(shown.hits),
        )
        if page is None or self.results is not shown:  # another search answered meanwhile
            return
        known = {hit.doc_id for hit in shown.hits}
        more = tuple(hit for hit in page.hits if hit.doc_id not in known)
        self.results = replace(shown, hits=shown.hits + more, total=max(page.total, len(known) + len(more)))
        table = self.query_one("#hits", DataTable)
        for hit in more:
            table.add_row(*self._cells(hit), key=str(hit.doc_id))
        table.border_title = self._title()

    def _preview(self, hit: Hit) -> None:
        self.document_shown = None
        self.query_one("#preview", Static).update(preview(hit))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a hit: its stored page in the preview pane; Enter again: back to the hit."""
        hit = self.selected()
        if hit is None:
            return
        if self.document_shown == hit.doc_id:
            self._preview(hit)
        else:
            self.show_document(hit)

    @work(exclusive=True, group="document")
    async def show_document(self, hit: Hit) -> None:
        document = await self.ask(self.link.document, hit.doc_id)
        if document is None or self.selected() != hit:
            return
        self.document_shown = document.doc_id
        self.query_one("#preview", Static).update(document_view(document))
        self.query_one("#preview-pane", VerticalScroll).scroll_home(animate=False)

    def action_feedback(self, relevant: bool) -> None:
        hit = self.selected()
        if hit is None:
            self.notify("select a result first", severity="warning")
            return
        self.send_feedback(hit, relevant)

    @work(group="feedback")
    async def send_feedback(self, hit: Hit, relevant: bool) -> None:
        fetching = await self.ask(self.link.feedback, hit.doc_id, relevant=relevant, query=self.results.query)
        if fetching is None:
            return
        self.feedback_given[hit.doc_id] = relevant
        self.post_message(FeedbackSent(hit.doc_id, relevant, bool(fetching)))

    def on_feedback_sent(self, message: FeedbackSent) -> None:
        how = "fetches the peer's page and retrains with it" if message.fetching else "retrains with it"
        self.notify(f"marked {'relevant' if message.relevant else 'irrelevant'}: the node {how}")
        table = self.query_one("#hits", DataTable)
        for hit in self.results.hits:
            if hit.doc_id == message.doc_id:
                table.update_cell(str(hit.doc_id), "title", self._cells(hit)[0])

    def action_revisit(self) -> None:
        hit = self.selected()
        if hit is None:
            self.notify("select a result first", severity="warning")
        elif not hit.is_local:
            self.notify(
                f"a peer's result: this node fetches only its own pages again (o opens {hit.url})",
                severity="warning",
            )
        else:
            self.revisit(hit)

    @work(group="revisit")
    async def revisit(self, hit: Hit) -> None:
        answer = await self.ask(self.link.revisit, hit.url)
        if answer is None:
            return
        if not answer.get("due"):
            why = "the node revisits only the pages its focus accepted, not duplicates"
            self.notify(f"not fetched again: {why} ({hit.url})", severity="warning")
        elif answer.get("detail"):
            self.notify(f"due for a fresh copy, but {answer['detail']}", severity="warning")
        else:
            self.notify(f"due for a fresh copy: the crawl fetches {hit.url} before new links")

    def action_open(self) -> None:
        hit = self.selected()
        if hit is None:
            return
        if not graphical_session():
            self.app.copy_to_clipboard(hit.url)
            self.notify(f"no graphical browser here (copied to the clipboard): {hit.url}")
            return
        self.open_in_browser(hit)

    @work(thread=True, group="browser")
    def open_in_browser(self, hit: Hit) -> None:
        """In a thread: webbrowser.open can wait for the browser it starts."""
        opened = webbrowser.open(hit.url)
        self.app.call_from_thread(
            self.notify, f"opened {hit.url}" if opened else f"no browser found: {hit.url}"
        )
        if opened:
            self.app.call_from_thread(self.record_opened, hit)

    @work(group="feedback")
    async def record_opened(self, hit: Hit) -> None:
        await self.ask(self.link.feedback, hit.doc_id, opened=True, query=self.results.query)
