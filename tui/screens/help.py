"""Help on `?`: the keys of every screen."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.markup import escape
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS: list[tuple[str, list[tuple[str, str]]]] = [
    (
        "on every screen, once this help is closed",  # "anywhere" listed 1-6, which do nothing in here
        [
            ("1-6", "dashboard, topics, results, peers, meta, refine"),
            ("ctrl+p", "commands: screens, start/pause/stop crawling, theme, Stop the node"),
            ("tab, shift+tab", "move between fields and lists"),
            ("escape", "leave a text field for the screen's list (letter keys act again)"),
            ("r", "refresh from the node"),
            ("q", "quit; the node keeps running (to stop it: ctrl+p, Stop the node)"),
        ],
    ),
    (
        "topics",
        [
            ("s / p / x", "start / pause / stop crawling the selected topic"),
            ("i", "import bookmarks from a file path"),
            ("k", "edit the selected topic's indicator keywords"),
            ("v", "the selected topic's most confident results, here and pooled"),
        ],
    ),
    (
        "results",
        [
            ("/", "search box (Enter searches; no words: the most confident results)"),
            ("enter", "the selected result's stored page (again: back to the result)"),
            ("+ / -", "mark the selected result relevant / irrelevant"),
            ("o", "open it in the browser (without a display: copy its URL)"),
            ("f", "fetch it again before new links (this node's own, accepted pages)"),
        ],
    ),
    (
        "peers",
        [
            ("b", "block the selected neighbour (asks first), or unblock it"),
            ("c", "copy the selected neighbour's address (to give `--bootstrap`)"),
        ],
    ),
    (
        "meta",
        [
            ("[ / ]", "lower / raise the loss by 0.05, from 0 to 0.95"),
            ("l", "type a loss (Enter applies it, escape discards it)"),
            ("b", "build the meta-classifier at the loss shown"),
        ],
    ),
    (
        "refine",
        [
            ("g", "propose subtopics (clustering)"),
            ("a / n / x", "accept / accept under a new name / reject the proposal"),
        ],
    ),
]


def help_text() -> str:
    """One line per key, grouped by screen: a table with rules between rows showed a third of them. A line
    fits the help box at 100x30 (what a key does in at most 66 columns): wrapped ones broke mid-phrase."""
    lines = []
    for where, keys in KEYS:
        lines.append(f"[b]{escape(where)}[/b]")
        lines += [f"  [b $accent]{escape(key):<15}[/] {escape(does)}" for key, does in keys]
    return "\n".join([*lines, "", "[dim]escape or ? closes this help[/dim]"])


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("question_mark", "close", "Close"),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help") as scroll:
            scroll.border_title = "topicswarm keys"
            yield Static(help_text(), id="help-text")

    def action_close(self) -> None:
        self.dismiss(None)
