"""Failures of the simulated web, each with a message saying what to do."""

from __future__ import annotations


class WebError(Exception):
    """Base of every simulated-web failure."""


class CorpusError(WebError):
    """A web corpus folder is malformed (sites.tsv missing or inconsistent)."""


class PortError(WebError):
    """No port could be bound on every loopback address the web needs."""


class FaultSpecError(WebError, ValueError):
    """A fault description (`KIND:HOST[:PATH][,key=value...]`) cannot be read."""
