"""The row of screen names with their keys, the current one highlighted."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

SCREENS = (
    ("dashboard", "Dashboard"),
    ("topics", "Topics"),
    ("results", "Results"),
    ("peers", "Peers"),
    ("meta", "Meta"),
    ("refine", "Refine"),
)


class NavBar(Static):
    def __init__(self, current: str) -> None:
        super().__init__(classes="nav")
        self.current = current

    def on_mount(self) -> None:
        line = Text(no_wrap=True)
        for number, (name, title) in enumerate(SCREENS, start=1):
            style = "bold reverse" if name == self.current else ""
            line.append(f" {number} {title} ", style=style)
            line.append(" ")
        line.append("  ? help · ctrl+p commands · q quit", style="dim")
        self.update(line)
