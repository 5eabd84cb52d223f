"""One line at the bottom: is the node reachable, what does the crawl do, and the latest problem."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from tui.records import CrawlFigures, Status


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


class StatusBar(Static):
    """Connection state, crawl figures and the last problem, never a traceback."""

    def __init__(self) -> None:
        super().__init__(id="status-bar")
        self.status: Status | None = None
        self.figures: CrawlFigures | None = None
        self.problem = ""
        self.connected = False

    def show_status(self, status: Status) -> None:
        self.status, self.figures, self.connected = status, status.crawl, True
        self._draw()

    def show_figures(self, figures: CrawlFigures) -> None:
        self.figures, self.connected = figures, True
        self._draw()

    def show_problem(self, text: str, *, connection: bool = False) -> None:
        self.problem = text
        if connection:
            self.connected = False
        self._draw()

    def clear_problem(self) -> None:
        self.problem, self.connected = "", True
        self._draw()

    def _draw(self) -> None:
        line = Text(no_wrap=True, overflow="ellipsis")
        if not self.connected:
            line.append(" ✖ node unreachable ", style="bold white on red")
        else:
            line.append(" ● node ", style="bold black on green")
        if self.problem:  # first: the figures fill the line and the end is cut off on a narrow terminal
            line.append(f" {self.problem} ", style="bold red")
            line.append("·")
        if self.figures is not None:
            f = self.figures
            line.append(f" {f.headline()} · {f.pages} pages · {f.rate_text()} · frontier {f.frontier_size}")
        if self.status is not None:
            s = self.status
            line.append(f" · docs {s.local_documents}+{s.pooled_documents} pooled · peers {s.peers_online}")
        self.update(line)
