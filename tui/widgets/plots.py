"""Plots with axes (textual-plotext): time series, bars, and the meta-classifier's loss/accuracy curve.

Times are drawn as seconds before the newest point, so a plot of the same data always looks the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from textual_plotext import PlotextPlot

from tui.records import CurvePoint

Series = Sequence[tuple[float, float]]
COLOURS = ("cyan", "orange", "green", "magenta", "blue", "red", "yellow")


def _newest(series: Iterable[Series]) -> float:
    return max((s[-1][0] for s in series if s), default=0.0)


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
        drawn = False
        for colour, (name, points) in zip(COLOURS * 4, series.items(), strict=False):
            if not points:
                continue
            xs = [t - now for t, _ in points]
            ys = [v for _, v in points]
            plt.plot(xs, ys, label=name if len(series) > 1 else None, color=colour, marker="braille")
            drawn = True
        if not drawn:
            plt.text("no data yet", 0, 0)
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


class CurvePlot(PlotextPlot):
    """The loss/accuracy trade-off of a meta-classifier with the chosen loss marked: measured on held-out
    documents (k-fold cross-validation), beside the flattering curve on the documents it trained on."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "accuracy vs loss"

    def show(
        self,
        held_out: Sequence[CurvePoint],
        chosen: float | None,
        training: Sequence[CurvePoint] = (),
        title: str = "accuracy vs loss",
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
        marked = held_out or training
        if marked and chosen is not None:
            plt.vline(chosen, "orange")
            nearest = min(marked, key=lambda p: abs(p.loss - chosen))
            plt.scatter([nearest.loss], [nearest.accuracy], color="orange", marker="●")
        if not (held_out or training):
            plt.text("no meta-classifier yet: press b to build one", 0, 0)
        self.refresh()
