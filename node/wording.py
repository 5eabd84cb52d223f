"""Durations and counts as a person reads them, in the CLI's status text and the node's idle reasons."""

from __future__ import annotations


def readable(seconds: float) -> str:
    """A wait of seconds to weeks, in the largest unit that keeps it readable."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


def counted(number: int, noun: str) -> str:
    """ "1 link", "2 links": a count with its noun (plural by an s)."""
    return f"{number} {noun}{'' if number == 1 else 's'}"
