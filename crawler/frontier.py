"""The crawl frontier: per-topic queues of per-host priority queues, bounded, persisted in the repository.

Served like BINGO!'s queue manager (thesis 2.11): topics take turns, so a topic with larger confidences
cannot starve the others (of the topics a ready host can serve, the one served least recently: topics share
hosts, and each must get its share of a host's polite rate); within a topic the best entry of any host that
politeness lets us contact now is served (Mercator's back queues, seed 004), so a slow host never blocks the
others. Until topics exist every entry has `topic=None` and there is one queue. Paused topics
(`set_paused_topics`) keep their queues but are not served until they are resumed.

Bounded: past `max_size` queued entries the lowest priorities are evicted in bulk (BINGO!'s bucket merge),
and forgotten, so they may be discovered again later. A seen set (8-byte URL hashes) keeps every URL that
is queued or completed, so a completed page is never fetched again; per-host counts enforce the page budget
against traps, and `depth_limit` bounds the link distance from the seeds.

Persistence: every change is recorded and written by `persist()` inside the writer's transaction, so the
stored frontier always matches the stored documents (a URL turns done in the transaction that stores it).
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from crawler.repository import Repository
from crawler.repository_schema import DONE, FAILED, QUEUED

ReadyAt = Callable[[str], float]


@dataclass(frozen=True)
class FrontierEntry:
    """A pending fetch. `priority`: higher is served first; `tunnel`: hops since the last accepted page;
    `origin`: the seed or bookmark the path started from; `retries`: deferrals and retries so far."""

    url: str
    host: str
    priority: float = 1.0
    depth: int = 0
    topic: str | None = None
    tunnel: int = 0
    source: str | None = None
    origin: str | None = None
    retries: int = 0


def url_key(url: str) -> int:
    return int.from_bytes(hashlib.blake2b(url.encode("utf-8"), digest_size=8).digest(), "little")


class _TopicQueue:
    """Per-host max-heaps plus a lazy heap of hosts keyed by their best entry."""

    def __init__(self) -> None:
        self.by_host: dict[str, list[tuple[float, int, FrontierEntry]]] = {}
        self.hosts: list[tuple[float, int, str]] = []

    def push(self, item: tuple[float, int, FrontierEntry]) -> None:
        heap = self.by_host.setdefault(item[2].host, [])
        heapq.heappush(heap, item)
        if heap[0] is item:
            heapq.heappush(self.hosts, (item[0], item[1], item[2].host))

    def pop(self, now: float, ready: Callable[[str], bool]) -> FrontierEntry | None:
        skipped: list[tuple[float, int, str]] = []
        found: FrontierEntry | None = None
        while self.hosts:
            negprio, seq, host = heapq.heappop(self.hosts)
            heap = self.by_host.get(host)
            if not heap or heap[0][1] != seq:
                continue  # stale: the host's best entry changed since
            if not ready(host):
                skipped.append((negprio, seq, host))
                continue
            found = heapq.heappop(heap)[2]
            if heap:
                heapq.heappush(self.hosts, (heap[0][0], heap[0][1], host))
            else:
                del self.by_host[host]
            break
        for item in skipped:
            heapq.heappush(self.hosts, item)
        return found

    def entries(self) -> Iterable[tuple[float, int, FrontierEntry]]:
        for heap in self.by_host.values():
            yield from heap

    def rebuild(self, items: Iterable[tuple[float, int, FrontierEntry]]) -> None:
        self.by_host = {}
        for item in items:
            self.by_host.setdefault(item[2].host, []).append(item)
        for heap in self.by_host.values():
            heapq.heapify(heap)
        self.hosts = [(heap[0][0], heap[0][1], host) for host, heap in self.by_host.items()]
        heapq.heapify(self.hosts)


class Frontier:
    """See the module docstring. Not thread-safe: use it from the crawl's event loop only."""

    def __init__(
        self,
        max_size: int = 200_000,
        depth_limit: int = 0,
        host_page_budget: int = 0,
        max_per_host_in_flight: int = 0,
    ) -> None:
        self.max_size = max_size
        self.depth_limit = depth_limit
        self.host_page_budget = host_page_budget
        self.max_per_host_in_flight = max_per_host_in_flight
        self._paused: frozenset[str | None] = frozenset()
        self._forget()

    def _forget(self) -> None:
        """Empty the queues, the seen set and the unwritten changes (paused topics and limits stay)."""
        self._queues: dict[str | None, _TopicQueue] = {}
        self._rotation: dict[str | None, None] = {}  # topics, least recently served first
        self._seq = itertools.count()
        self._size = 0
        self._seen: set[int] = set()
        self._host_pages: dict[str, int] = {}  # queued + in flight + completed, for the budget
        self._in_flight: dict[str, int] = {}
        self._changes: dict[str, tuple[str, Any]] = {}
        self.evicted = 0
        self.rejected = {"seen": 0, "depth": 0, "budget": 0}

    # -- size and membership ------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._size

    def seen(self, url: str) -> bool:
        return url_key(url) in self._seen

    def unseen_keys(self, keys: set[int]) -> set[int]:
        """The `url_key`s of `keys` the frontier never queued (one set difference, no hashing of URLs)."""
        return keys - self._seen

    @property
    def in_flight(self) -> int:
        return sum(self._in_flight.values())

    def topics(self) -> list[str | None]:
        return list(self._queues)

    # -- pausing ------------------------------------------------------------------------------------------
    def set_paused_topics(self, topics: Iterable[str | None]) -> None:
        """Serve no entry of these topics' queues until they leave the set (their entries stay queued)."""
        self._paused = frozenset(topics)

    @property
    def paused_topics(self) -> frozenset[str | None]:
        return self._paused

    def servable_size(self) -> int:
        """Queued entries outside paused topics: 0 with entries left means every one of them waits."""
        return self._size - sum(self.held_per_topic().values())

    def held_per_topic(self) -> dict[str | None, int]:
        """The entries each paused topic holds queued (none: not listed), so a crawl that waits can name
        the topics that hold it besides its hosts."""
        held = {
            topic: sum(len(heap) for heap in queue.by_host.values())
            for topic in self._paused
            if (queue := self._queues.get(topic)) is not None
        }
        return {topic: count for topic, count in held.items() if count}

    # -- adding -------------------------------------------------------------------------------------------
    def add(self, entry: FrontierEntry) -> bool:
        """Queue a URL unless it was seen, is too deep, or its host spent its budget; True if queued."""
        key = url_key(entry.url)
        if key in self._seen:
            self.rejected["seen"] += 1
            return False
        if self.depth_limit and entry.depth > self.depth_limit:
            self.rejected["depth"] += 1
            return False
        if self.host_page_budget and self._host_pages.get(entry.host, 0) >= self.host_page_budget:
            self.rejected["budget"] += 1
            return False
        self._seen.add(key)
        self._host_pages[entry.host] = self._host_pages.get(entry.host, 0) + 1
        self._push(entry)
        self._changes[entry.url] = ("add", entry)
        if self._size > self.max_size + max(1, self.max_size // 10):
            self._evict()
        return True

    def mark_seen(self, url: str, host: str) -> bool:
        """Record a URL as completed without queueing it (a redirect target fetched under another URL)."""
        key = url_key(url)
        if key in self._seen:
            return False
        self._seen.add(key)
        self._host_pages[host] = self._host_pages.get(host, 0) + 1
        self._changes[url] = ("done", FrontierEntry(url=url, host=host, priority=0.0))
        return True

    def _push(self, entry: FrontierEntry) -> None:
        queue = self._queues.get(entry.topic)
        if queue is None:
            queue = self._queues[entry.topic] = _TopicQueue()
            self._rotation[entry.topic] = None
        queue.push((-entry.priority, next(self._seq), entry))
        self._size += 1

    def _evict(self) -> None:
        """Drop the lowest priorities down to `max_size`, all topics together (ties: the newest go)."""
        items = [(item, topic) for topic, queue in self._queues.items() for item in queue.entries()]
        items.sort(key=lambda pair: (pair[0][0], pair[0][1]))
        keep, drop = items[: self.max_size], items[self.max_size :]
        for (_, _, entry), _ in drop:
            self._seen.discard(url_key(entry.url))
            self._host_pages[entry.host] -= 1
            if self._changes.get(entry.url, ("",))[0] == "add":
                del self._changes[entry.url]
            else:
                self._changes[entry.url] = ("evict", entry)
        by_topic: dict[str | None, list[tuple[float, int, FrontierEntry]]] = {t: [] for t in self._queues}
        for item, topic in keep:
            by_topic[topic].append(item)
        for topic, queue in self._queues.items():
            queue.rebuild(by_topic[topic])
        self._size = len(keep)
        self.evicted += len(drop)

    # -- serving ------------------------------------------------------------------------------------------
    def pop(self, ready_at: ReadyAt, now: float) -> FrontierEntry | None:
        """The best entry, among the topics whose queues hold a host that may be contacted at `now`, of the
        one served least recently, or None. Not the next topic after the last one served: topics share
        hosts, and a host that turns ready would go to the first of its topics after the turn each time."""

        def ready(host: str) -> bool:
            if self.max_per_host_in_flight and self._in_flight.get(host, 0) >= self.max_per_host_in_flight:
                return False
            return ready_at(host) <= now

        for topic in self._rotation:
            if topic in self._paused:
                continue
            entry = self._queues[topic].pop(now, ready)
            if entry is not None:
                del self._rotation[topic]
                self._rotation[topic] = None  # its turn is over: to the back
                self._size -= 1
                self._in_flight[entry.host] = self._in_flight.get(entry.host, 0) + 1
                return entry
        return None

    def next_ready_at(self, ready_at: ReadyAt) -> float:
        """The earliest time any queued host of an unpaused topic becomes ready (inf when none will)."""
        best = math.inf
        for topic, queue in self._queues.items():
            if topic in self._paused:
                continue
            for host in queue.by_host:
                if (
                    self.max_per_host_in_flight
                    and self._in_flight.get(host, 0) >= self.max_per_host_in_flight
                ):
                    continue
                best = min(best, ready_at(host))
        return best

    def release(self, entry: FrontierEntry) -> None:
        """A popped entry's fetch ended: its host's in-flight place is free, whatever becomes of the entry."""
        self._release(entry.host)

    def push_back(self, entry: FrontierEntry) -> None:
        """Queue again an entry that `release` let go of (its URL is still in the seen set)."""
        self._push(entry)
        self._changes[entry.url] = ("add", entry)

    def _release(self, host: str) -> None:
        left = self._in_flight.get(host, 0) - 1
        if left > 0:
            self._in_flight[host] = left
        else:
            self._in_flight.pop(host, None)

    def complete(self, entry: FrontierEntry, release: bool = True) -> None:
        """The popped entry was stored: it turns done (persisted with the document). `release=False` when
        `release(entry)` was already called as its fetch ended."""
        if release:
            self._release(entry.host)
        self._changes[entry.url] = ("done", entry)

    def fail(self, entry: FrontierEntry, error: str, release: bool = True) -> None:
        """The popped entry failed: it is not fetched again unless a sitemap or feed dates it later
        (`retry_failed`)."""
        if release:
            self._release(entry.host)
        self._changes[entry.url] = ("failed", (entry, error))

    def retry_failed(self, entries: Iterable[FrontierEntry]) -> int:
        """Queue failed URLs again (`revisits.relisted_failures`), each with one more try spent; returns
        how many were queued. They count against their host's budget already."""
        queued = 0
        for entry in entries:
            self._seen.add(url_key(entry.url))
            entry = retried(entry)
            self._push(entry)
            self._changes[entry.url] = ("add", entry)
            queued += 1
        return queued

    def requeue(self, entry: FrontierEntry) -> None:
        """Put a popped entry back (deferred by robots.txt, or cancelled by a stop)."""
        self._release(entry.host)
        self._push(entry)
        self._changes[entry.url] = ("add", entry)

    def rescore(self, new_priorities: Callable[[list[FrontierEntry]], Mapping[str, float]]) -> int:
        """Re-prioritise queued entries queue by queue: `new_priorities(entries)` answers {url: priority} for
        the entries of one queue it wants moved. Persisted as changes; returns how many entries changed."""
        moved = 0
        for queue in self._queues.values():
            items = list(queue.entries())
            new = new_priorities([entry for _, _, entry in items]) if items else None
            if not new:
                continue
            rebuilt = []
            changed = False
            for negprio, seq, entry in items:
                priority = new.get(entry.url)
                if priority is not None and priority != entry.priority:
                    entry = replace(entry, priority=priority)
                    negprio = -priority
                    self._changes[entry.url] = ("add", entry)
                    changed = True
                    moved += 1
                rebuilt.append((negprio, seq, entry))
            if changed:
                queue.rebuild(rebuilt)
        return moved

    def reprioritize(self, urls: Iterable[str], priority: float, *, raise_only: bool = False) -> int:
        """Give the queued entries of `urls` this priority (with `raise_only`, only those below it), as a
        persisted change; returns how many entries changed. Scans the queues: meant for batches of URLs
        (a re-organisation's hub links), not for single entries in a hot loop."""
        wanted = set(urls)

        def new_priorities(entries: list[FrontierEntry]) -> dict[str, float]:
            moving = (e for e in entries if e.url in wanted and (not raise_only or e.priority < priority))
            return {e.url: priority for e in moving}

        return self.rescore(new_priorities)

    def queued_per_host(self) -> dict[str, int]:
        """How many entries each host has queued, paused topics included."""
        counts: dict[str, int] = {}
        for queue in self._queues.values():
            for host, heap in queue.by_host.items():
                counts[host] = counts.get(host, 0) + len(heap)
        return counts

    def drop_host(self, host: str, error: str) -> list[FrontierEntry]:
        """Fail every queued entry of a host that politeness gave up on ("bad")."""
        dropped: list[FrontierEntry] = []
        for queue in self._queues.values():
            heap = queue.by_host.pop(host, None)
            if heap:
                dropped.extend(item[2] for item in heap)
        for entry in dropped:
            self._changes[entry.url] = ("failed", (entry, error))
        self._size -= len(dropped)
        return dropped

    # -- persistence --------------------------------------------------------------------------------------
    def has_changes(self) -> bool:
        return bool(self._changes)

    def persist(self, repo: Repository) -> int:
        """Write the changes since the last call (inside the writer's transaction); returns their count."""
        return self.write_changes(repo, self.take_changes())

    def take_changes(self) -> dict[str, tuple[str, Any]]:
        """The changes since the last call, to be written by `write_changes` (possibly in another thread)."""
        changes, self._changes = self._changes, {}
        return changes

    @staticmethod
    def write_changes(repo: Repository, changes: dict[str, tuple[str, Any]], now: float | None = None) -> int:
        """Write `changes` (`take_changes`), dated `now` (default: the wall clock)."""
        now = time.time() if now is None else now
        upserts, done, failed, evicted = [], [], [], []
        for url, (kind, payload) in changes.items():
            if kind == "add":
                upserts.append(_row(payload, QUEUED, None, now))
            elif kind == "done":
                done.append(_row(payload, DONE, None, now))
            elif kind == "failed":
                entry, error = payload
                failed.append(_row(entry, FAILED, error, now))
            else:
                evicted.append((url,))
        sql = (
            "INSERT INTO frontier (url, host, topic, priority, depth, tunnel, source, origin, retries, "
            "state, error, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(url) DO UPDATE SET "
            "priority = excluded.priority, topic = excluded.topic, retries = excluded.retries, "
            "state = excluded.state, error = excluded.error, updated_at = excluded.updated_at"
        )
        conn = repo.db.conn
        for rows in (upserts, done, failed):
            if rows:
                conn.executemany(sql, rows)
        if evicted:
            conn.executemany(f"DELETE FROM frontier WHERE url = ? AND state = {QUEUED}", evicted)
        return len(changes)

    def reload(self, repo: Repository) -> int:
        """Forget what only memory held (unwritten changes, popped entries) and load the repository's
        frontier again, after a write the disk had no room for: what was popped is queued there still."""
        self._forget()
        return self.load(repo)

    def load(self, repo: Repository) -> int:
        """Restore the queued entries and the seen set of a previous run; returns the queued count."""
        queued = 0
        for row in repo.db.execute(
            "SELECT url, host, topic, priority, depth, tunnel, source, origin, retries, state FROM frontier "
            "ORDER BY rowid"
        ):
            url, host, topic, priority, depth, tunnel, source, origin, retries, state = row
            self._seen.add(url_key(url))
            self._host_pages[host] = self._host_pages.get(host, 0) + 1
            if state == QUEUED:
                self._push(FrontierEntry(url, host, priority, depth, topic, tunnel, source, origin, retries))
                queued += 1
        return queued


def _row(entry: FrontierEntry, state: int, error: str | None, now: float) -> tuple:
    return (
        entry.url,
        entry.host,
        entry.topic,
        entry.priority,
        entry.depth,
        entry.tunnel,
        entry.source,
        entry.origin,
        entry.retries,
        state,
        error,
        now,
    )


def retried(entry: FrontierEntry) -> FrontierEntry:
    return replace(entry, retries=entry.retries + 1)
