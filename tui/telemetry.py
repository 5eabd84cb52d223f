"""The dashboard's series: history from /api/metrics, extended by live `stats` events, bounded in length."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from tui.records import CrawlFigures, MetricSample, Status

SERIES_LENGTH = 600


def _series() -> deque[tuple[float, float]]:
    return deque(maxlen=SERIES_LENGTH)


@dataclass
class Telemetry:
    """Time series (t, value) of one node, appended in time order; older points fall off."""

    pages_per_s: deque[tuple[float, float]] = field(default_factory=_series)
    frontier: deque[tuple[float, float]] = field(default_factory=_series)
    peers_online: deque[tuple[float, float]] = field(default_factory=_series)
    bytes_in: deque[tuple[float, float]] = field(default_factory=_series)
    bytes_out: deque[tuple[float, float]] = field(default_factory=_series)
    harvest: dict[str, deque[tuple[float, float]]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    last_sample_t: float = 0.0
    latest: CrawlFigures = field(default_factory=CrawlFigures)
    status: Status | None = None
    version: int = 0

    def add_samples(self, samples: list[MetricSample]) -> None:
        """History from the node. It can be older than live points already held (the event stream often
        answers before the first metrics poll), so it is merged in by time, not appended after them."""
        fresh = [s for s in samples if s.t > self.last_sample_t]
        if not fresh:
            return
        self.last_sample_t = max(s.t for s in fresh)
        _merge(self.pages_per_s, [(s.t, s.pages_per_s) for s in fresh])
        _merge(self.frontier, [(s.t, float(s.frontier_size)) for s in fresh])
        for sample in fresh:
            self.peers_online.append((sample.t, sample.peers_online))
            self.bytes_in.append((sample.t, sample.bytes_in))
            self.bytes_out.append((sample.t, sample.bytes_out))
            for topic, rate in sample.harvest.items():
                self.harvest.setdefault(topic, _series()).append((sample.t, rate))
            if sample.errors:
                self.errors = dict(sample.errors)
        self.version += 1

    def add_live(self, figures: CrawlFigures, at: float) -> None:
        """A live stats event: pages/s and frontier get a point between the slower metric samples."""
        self.latest = figures
        self._add(self.pages_per_s, at, figures.pages_per_s)
        self._add(self.frontier, at, figures.frontier_size)
        if figures.errors_by_kind:
            self.errors = dict(figures.errors_by_kind)
        self.version += 1

    def set_status(self, status: Status) -> None:
        self.status = status
        self.latest = status.crawl
        if status.crawl.errors_by_kind:
            self.errors = dict(status.crawl.errors_by_kind)
        self.version += 1

    @staticmethod
    def _add(series: deque[tuple[float, float]], t: float, value: float) -> None:
        if series and t < series[-1][0]:
            return
        series.append((t, float(value)))


def _merge(series: deque[tuple[float, float]], points: list[tuple[float, float]]) -> None:
    """Points into a time-ordered series, keeping the newest SERIES_LENGTH."""
    if series and points and min(t for t, _ in points) < series[-1][0]:
        merged = sorted([*series, *points], key=lambda p: p[0])
        series.clear()
        series.extend(merged)
    else:
        series.extend(sorted(points, key=lambda p: p[0]))
