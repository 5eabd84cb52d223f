"""Held-out curves measured off the request path, once per meta-classifier version.

A held-out curve (`node.heldout.held_out_curve`) refits a topic's meta-classifier and its rivals' on five
folds: a second or more a topic on a node of a thousand pages, and it ran on the service's one side
connection, so while the Topics screen asked for every topic's quality, status, search and the crawl's
bookkeeping waited behind it (one scenario's client gave up on `GET /api/topics` after 30 s). Here each
curve is measured on a connection and worker thread of its own, one at a time, and kept until the
meta-classifier it measured changes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import trio

from crawler.repository import Repository

log = logging.getLogger(__name__)


class HeldOutCurves:
    """Curves by topic, each kept with the key of the meta-classifier version it measured (the topics'
    `_curve_key`: its members, build and training curve, and which rival topics have one)."""

    def __init__(self, repository: Path, featurizer: Callable[[], Any]) -> None:
        self._path = repository
        self._featurizer = featurizer
        self._repo: Repository | None = None
        self._limiter = trio.CapacityLimiter(1)
        self._curves: dict[str, tuple[str, dict[str, Any]]] = {}
        self._measuring: dict[tuple[str, str], trio.Event] = {}

    def ready(self, topic: str, key: str) -> dict[str, Any] | None:
        """The topic's curve if it measured this version of the meta-classifier, else None."""
        kept = self._curves.get(topic)
        return kept[1] if kept is not None and kept[0] == key else None

    def measuring(self, topic: str, key: str) -> bool:
        return (topic, key) in self._measuring

    async def measure(self, topic: str, key: str) -> dict[str, Any]:
        """The curve, measured now unless it is kept or being measured (then this waits for it)."""
        while (curve := self.ready(topic, key)) is None:
            running = self._measuring.get((topic, key))
            if running is not None:
                await running.wait()
            else:
                self._measuring[(topic, key)] = trio.Event()
                await self._measure(topic, key)
        return curve

    def start(self, nursery: trio.Nursery, topic: str, key: str) -> None:
        """Measure in the background unless it is kept or already being measured."""
        if self.ready(topic, key) is None and not self.measuring(topic, key):
            self._measuring[(topic, key)] = trio.Event()
            nursery.start_soon(self._measure, topic, key)

    async def _measure(self, topic: str, key: str) -> None:
        """Keep the curve, or why it could not be measured: a failure is kept too, so a screen that polls
        the topics does not start it again and again, and a measurement that fails in the background never
        takes the node down with it (the log has the traceback)."""
        from node.heldout import held_out_curve, unmeasured

        try:
            try:
                featurizer = self._featurizer()
                if featurizer is None:
                    curve = unmeasured(0, 0, "the cooperation layer has no featurizer")
                else:
                    measured = partial(held_out_curve, self._repository(), topic, featurizer)
                    curve = await trio.to_thread.run_sync(measured, limiter=self._limiter)
            except Exception as exc:  # a quality figure for the UI, not the node's work
                log.exception("held-out curve of %s", topic)
                curve = unmeasured(0, 0, f"could not be measured: {exc}")
            self._curves[topic] = (key, curve)
        finally:  # cancelled too: a waiter then measures it itself
            self._measuring.pop((topic, key)).set()

    def _repository(self) -> Repository:
        if self._repo is None:
            self._repo = Repository(self._path)
        return self._repo

    def close(self) -> None:
        if self._repo is not None:
            self._repo.close()
            self._repo = None
