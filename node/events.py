"""The node's live event stream: what the control API sends to `/api/events` subscribers.

Publishing never blocks and never fails: each subscriber has a bounded buffer, and a subscriber that cannot
keep up loses its oldest events (the next `stats` event carries the full picture again). Crawl statistics
are coalesced by the service into one `stats` event every `stats_event_interval` seconds, so a busy node
never floods a UI.
"""

from __future__ import annotations

import itertools
import json
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import trio

EVENT_KINDS = ("stats", "peer", "model", "meta", "refine", "log")


@dataclass(frozen=True)
class Event:
    id: int
    kind: str
    data: dict[str, Any]
    at: float

    def to_sse(self) -> str:
        """The event in server-sent-events framing."""
        payload = json.dumps(self.data, ensure_ascii=False, separators=(",", ":"), default=str)
        return f"id: {self.id}\nevent: {self.kind}\ndata: {payload}\n\n"


class _Subscriber:
    def __init__(self, size: int) -> None:
        self.buffer: deque[Event] = deque(maxlen=size)
        self.dropped = 0
        self.wake = trio.Event()


class EventBus:
    """Fan-out of node events to any number of stream subscribers, each with its own bounded buffer."""

    def __init__(self, queue_size: int = 256) -> None:
        self.queue_size = queue_size
        self._ids = itertools.count(1)
        self._subscribers: set[_Subscriber] = set()
        self.published = 0

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)

    def publish(self, kind: str, data: dict[str, Any]) -> Event:
        """Queue an event for every subscriber (call from the node's trio thread)."""
        if kind not in EVENT_KINDS:
            raise ValueError(f"unknown event kind {kind!r}; one of {', '.join(EVENT_KINDS)}")
        event = Event(next(self._ids), kind, data, time.time())
        self.published += 1
        for sub in self._subscribers:
            if len(sub.buffer) == sub.buffer.maxlen:
                sub.dropped += 1
            sub.buffer.append(event)
            sub.wake.set()
        return event

    async def subscribe(self, heartbeat: float = 15.0) -> AsyncIterator[Event | None]:
        """Events as they come; None after `heartbeat` quiet seconds (a keep-alive for the HTTP stream)."""
        sub = _Subscriber(self.queue_size)
        self._subscribers.add(sub)
        try:
            while True:
                if not sub.buffer:
                    with trio.move_on_after(heartbeat):
                        await sub.wake.wait()
                    sub.wake = trio.Event()
                    if not sub.buffer:
                        yield None
                        continue
                yield sub.buffer.popleft()
        finally:
            self._subscribers.discard(sub)
