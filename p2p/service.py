"""`P2PService`: host, membership, topic communities and the request/response protocols as one object.

The node publishes its signed models and crawl results here and hears about its communities' models
through a callback. A model travels in two steps: a small gossip announcement on the topic's gossipsub
topic (so it reaches every peer of the community and no peer outside it), then each member fetches the
model from the announcer over the model protocol and checks the origin's signature. Results are pulled by
cursor (`sync_results`). Providers default to the in-memory stores kept here; the node can plug its
repository in with `set_model_provider` / `set_result_provider`.
"""

from __future__ import annotations

import inspect
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import trio
from libp2p.crypto.keys import KeyPair

from p2p.communities import Announcement, Communities
from p2p.errors import P2PError, WireError
from p2p.host import P2PHost, start_host
from p2p.membership import Membership
from p2p.protocols import ModelProvider, ProtocolError, Protocols, ResultPage, ResultProvider
from p2p.schemas import MAX_RESULTS, CrawlResult, ModelPayload, SignedModel, SignedResult
from p2p.settings import P2PSettings
from p2p.signing import sign_model, sign_results

log = logging.getLogger(__name__)

MAX_REFUSED = 10_000
"""Most refused (topic, peer, version) announcements remembered (forgotten all at once beyond it)."""

ModelCallback = Callable[[SignedModel, str], "Awaitable[None] | None"]
"""(the verified model, the peer it came from)."""
ModelFilter = Callable[[str, str, int], bool]
"""(topic, announcing peer, announced version) -> whether to fetch that model."""


class P2PService:
    """One node's presence in the network; `run()` keeps membership and announcements going."""

    def __init__(self, p2p: P2PHost) -> None:
        self.p2p = p2p
        self.key = p2p.host.get_private_key()
        self.protocols = Protocols(p2p)
        self.membership = Membership(p2p, self.protocols)
        self.communities = Communities(p2p, self.protocols.guard, self._on_announcement)
        self.own_models: dict[str, dict[int, SignedModel]] = {}
        self.own_results: dict[str, list[SignedResult]] = {}
        self.received: dict[tuple[str, str], SignedModel] = {}
        self._model_callbacks: list[ModelCallback] = []
        self._model_provider: ModelProvider = self._stored_model
        self._result_provider: ResultProvider = self._stored_results
        self._wanted: ModelFilter = self._newer_than_received
        self._fetching: set[tuple[str, str, int]] = set()
        self._refused: set[tuple[str, str, int]] = set()
        """Announced models whose answer broke the rules (bad signature, wrong version): not asked again
        when the same version is announced again (a thin gossip mesh repeats a new version once)."""
        self._nursery: trio.Nursery | None = None
        self.protocols.serve_models(lambda topic, version: self._model_provider(topic, version))
        self.protocols.serve_results(lambda topic, cursor, limit: self._result_provider(topic, cursor, limit))

    @property
    def peer_id(self) -> str:
        return str(self.p2p.peer_id)

    @property
    def host(self) -> P2PHost:
        return self.p2p

    def addrs(self) -> list[str]:
        return self.p2p.addrs()

    # -- the node's side --------------------------------------------------------------------------------
    def on_model(self, callback: ModelCallback) -> None:
        """Call `callback(model, from_peer)` for every verified model received from a community."""
        self._model_callbacks.append(callback)

    def set_model_provider(self, provider: ModelProvider) -> None:
        self._model_provider = provider

    def set_result_provider(self, provider: ResultProvider) -> None:
        self._result_provider = provider

    def set_model_filter(self, wanted: ModelFilter) -> None:
        """Decide which announced models are fetched (a node with its own model store knows the versions
        it holds across restarts; the default remembers the ones received since start)."""
        self._wanted = wanted

    async def announce_version(self, topic: str, version: int) -> None:
        """Hold `topic` and announce model `version` of it, served by the node's model provider."""
        await self.communities.hold(topic, version)
        self.communities.announce(topic, version)

    def bytes_by_message(self) -> dict[str, int]:
        """Bytes per direction and message type: request/response frames and gossip announcements."""
        counts = dict(self.protocols.bytes_by_message)
        for direction, size in self.communities.bytes.items():
            if size:
                counts[f"{direction} announcement"] = size
        return dict(sorted(counts.items()))

    async def hold_topic(self, topic: str) -> None:
        """Join the community of `topic` (gossip subscription and DHT provider record)."""
        await self.communities.hold(topic, max(self.own_models.get(topic, {}), default=0))

    async def publish_model(self, topic: str, model: ModelPayload) -> SignedModel:
        """Sign this node's model of `topic`, serve it, and announce it to the topic's community."""
        if model.topic != topic or model.origin != self.peer_id:
            raise P2PError(f"a published model must be this node's ({self.peer_id}) model of {topic!r}")
        signed = sign_model(self.key, model)
        self.own_models.setdefault(topic, {})[model.version] = signed
        await self.communities.hold(topic)
        self.communities.announce(topic, model.version)
        return signed

    def add_results(self, topic: str, results: Sequence[CrawlResult]) -> int:
        """Sign and keep this node's results of `topic` for syncing peers; the new cursor."""
        store = self.own_results.setdefault(topic, [])
        store.extend(sign_results(self.key, list(results)))
        return len(store)

    async def sync_results(self, peer: str, topic: str, cursor: int = 0) -> tuple[list[CrawlResult], int]:
        """Every result of `topic` the peer has after `cursor`, verified; and the cursor to resume from."""
        items: list[CrawlResult] = []
        while True:
            page = await self.protocols.fetch_results(peer, topic, cursor, MAX_RESULTS)
            if page.next_cursor < cursor:
                self.protocols.guard.reject(peer, WireError("bad_value", "result cursor went backwards"))
                raise ProtocolError(f"peer {peer} moved the result cursor backwards")
            items.extend(item.result for item in page.items)
            cursor = page.next_cursor
            if not page.more or not page.items:
                return items, cursor

    # -- network figures (what `node.network` shows) -----------------------------------------------------
    def connected(self) -> list[Any]:
        return list(self.p2p.host.get_network().connections)

    def peers_online(self) -> int:
        return len(self.connected())

    def traffic(self) -> dict[str, int]:
        """Bytes in and out: request/response frames and gossip announcements."""
        totals = self.protocols.traffic()
        return {d: totals[d] + self.communities.bytes[d] for d in ("in", "out")}

    def peer_rows(self) -> list[dict[str, Any]]:
        rows = []
        for entry in self.membership.neighbours.peers():
            record = self.protocols.guard.ledger.record_of(entry.peer_id)
            rows.append(
                {
                    "peer_id": entry.peer_id,
                    "addrs": list(entry.addrs),
                    "last_seen": entry.last_contact,
                    "shared_topics": [
                        k for k in self.communities.versions if entry.peer_id in self.communities.community(k)
                    ],
                    "bytes_in": self.protocols.bytes_in[entry.peer_id],
                    "bytes_out": self.protocols.bytes_out[entry.peer_id],
                    "rejected": dict(record.reasons) if record else {},
                }
            )
        return rows

    # -- running ----------------------------------------------------------------------------------------
    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            await nursery.start(self.communities.run)
            await nursery.start(self.membership.run)
            task_status.started(self)

    async def _on_announcement(self, announcement: Announcement) -> None:
        key = (announcement.key, announcement.peer_id, announcement.model_version)
        if announcement.model_version == 0 or key in self._fetching or key in self._refused:
            return
        if not self._wanted(*key):
            return
        self._fetching.add(key)
        if self._nursery is not None:
            self._nursery.start_soon(self._fetch, announcement)

    async def _fetch(self, announcement: Announcement) -> None:
        """Fetch an announced model, retrying after a back-off when the announcer fails to serve it.

        Without the retry a single timeout (a busy announcer) left the model unfetched until the next
        periodic re-announcement, which in a large community comes minutes later."""
        key = (announcement.key, announcement.peer_id, announcement.model_version)
        try:
            for attempt in range(self.p2p.settings.fetch_attempts):
                if attempt:
                    await trio.sleep(self.retry_delay(attempt))
                    if not self._wanted(*key):  # it arrived meanwhile (a newer announcement's fetch)
                        return
                if await self._fetch_once(announcement):
                    return
        finally:
            self._fetching.discard(key)

    def retry_delay(self, attempt: int) -> float:
        """Seconds before retry `attempt` (1, 2, ...): doubling from fetch_retry_delay, jittered so the
        fetchers of one busy announcer do not come back together."""
        base = self.p2p.settings.fetch_retry_delay * 2 ** (attempt - 1)
        return base * random.uniform(0.5, 1.5)

    async def _fetch_once(self, announcement: Announcement) -> bool:
        """One attempt; True when it is settled (fetched, or refused for a reason a retry cannot fix)."""
        peer = announcement.peer_id
        try:
            model = await self.protocols.fetch_model(peer, announcement.key, announcement.model_version)
        except P2PError as exc:
            log.info(
                "model %s v%d from %s not fetched: %s",
                announcement.key,
                announcement.model_version,
                peer,
                exc,
            )
            # a rule-breaking answer (bad signature, wrong version) is not retried: it was counted
            # against the peer; unreachable, slow or refusing peers are
            cause = exc.__cause__
            broke_rules = isinstance(cause, WireError) and cause.reason != "closed"
            if broke_rules:
                self._refuse(announcement)
            return broke_rules or self.protocols.guard.ledger.is_banned(peer)
        if model is None:
            return False  # announced but not served (yet): worth asking again
        if model.payload.origin != peer:  # an announcer announces its own models
            self.protocols.guard.reject(peer, WireError("wrong_origin", "served a model of another origin"))
            self._refuse(announcement)
            return True
        self.received[(announcement.key, peer)] = model
        for callback in self._model_callbacks:
            try:
                outcome = callback(model, peer)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:  # a failing consumer (one shutting down) must not take the service down
                log.exception(
                    "model callback failed on %s v%d from %s",
                    model.payload.topic,
                    model.payload.version,
                    peer,
                )
        return True

    def _refuse(self, announcement: Announcement) -> None:
        if len(self._refused) >= MAX_REFUSED:
            self._refused.clear()
        self._refused.add((announcement.key, announcement.peer_id, announcement.model_version))

    def _newer_than_received(self, topic: str, peer: str, version: int) -> bool:
        have = self.received.get((topic, peer))
        return have is None or have.payload.version < version

    async def _stored_model(self, topic: str, version: int | None) -> SignedModel | None:
        versions = self.own_models.get(topic, {})
        if not versions:
            return None
        return versions.get(max(versions) if version is None else version)

    async def _stored_results(self, topic: str, cursor: int, limit: int) -> ResultPage:
        store = self.own_results.get(topic, [])
        page = store[cursor : cursor + limit]
        return ResultPage(page, cursor + len(page), cursor + len(page) < len(store))


@asynccontextmanager
async def start_service(
    settings: P2PSettings | None = None,
    key_pair: KeyPair | None = None,
    *,
    listen_addrs: Sequence[str] | None = None,
) -> AsyncIterator[P2PService]:
    """A host with its service running until the block exits (joins `settings.bootstrap` when set)."""
    async with (
        start_host(settings, key_pair, listen_addrs=listen_addrs) as p2p,
        trio.open_nursery() as nursery,
    ):
        service = P2PService(p2p)
        await nursery.start(service.run)
        try:
            yield service
        finally:
            nursery.cancel_scope.cancel()


async def run_service(
    settings: P2PSettings, key_pair: KeyPair, *, task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    """Run until cancelled; `task_status.started(service)` once joined (the form `node.network` calls)."""
    async with start_service(settings, key_pair) as service:
        task_status.started(service)
        await trio.sleep_forever()
