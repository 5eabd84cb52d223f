"""Helpers the end-to-end tests share: polling until a condition holds, and the real CLI as a subprocess."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float, what: str, interval: float = 0.2) -> T:
    """The predicate's first truthy value, polled every `interval` s; TimeoutError naming `what` after
    `timeout` s (a hang guard: the tests time nothing)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"{what} within {timeout:.0f} s")


def cli(*args: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
    """`topicswarm ARGS` in a child process (the installed entry point's module), its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "node.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
