"""Process measurements shared by experiments, benchmarks and tests."""

from __future__ import annotations

import resource
from pathlib import Path


def peak_rss_mb() -> float:
    """This process's peak resident set size in MiB.

    Linux keeps `ru_maxrss` across `exec`, so a process started by a large parent (a test runner that forks)
    reports the parent's peak; `VmHWM` belongs to the process's own memory map and does not.
    """
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
