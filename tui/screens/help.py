"""Help on `?`: the keys of every screen."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

HELP = """\
# topicswarm keys

| key | where | does |
| --- | --- | --- |
| 1-6 | anywhere (not while typing) | dashboard, topics, results, peers, meta, refine |
| ctrl+p | anywhere | command palette (screens, start/pause/stop crawling, theme) |
| tab / shift+tab | anywhere | move between fields and lists |
| escape | in a text field | leave it for the screen's list (then 1-6 and the keys below work) |
| r | any screen | refresh from the node |
| q | anywhere | quit (the node keeps running) |
| s / p / x | topics | start / pause / stop crawling the selected topic |
| i | topics | import bookmarks from a file path |
| k | topics | edit the selected topic's indicator keywords |
| / | results | focus the search box (Enter searches) |
| + / - | results | mark the selected result relevant / irrelevant |
| o | results | open the selected result in the browser |
| [ / ] | meta | lower / raise the loss by 0.05 |
| l | meta | type a loss (Enter applies) |
| b | meta | build the meta-classifier at the chosen loss |
| g | refine | propose subtopics (clustering) |
| a / n / x | refine | accept / accept under a new name / reject the proposal |

Escape or ? closes this help.
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("question_mark", "close", "Close"),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Markdown(HELP)

    def action_close(self) -> None:
        self.dismiss(None)
