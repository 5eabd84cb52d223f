"""Plots with axes (textual-plotext): time series, bars, and the meta-classifier's loss/accuracy curve.

Times are drawn as time before the newest point, so a plot of the same data always looks the same.
Axes get their ticks when the plot knows its size: ticks plotext picked alone were cut ("-36.2" with no
"0.0" after it at 100x30) or uneven ("0 290 870"), and a legend drawn on the canvas hid the lines under it.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable, Mapping, Sequence

from rich.text import Text
from textual.app import RenderResult
from textual.widget import Widget
from textual_plotext import PlotextPlot

from tui.records import CurvePoint, topic_choice

Series = Sequence[tuple[float, float]]
# ANSI colour numbers, as plotext draws them and the legend writes them: cyan, plotext's "orange" (ANSI
# yellow), green, magenta, blue, red, bright cyan
COLOURS = (6, 3, 2, 5, 4, 1, 14)
# a time axis spanning less than so many seconds counts in this unit (its seconds, its name)
TIME_UNITS = ((300.0, 1.0, "s"), (18_000.0, 60.0, "min"), (math.inf, 3600.0, "h"))
LEGEND_KEY = "━━ "


def _newest(series: Iterable[Series]) -> float:
    return max((s[-1][0] for s in series if s), default=0.0)


def time_range(series: Iterable[Series], now: float) -> tuple[float, float]:
    """Seconds before the newest point, ending at 0 (one point alone gets a minute of room: without it
    the axis ran from -1 to +1, seconds in the future included)."""
    span = now - min((s[0][0] for s in series if s), default=now)
    return (-span if span > 0 else -60.0, 0.0)


def value_range(values: Sequence[float]) -> tuple[float, float]:
    """From 0 for counts and rates, which are never negative (a flat 0 line drew an axis from -1 to 1)."""
    low = min(values, default=0.0)
    high = max(values, default=0.0)
    low = min(low, 0.0)
    return low, high if high > low else low + 1.0


def _nice_steps(smallest: float) -> Iterable[float]:
    """1, 2 and 5 times powers of ten, from the first at or above `smallest` up."""
    power = 10.0 ** math.floor(math.log10(smallest)) if smallest > 0 else 1.0
    while True:
        for mantissa in (1, 2, 5):
            if mantissa * power >= smallest * (1 - 1e-9):
                yield mantissa * power
        power *= 10


def tick_label(value: float, step: float) -> str:
    """A tick's value with as many decimals as its step has ("0.25" is not needed: steps are 1, 2, 5)."""
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    return f"{value + 0.0:.{decimals}f}"  # + 0.0: no "-0"


def value_ticks(low: float, high: float, rows: int, *, counts: bool = False) -> list[float]:
    """Round ticks from `low` to at or above `high`, at least two rows apart (a label on every row of a
    five-row canvas read as one column of numbers); whole numbers only for `counts` (no 2.5 peers)."""
    step = next(_nice_steps(max((high - low) / max(rows // 2, 1), 1.0 if counts else 0.0)))
    first, last = math.floor(low / step + 1e-9), math.ceil(high / step - 1e-9)
    return [i * step for i in range(first, max(last, first + 1) + 1)]


def time_ticks(span: float, columns: int) -> tuple[list[float], list[str], str]:
    """Ticks (in seconds, from -span to 0), their labels, and the unit they are in: round numbers of
    seconds, minutes or hours, each label with a column of room on either side."""
    unit, name = next((unit, name) for below, unit, name in TIME_UNITS if span < below)
    span_in_units = span / unit
    for step in _nice_steps(span_in_units / max(columns // 4, 1)):
        ticks = [-i * step for i in range(math.floor(span_in_units / step + 1e-9), -1, -1)]
        labels = [tick_label(t, step) for t in ticks]
        room = columns * step / span_in_units  # columns between two ticks
        if room >= max(len(label) for label in labels) + 2:
            return [t * unit for t in ticks], labels, name
    raise AssertionError("unreachable: a step as long as the span fits")


def legend_lines(names: Sequence[str], width: int, most: int) -> list[Text]:
    """Each series' name after a key in its colour, as many on a line as fit; a name wider than the line
    shows its end (where a subtopic's name is); names beyond `most` lines are counted, not cut."""
    room = max(width - len(LEGEND_KEY), 1)
    entries = [
        Text(LEGEND_KEY, style=f"color({colour})") + topic_choice(name, room)
        for colour, name in zip(COLOURS, names, strict=False)
    ]
    for shown in range(len(entries), -1, -1):
        rest = len(names) - shown
        lines = _flow([*entries[:shown], *([Text(f"+{rest} more", style="dim")] if rest else [])], width)
        if len(lines) <= most:
            return lines
    return []


def _flow(entries: Sequence[Text], width: int) -> list[Text]:
    lines: list[Text] = []
    for entry in entries:
        if lines and lines[-1].cell_len + 2 + entry.cell_len <= width:
            lines[-1] += Text("  ") + entry
        else:
            lines.append(entry.copy())
    return lines


class FittedPlot(PlotextPlot):
    """A plot that sets its axes for the size it is drawn at, with lines of text (a legend) beneath."""

    def fit(self, width: int, height: int) -> list[Text]:
        """Set ticks for a `width` x `height` widget; return the lines to draw beneath the canvas."""
        return []

    def render(self) -> RenderResult:
        width, height = self.size
        below = self.fit(width, height)
        height = max(height - len(below), 1)
        self.plt.plotsize(width, height)
        self.plt._set_size(width, height)  # as PlotextPlot.render does: resizing needs both
        self.plt.theme(self._get_plotext_theme_name(self.app.theme))
        canvas = Text.from_ansi(self.plt.build().rstrip("\n"))
        return Text("\n").join([canvas, *below]) if below else canvas


class SeriesPlot(FittedPlot):
    """One or more named time series over the last minutes; several get a legend beneath the canvas."""

    def __init__(self, title: str, *, counts: bool = False, id: str | None = None) -> None:
        super().__init__(id=id)
        self.title = title
        self.border_title = title
        self.counts = counts  # whole numbers: the value axis has no ticks between them
        self.names: list[str] = []  # the series drawn, in the legend's order
        self.span = 60.0  # seconds the time axis covers
        self.values = (0.0, 1.0)  # the lowest and highest value drawn

    def show(self, series: Mapping[str, Series]) -> None:
        plt = self.plt
        plt.clear_data()
        now = _newest(series.values())
        drawn = [points for points in series.values() if points]
        self.names = []
        for colour, (name, points) in zip(COLOURS, ((n, p) for n, p in series.items() if p), strict=False):
            xs = [t - now for t, _ in points]
            ys = [v for _, v in points]
            plt.plot(xs, ys, color=colour, marker="braille")
            self.names.append(name)
        if drawn:
            self.span = -time_range(drawn, now)[0]
            self.values = value_range([v for points in drawn for _, v in points])
        else:  # the axes of a minute with nothing in it, not -1..1
            self.span, self.values = 60.0, (0.0, 1.0)
            plt.text("no data yet", -30.0, 0.5, alignment="center")
        self.refresh()

    def fit(self, width: int, height: int) -> list[Text]:
        below = legend_lines(self.names, width, max(height // 3, 1)) if len(self.names) > 1 else []
        rows = height - len(below) - 4  # less the frame, the tick labels and the axis label
        yticks = value_ticks(*self.values, rows, counts=self.counts)
        step = yticks[1] - yticks[0]
        ylabels = [tick_label(v, step) for v in yticks]
        self.plt.ylim(yticks[0], yticks[-1])
        self.plt.yticks(yticks, ylabels)
        xticks, xlabels, unit = time_ticks(self.span, width - max(map(len, ylabels)) - 2)
        self.plt.xlim(-self.span, 0.0)
        self.plt.xticks(xticks, xlabels)
        self.plt.xlabel(f"{unit} ago")
        return below


BAR_EIGHTHS = " ▏▎▍▌▋▊▉"
SHORTEST_BAR = 6  # columns a bar has however long the names are: a name longer than the rest leaves is cut


class BarPlot(Widget):
    """Counts by name (errors by kind), one line each: the name, a bar to scale and the count written out.
    plotext's horizontal bars straddled rows between names and dropped or skewed their axis' ticks in a
    third of a 100-column terminal ("0 290 870", "0.0 1.2 2.5" for counts)."""

    def __init__(self, title: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = title
        self.counts: dict[str, int] = {}

    def show(self, counts: Mapping[str, int]) -> None:
        self.counts = {name: count for name, count in counts.items() if count > 0}
        self.refresh()

    def render(self) -> RenderResult:
        return (
            Text("\n").join(bar_lines(self.counts, *self.size)) if self.counts else Text("none", style="dim")
        )


def bar_lines(counts: Mapping[str, int], width: int, rows: int) -> list[Text]:
    """The largest counts first, as many as `rows` hold (the last line counts the kinds left out)."""
    names = sorted(counts, key=lambda k: (-counts[k], k))
    if len(names) > rows:
        names = names[: max(rows - 1, 0)]
    count_width = max((len(str(counts[n])) for n in names), default=0)
    name_width = min(max((len(n) for n in names), default=0), width - count_width - 2 - SHORTEST_BAR)
    bar_width = max(width - name_width - count_width - 2, 1)
    highest = max(counts.values())
    lines = []
    for name in names:
        label = name if len(name) <= name_width else name[: name_width - 1] + "…"
        eighths = max(round(counts[name] / highest * bar_width * 8), 1)
        bar = "█" * (eighths // 8) + BAR_EIGHTHS[eighths % 8].strip()
        lines.append(
            Text(f"{label:>{name_width}} ")
            + Text(f"{bar:<{bar_width}}", style="color(12)")
            + Text(f" {counts[name]:>{count_width}}")
        )
    if len(names) < len(counts):
        left = counts.keys() - set(names)
        lines.append(Text(f"+{len(left)} more kinds, {sum(counts[k] for k in left)} errors", style="dim"))
    return lines


NO_META = "no meta-classifier yet: press b to build one"


class CurvePlot(PlotextPlot):
    """The loss/accuracy trade-off of a meta-classifier with the chosen loss marked: measured on held-out
    documents (k-fold cross-validation), beside the flattering curve on the documents it trained on."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "accuracy vs loss"
        self.empty_text = ""  # what the plot says instead of a curve ("" while it shows one)

    def show(
        self,
        held_out: Sequence[CurvePoint],
        chosen: float | None,
        training: Sequence[CurvePoint] = (),
        title: str = "accuracy vs loss",
        empty: str = NO_META,
    ) -> None:
        self.border_title = title
        plt = self.plt
        plt.clear_data()
        plt.xlabel("loss")
        plt.ylabel("accuracy")
        if training:
            points = sorted(training, key=lambda p: p.loss)
            xs, ys = [p.loss for p in points], [p.accuracy for p in points]
            plt.plot(xs, ys, color="gray", marker="dot", label="on training docs")
        if held_out:
            points = sorted(held_out, key=lambda p: p.loss)
            xs, ys = [p.loss for p in points], [p.accuracy for p in points]
            plt.plot(xs, ys, color="cyan", marker="braille", label="held-out")
        plt.xlim(0.0, 1.0)  # losses and accuracies are fractions: fixed axes, comparable between topics
        lowest = min((p.accuracy for p in (*held_out, *training)), default=0.5)
        low = min(0.5, math.floor(lowest * 10) / 10)
        plt.ylim(low, 1.04)  # a little room above 1: a perfect curve ran along the frame under the legend
        plt.yticks([round(low + 0.1 * i, 1) for i in range(round((1.0 - low) * 10) + 1)])
        marked = held_out or training
        if marked and chosen is not None:
            plt.vline(chosen, "orange")
            nearest = min(marked, key=lambda p: abs(p.loss - chosen))
            plt.scatter([nearest.loss], [nearest.accuracy], color="orange", marker="●")
        self.empty_text = "" if (held_out or training) else empty
        if not (held_out or training):
            for row, line in enumerate(textwrap.wrap(empty, 70)):  # a long reason would be cut off
                plt.text(line, 0.5, 0.8 - 0.05 * row, alignment="center")
        self.refresh()
