"""Plots with axes (textual-plotext): time series, bars, and the meta-classifier's loss/accuracy curve.

Times are drawn as seconds before the newest point, so a plot of the same data always looks the same.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable, Mapping, Sequence

from textual_plotext import PlotextPlot

from tui.records import CurvePoint

Series = Sequence[tuple[float, float]]
COLOURS = ("cyan", "orange", "green", "magenta", "blue", "red", "yellow")


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


class SeriesPlot(PlotextPlot):
    """One or more named time series over the last minutes."""

    def __init__(self, title: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.title = title
        self.border_title = title

    def show(self, series: Mapping[str, Series]) -> None:
        plt = self.plt
        plt.clear_data()
        plt.xlabel("s ago")
        now = _newest(series.values())
        drawn = [points for points in series.values() if points]
        for colour, (name, points) in zip(COLOURS * 4, series.items(), strict=False):
            if not points:
                continue
            xs = [t - now for t, _ in points]
            ys = [v for _, v in points]
            plt.plot(xs, ys, label=name if len(series) > 1 else None, color=colour, marker="braille")
        if drawn:
            plt.xlim(*time_range(drawn, now))
            plt.ylim(*value_range([v for points in drawn for _, v in points]))
        else:  # the axes of a minute with nothing in it, not -1..1
            plt.xlim(-60.0, 0.0)
            plt.ylim(0.0, 1.0)
            plt.text("no data yet", -30.0, 0.5, alignment="center")
        self.refresh()


class BarPlot(PlotextPlot):
    """Counts by name (errors by kind)."""

    def __init__(self, title: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = title

    def show(self, counts: Mapping[str, int]) -> None:
        plt = self.plt
        plt.clear_data()
        if counts:
            names = sorted(counts, key=lambda k: (-counts[k], k))[:6]
            plt.bar(names, [counts[n] for n in names], orientation="horizontal", width=0.3)
        else:
            plt.text("none", 0, 0)
        self.refresh()


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
