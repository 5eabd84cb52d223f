"""The taxonomy as a tree with counts, harvest rate and classifier quality per topic; crawl control."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.markup import escape
from textual.widgets import Static, Tree
from textual.widgets.tree import TreeNode

from tui.messages import TopicsFetched
from tui.records import CrawlFigures, Topic
from tui.screens.base import NodeScreen
from tui.widgets.prompt import Prompt

MEASURING_POLL = 2.0  # seconds before asking again while the node measures a topic's held-out accuracy
CRAWL_MARKS = {"running": ("▶", "green"), "paused": ("⏸", "yellow"), "stopped": ("■", "red")}


def idle_note(topic: Topic, node_crawl: CrawlFigures | None) -> str:
    """Why a topic set to run fetches nothing: the node's whole crawl is finished, paused or waiting (the
    topic showed a green ▶ and "running" after max_pages was reached)."""
    if topic.crawl != "running" or node_crawl is None or node_crawl.active:
        return ""
    return node_crawl.detail or node_crawl.headline()


def topic_label(topic: Topic, node_crawl: CrawlFigures | None = None) -> Text:
    mark, colour = CRAWL_MARKS.get(topic.crawl, ("?", "white"))
    if idle_note(topic, node_crawl):
        mark, colour = "▷", "dim"
    accuracy = "…" if topic.measuring else "–" if topic.accuracy is None else f"{topic.accuracy:.2f}"
    label = Text(no_wrap=True)
    label.append(f"{mark} ", style=colour)
    label.append(topic.name, style="bold")
    figures = f"  {topic.local}+{topic.pooled}  harvest {topic.harvest}  held-out acc {accuracy}"
    label.append(figures, style="dim")
    return label


def topic_details(topic: Topic, node_crawl: CrawlFigures | None = None) -> str:
    if topic.measuring:
        accuracy = escape(topic.accuracy_why)
    elif topic.accuracy is None:
        why = escape(topic.accuracy_why) or "no meta-classifier yet"
        accuracy = f"not measured ({why})"
    else:
        accuracy = f"{topic.accuracy:.3f} ({escape(topic.accuracy_on or 'held-out documents')})"
    keywords = escape(", ".join(topic.keywords)) or "(none: press k to add some)"
    note = idle_note(topic, node_crawl)
    crawl = f"[b]{topic.crawl}[/b]" + (f", but the node fetches nothing: {escape(note)}" if note else "")
    return (
        f"[b]{escape(topic.name)}[/b]  ({escape(topic.key)})\n\n"
        f"crawl: {crawl}\n"
        f"documents: {topic.local} local, {topic.pooled} pooled\n"
        f"harvest rate: {harvest_text(topic)}\n"
        f"meta-classifier accuracy: {accuracy}\n"
        f"model version: {topic.model_version or '–'}\n\n"
        f"indicator keywords:\n{keywords}\n\n"
        "[dim]s start · p pause · x stop · k keywords · i import bookmarks · v its results[/dim]"
    )


def harvest_text(topic: Topic) -> str:
    """The harvest rate with what it counts: the pages the topic's classifier accepted of those fetched for
    it (the demo's summary also shows a share by the web's ground truth, which it calls relevant)."""
    if topic.fetched == 0:
        return "not crawled yet"
    rate = f"{topic.harvest_rate:.3f}"
    if topic.fetched is None:  # an older node does not say how many
        return f"{rate} (the share of the pages fetched for it that its classifier accepted)"
    accepted = round(topic.harvest_rate * topic.fetched)
    return f"{rate} (its classifier accepted {accepted} of {topic.fetched} pages fetched for it)"


class TopicsScreen(NodeScreen):
    NAME = "topics"
    LIVE = True
    AUTO_FOCUS = "#topic-tree"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "crawl('start')", "Start"),
        Binding("p", "crawl('pause')", "Pause"),
        Binding("x", "crawl('stop')", "Stop"),
        Binding("k", "keywords", "Keywords"),
        Binding("i", "import_bookmarks", "Import"),
        Binding("v", "view_results", "Results"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.topics: dict[str, Topic] = {}
        self._topic_nodes: dict[str, TreeNode[str]] = {}  # topic key -> its node in the tree
        self._tree_shape: list[tuple[str, str | None]] | None = None  # (key, parent) of the tree's topics

    def body(self) -> ComposeResult:
        with Horizontal(id="topics-pane"):
            tree: Tree[str] = Tree("topics", id="topic-tree")
            tree.show_root = False
            # what the figures after each name are ("34+2" said nothing by itself; the demo's summary
            # prints a ground-truth share beside a harvest as well)
            tree.border_title = "topics · documents: here+pooled"
            tree.border_subtitle = "harvest = pages its classifier accepted / fetched"
            yield tree
            with VerticalScroll(id="topic-side"):
                yield Static("no topic selected", id="topic-details")

    def on_mount(self) -> None:
        self.query_one(Tree).focus()

    def reload(self) -> None:
        self.fetch_topics()

    @work(exclusive=True, group="topics")
    async def fetch_topics(self) -> None:
        topics = await self.ask(self.link.topics)
        if topics is not None:
            self.post_message(TopicsFetched(topics))

    def on_topics_fetched(self, message: TopicsFetched) -> None:
        tree: Tree[str] = self.query_one(Tree)
        selected = self.selected_key()
        shape = [(t.key, t.parent) for t in sorted(message.topics, key=lambda t: t.key)]
        self.topics = {t.key: t for t in message.topics}
        if shape == self._tree_shape:  # the same tree: new labels, and the cursor stays where the user put it
            for node in self._topic_nodes.values():
                node.set_label(topic_label(self.topics[node.data], self.node_crawl()))
        else:
            self._rebuild(tree, selected)
            self._tree_shape = shape
        if not self._topic_nodes:
            self.query_one("#topic-details", Static).update("no topics yet: press i to import bookmarks")
            return
        self._show(self.selected_key() or selected)
        if any(t.measuring for t in message.topics):
            self.set_timer(MEASURING_POLL, self.fetch_topics)

    def _rebuild(self, tree: Tree[str], selected: str | None) -> None:
        """The tree anew, the cursor on the topic it was on (or the first), once the new lines are laid
        out: before that a node has no line, and moving the cursor there left it on the first topic."""
        tree.clear()
        self._topic_nodes = {}
        for topic in sorted(self.topics.values(), key=lambda t: t.key):
            parent = self._topic_nodes.get(topic.parent) if topic.parent else None
            self._topic_nodes[topic.key] = (parent or tree.root).add(
                topic_label(topic, self.node_crawl()), data=topic.key, expand=True
            )
        for node in self._topic_nodes.values():
            if not node.children:
                node.allow_expand = False
        if self._topic_nodes:
            target = self._topic_nodes.get(selected or "") or next(iter(self._topic_nodes.values()))
            self.call_after_refresh(tree.move_cursor, target)
            self._show(target.data)

    def selected_key(self) -> str | None:
        node = self.query_one(Tree).cursor_node
        return None if node is None else node.data

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[str]) -> None:
        self._show(event.node.data)

    def _show(self, key: str | None) -> None:
        topic = self.topics.get(key or "")
        if topic is not None:
            self.query_one("#topic-details", Static).update(topic_details(topic, self.node_crawl()))

    def node_crawl(self) -> CrawlFigures | None:
        """The node's crawl as last polled (None until the first status answer)."""
        status = self.swarm.telemetry.status
        return None if status is None else self.swarm.telemetry.latest

    def action_crawl(self, action: str) -> None:
        key = self.selected_key()
        if key is None:
            self.notify("select a topic first" if self.topics else self.why_no_topic(), severity="warning")
            return
        self.set_crawl(action, key)

    def action_view_results(self) -> None:
        key = self.selected_key()
        if key is None:
            self.notify("select a topic first" if self.topics else self.why_no_topic(), severity="warning")
            return
        self.swarm.show_results(key)

    @work(exclusive=True, group="topic-action")
    async def set_crawl(self, action: str, key: str) -> None:
        answer = await self.ask(self.link.crawl, action, key)
        if answer is not None:
            self.notify(answer)
            self.fetch_topics()

    def action_keywords(self) -> None:
        key = self.selected_key()
        if key is None:
            return
        current = ", ".join(self.topics[key].keywords)
        self.app.push_screen(
            Prompt(f"Indicator keywords of {key} (comma separated)", current),
            lambda text: self.save_keywords(key, text) if text is not None else None,
        )

    @work(exclusive=True, group="topic-action")
    async def save_keywords(self, key: str, text: str) -> None:
        words = [w.strip() for w in text.split(",") if w.strip()]
        topic = await self.ask(self.link.set_keywords, key, words)
        if topic is not None:
            self.notify(f"{key}: {len(topic.keywords)} keywords")
            self.fetch_topics()

    def action_import_bookmarks(self) -> None:
        self.app.push_screen(
            Prompt(
                "Import topics: a bookmarks file (an HTML export, Chrome's Bookmarks, a Firefox backup, "
                "Safari's plist) or a folder of topic folders (.html, .txt, .md, .pdf)",
                placeholder="~/bookmarks.html",
            ),
            lambda path: self.import_bookmarks(path) if path else None,
        )

    @work(exclusive=True, group="topic-action")
    async def import_bookmarks(self, path: str) -> None:
        self.notify(f"importing {path} (the node fetches every bookmarked page)…")
        answer = await self.ask(self.link.import_bookmarks, str(Path(path).expanduser()))
        if answer is not None:
            imported, seeds = answer
            self.notify(f"imported {len(imported)} topics, {seeds} seeds")
            self.fetch_topics()
