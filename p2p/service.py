"""`P2PService`: host, membership, topic communities and the request/response protocols as one object.

The node publishes its signed models and crawl results here and hears about its communities' models
through a callback. A model travels in two steps: a small gossip announcement on the topic's gossipsub
topic (so it reaches every peer of the community and no peer outside it), then each member pulls the
model along the overlay, from the origin or any neighbour that fetched it already, and checks the
origin's signature (`p2p.dissemination`); a member serves the models it received to others (relay) and
caps its uploads per window. Results are pulled by cursor (`sync_results`). Providers default to the
in-memory stores kept here; the node can plug its repository in with `set_model_provider` /
`set_result_provider`.
"""

from __future__ import annotations

import inspect
import logging
import random
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import trio
from libp2p.crypto.keys import KeyPair
from libp2p.peer.id import ID

from p2p.communities import Announcement, Communities, gossip_topic
from p2p.dissemination import SpreadStats, UploadCaps, ask_order
from p2p.errors import P2PError, WireError
from p2p.host import P2PHost, exception_reason, start_host
from p2p.membership import Membership, Neighbour
from p2p.message_limits import MAX_RESULTS
from p2p.messages.envelope import Message
from p2p.messages.models import ModelPayload, ModelRequest, ModelResponse, SignedModel
from p2p.messages.results import CrawlResult, SignedResult
from p2p.protocols import (
    MODEL,
    ModelProvider,
    ProtocolError,
    Protocols,
    Refused,
    ResultPage,
    ResultProvider,
)
from p2p.settings import P2PSettings
from p2p.signing import sign_model, sign_results

log = logging.getLogger(__name__)

MAX_REFUSED = 10_000
"""Most refused (topic, peer, version) announcements remembered (forgotten all at once beyond it)."""

ModelCallback = Callable[[SignedModel, str], "Awaitable[None] | None"]
"""(the verified model, its origin peer): the origin whichever peer relayed it."""
ModelFilter = Callable[[str, str, int], bool]
"""(topic, origin peer, announced version) -> whether to fetch that model."""
PEER_ID_RE = re.compile(r"\b(?:12D3KooW|Qm)[1-9A-HJ-NP-Za-km-z]{20,}")
"""Peer ids in failure reasons, replaced so that the reasons count by kind."""
SERVED, NOT_SERVED, BROKE_RULES = "served", "not served", "broke rules"
"""What asking one peer for a model came to."""


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
        """(topic, origin) -> the newest verified model received: what this node relays."""
        settings = p2p.settings
        self.uploads = UploadCaps(
            settings.model_uploads_per_window, settings.model_upload_window, trio.current_time
        )
        self.spread = SpreadStats()
        self._model_callbacks: list[ModelCallback] = []
        self._model_provider: ModelProvider = self._stored_model
        self._result_provider: ResultProvider = self._stored_results
        self._wanted: ModelFilter = self._newer_than_received
        self._fetching: set[tuple[str, str, int]] = set()
        self._refused: set[tuple[str, str, int]] = set()
        """Announced models whose answer broke the rules (bad signature, wrong version): not asked again
        when the same version is announced again (a thin gossip mesh repeats a new version once)."""
        self._nursery: trio.Nursery | None = None
        self.protocols.serve(MODEL, ModelRequest, self._answer_model)
        self.protocols.serve_results(lambda topic, cursor, limit: self._result_provider(topic, cursor, limit))

    @property
    def peer_id(self) -> str:
        return str(self.p2p.peer_id)

    @property
    def host(self) -> P2PHost:
        return self.p2p

    def addrs(self) -> list[str]:
        return self.p2p.addrs()

    def neighbours(self) -> list[Neighbour]:
        """The neighbour list as it stands: what a node saves to rejoin through after a restart."""
        return self.membership.neighbours.peers()

    # -- the node's side --------------------------------------------------------------------------------
    def on_model(self, callback: ModelCallback) -> None:
        """Call `callback(model, origin)` for every verified model received from a community (the origin
        is the model's signer, whichever neighbour relayed it)."""
        self._model_callbacks.append(callback)

    def set_model_provider(self, provider: ModelProvider) -> None:
        self._model_provider = provider

    def set_result_provider(self, provider: ResultProvider) -> None:
        self._result_provider = provider

    def set_model_filter(self, wanted: ModelFilter) -> None:
        """Decide which announced models are fetched (a node with its own model store knows the versions
        it holds across restarts; the default remembers the ones received since start)."""
        self._wanted = wanted

    async def block(self, peer: str) -> None:
        """The user blocked `peer`: every request and announcement of it refused from now on (its models
        not fetched, even through others), out of the neighbour list, disconnected, and its models no
        longer relayed. `unblock` lifts the refusal; the peer comes back as any peer does."""
        self.protocols.guard.ledger.block(peer)
        self.membership.neighbours.remove(peer)
        for key in [key for key in self.received if key[1] == peer]:
            del self.received[key]
        await self.membership.drop_blocked()

    def unblock(self, peer: str) -> None:
        self.protocols.guard.ledger.unblock(peer)

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

    def peers_sharing_topics(self) -> int:
        """Connected peers in a community this node is in."""
        members = {peer for key in self.communities.versions for peer in self.communities.community(key)}
        return len({str(peer) for peer in self.connected()} & members)

    def nearby_communities(self) -> dict[str, list[str]]:
        """Communities the connected peers are in and this node is not (key -> peers)."""
        return self.communities.nearby()

    def held_topics(self) -> list[str]:
        """The topic keys whose communities this node is in."""
        return sorted(self.communities.versions)

    async def leave_topic(self, topic: str) -> None:
        """Leave the community of a topic the node no longer holds (an import without it dropped it)."""
        await self.communities.leave(topic)

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
        self._heard(announcement.key, announcement.peer_id, announcement.model_version)

    def _heard(self, topic: str, origin: str, version: int) -> bool:
        """Version `version` of `origin`'s model of `topic` exists: pull it unless held, refused, being
        pulled already, or unwanted by the node; whether a pull started."""
        key = (topic, origin, version)
        if version == 0 or origin == self.peer_id or key in self._fetching or key in self._refused:
            return False
        if self.protocols.guard.ledger.is_banned(origin):
            return False
        if self._holds(topic, origin, version) or not self._wanted(*key):
            return False
        if self._nursery is None:
            return False
        try:
            self._nursery.start_soon(self._pull, topic, origin, version)
        except RuntimeError:  # the service is stopping: a request or announcement came in meanwhile
            return False
        self._fetching.add(key)
        return True

    def _holds(self, topic: str, origin: str, version: int) -> bool:
        have = self.received.get((topic, origin))
        return have is not None and have.payload.version >= version

    async def _answer_model(self, peer: str, request: ModelRequest) -> list[Message]:
        """Serve this node's own model, or a received one when the request names its origin (relay).

        A request naming an origin is a dissemination pull and is served while the upload cap allows
        ("busy" beyond, so the spread becomes a tree); a schema-1 request for this node's own model (the
        node's direct fetches: a meta session's estimate phase, catching up with a community, peers from
        before relaying) is served as before, bounded by the per-peer rate limit. A pull for a version
        not heard of yet starts a pull of it here."""
        topic, version = request.topic, request.version
        if request.origin is None:
            return [ModelResponse(topic, await self._model_provider(topic, version))]
        if request.origin == self.peer_id:
            model = await self._model_provider(topic, version)
        else:
            model = self.received.get((topic, request.origin))
            if model is not None and version is not None and model.payload.version != version:
                model = None
            learns = model is None and version is not None and topic in self.communities.versions
            if learns and self._heard(topic, request.origin, version):
                self.spread.heard_from_request += 1
        if model is not None and not self.uploads.admit((topic, request.origin)):
            self.spread.busy_refusals += 1
            raise WireError("busy", "at the model upload cap: ask another holder")
        if model is not None:
            self.spread.uploads += 1
        return [ModelResponse(topic, model)]

    async def _pull(self, topic: str, origin: str, version: int) -> None:
        """Ask community neighbours one at a time (`ask_order`), fetch_ask_gap apart, until one serves the
        model; after a round in which nobody did, back off (`retry_delay`), for fetch_attempts rounds.

        Asking the whole neighbourhood back to back, with only the back-off between rounds, was a storm
        of its own: 100 in-process hosts x 12 connections made some 2,000 stream setups a second."""
        settings = self.p2p.settings
        key = (topic, origin, version)
        patience_over = trio.current_time() + settings.fetch_dial_patience * random.uniform(0.5, 1.5)
        shunned: set[str] = set()
        try:
            for attempt in range(settings.fetch_attempts):
                if attempt:
                    self.spread.rounds_of_none += 1
                    await trio.sleep(self.retry_delay(min(attempt, 3)))
                order = self._ask_order(topic, origin, trio.current_time() >= patience_over)
                for n, peer in enumerate(p for p in order if p not in shunned):
                    if self._holds(*key):
                        return
                    if n:
                        await trio.sleep(settings.fetch_ask_gap * random.uniform(0.5, 1.5))
                    outcome = await self._ask(peer, topic, origin, version)
                    if outcome == SERVED:
                        return
                    if outcome == BROKE_RULES:
                        if peer == origin:  # the origin itself served a bad model: not asked again
                            self._refuse(key)
                            return
                        shunned.add(peer)
                if self._holds(*key):
                    return
        finally:
            self._fetching.discard(key)

    def _ask_order(self, topic: str, origin: str, patience_over: bool) -> list[str]:
        """Connected community neighbours that are not banned (the origin among them when connected)."""
        ledger = self.protocols.guard.ledger
        connected = {str(p) for p in self.p2p.connected_peers()}
        members = set(self.communities.community(topic)) | {origin}
        neighbours = {p for p in connected & members if not ledger.is_banned(p)}
        mesh = {str(p) for p in self.p2p.gossipsub.mesh.get(gossip_topic(topic), ())}
        order = ask_order(mesh, neighbours, origin, dial_origin=patience_over)
        return [p for p in order if not ledger.is_banned(p)]

    def retry_delay(self, attempt: int) -> float:
        """Seconds before retry `attempt` (1, 2, ...): doubling from fetch_retry_delay, jittered so the
        fetchers of one busy announcer do not come back together."""
        base = self.p2p.settings.fetch_retry_delay * 2 ** (attempt - 1)
        return base * random.uniform(0.5, 1.5)

    async def _ask(self, peer: str, topic: str, origin: str, version: int) -> str:
        """Ask one peer for the model; a rule-breaking answer was counted against the peer already."""
        spread = self.spread
        spread.requests += 1
        try:
            await self._dial(peer)
            model = await self.protocols.fetch_model(peer, topic, version, origin=origin)
        except Refused as exc:
            if exc.reason == "busy":
                spread.busy_answers += 1
            else:
                spread.failures[exc.reason] += 1
            return NOT_SERVED
        except P2PError as exc:
            log.info("model %s v%d of %s not fetched from %s: %s", topic, version, origin, peer, exc)
            cause = exc.__cause__
            if isinstance(cause, WireError) and cause.reason != "closed":
                spread.failures[cause.reason] += 1
                return BROKE_RULES
            spread.failures[PEER_ID_RE.sub("<peer>", exception_reason(cause or exc))] += 1
            return NOT_SERVED
        if model is None:
            spread.none_answers += 1
            return NOT_SERVED
        if not self._holds(topic, origin, model.payload.version):
            spread.suppliers[(topic, origin)] = peer
            await self._deliver(model)
        return SERVED

    async def _dial(self, peer: str) -> None:
        """Connect to an unconnected peer (the origin, after the patience) at the addresses the neighbour
        list holds, within connect_timeout: a stream to a peer without known addresses failed only after
        request_timeout, and a slow dial held the fetch for as long."""
        peer_id = ID.from_base58(peer)
        if self.p2p.is_connected(peer_id):
            return
        self.spread.dials += 1
        entry = self.membership.neighbours.get(peer)
        if entry is None or not entry.addrs:
            raise ProtocolError("no address known for the peer")
        await self.p2p.connect(peer_id, entry.addrs)

    async def _deliver(self, model: SignedModel) -> None:
        """Keep a verified model for relaying and hand it to the node's callbacks."""
        payload = model.payload
        self.received[(payload.topic, payload.origin)] = model
        for callback in self._model_callbacks:
            try:
                outcome = callback(model, payload.origin)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:  # a failing consumer (one shutting down) must not take the service down
                log.exception(
                    "model callback failed on %s v%d from %s", payload.topic, payload.version, payload.origin
                )

    def _refuse(self, key: tuple[str, str, int]) -> None:
        if len(self._refused) >= MAX_REFUSED:
            self._refused.clear()
        self._refused.add(key)

    def _newer_than_received(self, topic: str, origin: str, version: int) -> bool:
        return not self._holds(topic, origin, version)

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
    recalled: Sequence[Neighbour] = (),
    blocked: Sequence[str] = (),
) -> AsyncIterator[P2PService]:
    """A host with its service running until the block exits (joins through `settings.bootstrap`, else
    through the `recalled` peers of an earlier run: `Membership.recall`), refusing the `blocked` peers
    from the start."""
    async with (
        start_host(settings, key_pair, listen_addrs=listen_addrs) as p2p,
        trio.open_nursery() as nursery,
    ):
        service = P2PService(p2p)
        for peer in blocked:
            service.protocols.guard.ledger.block(peer)
        service.membership.recall(recalled)
        await nursery.start(service.run)
        try:
            yield service
        finally:
            nursery.cancel_scope.cancel()
