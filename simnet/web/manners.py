"""A crawler's manners measured from the server's side, from the simulated web's request log."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from itertools import pairwise

from simnet.web.faults import FaultPlan
from simnet.web.layout import RequestRecord


def by_host(log: Iterable[RequestRecord]) -> dict[str, list[RequestRecord]]:
    hosts: dict[str, list[RequestRecord]] = defaultdict(list)
    for record in log:
        hosts[record.host].append(record)
    for records in hosts.values():
        records.sort(key=lambda r: r.start)
    return dict(hosts)


def peak_in_flight(log: Iterable[RequestRecord]) -> dict[str, int]:
    """Per host, the most requests the server was answering at once."""
    peaks = {}
    for host, records in by_host(log).items():
        events = sorted([(r.start, 1) for r in records] + [(r.end, -1) for r in records])
        current = peak = 0
        for _, step in events:  # an end at the same instant as a start counts first
            current += step
            peak = max(peak, current)
        peaks[host] = peak
    return peaks


def start_gaps(log: Iterable[RequestRecord]) -> dict[str, list[float]]:
    """Per host, the gaps between consecutive request starts (seconds)."""
    return {host: [b.start - a.start for a, b in pairwise(records)] for host, records in by_host(log).items()}


def too_close(log: Iterable[RequestRecord], min_gap: float, slack: float = 0.01) -> list[tuple[str, float]]:
    """(host, gap) for every pair of consecutive requests to one host closer than `min_gap` - `slack`."""
    return [(host, gap) for host, gaps in start_gaps(log).items() for gap in gaps if gap < min_gap - slack]


def disallowed_requests(log: Iterable[RequestRecord], plan: FaultPlan) -> list[RequestRecord]:
    """Requests for paths the site's robots.txt disallowed."""
    return [
        record
        for record in log
        if record.site is not None
        and any(record.path.startswith(prefix) for prefix in plan.disallowed_prefixes(record.site))
    ]
