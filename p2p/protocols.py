"""Request/response protocols over libp2p streams: one stream per exchange, length-prefixed msgpack frames.

Every frame a peer sends passes `p2p.limits.PeerGuard` (ban check, per-peer rate limit, the message type's
frame limit, strict schema validation); models and results are checked against their origin's signature.
A violation is answered with `Reject`, logged with the peer and reason, and counted against the peer; the
exchange is bounded by `request_timeout` and the number of handlers running at once is bounded too, so no
peer can crash or stall the host. The served data comes from provider callbacks the node plugs in.
"""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import trio
from libp2p.custom_types import TProtocol
from libp2p.peer.id import ID

from p2p.codec import HEADER_SIZE, decode_frame, encode_frame, read_frame
from p2p.errors import P2PError, WireError
from p2p.host import P2PHost, exception_reason
from p2p.limits import OutboundPacer, PeerGuard, PeerLedger, RateLimiter
from p2p.messages.envelope import Message, Reject
from p2p.messages.membership import NeighbourExchange
from p2p.messages.meta_classifier import (
    CovarianceReport,
    CrossValidationReport,
    MetaClassifierOffer,
    MetaRequest,
)
from p2p.messages.models import ModelRequest, ModelResponse, SignedModel
from p2p.messages.results import HeldFilter, ResultSyncRequest, ResultSyncResponse, SignedResult
from p2p.signing import verify_model, verify_result

log = logging.getLogger(__name__)

NEIGHBOURS = TProtocol("/topicswarm/neighbours/1.0.0")
MODEL = TProtocol("/topicswarm/model/1.0.0")
RESULTS = TProtocol("/topicswarm/results/1.0.0")
META = TProtocol("/topicswarm/meta/1.0.0")
META_OFFER = TProtocol("/topicswarm/meta-offer/1.0.0")
CENTROIDS = TProtocol("/topicswarm/centroids/1.0.0")

MAX_CONCURRENT_HANDLERS = 64
"""Streams served at once; more are reset at once rather than queued (a flood must not build a backlog)."""
MAX_HANDLERS_PER_PEER = 8
"""Streams of one peer served at once (one peer trickling bytes into 64 streams had taken every slot)."""

M = TypeVar("M", bound=Message)
Respond = Callable[[str, Any], Awaitable[Sequence[Message]]]
ModelProvider = Callable[[str, "int | None"], Awaitable["SignedModel | None"]]
"""(topic, version or None for the latest) -> the signed model, or None when this node has none."""


@dataclass(frozen=True)
class ResultPage:
    """What a result provider returns: items after the cursor, the cursor to ask from next, and whether
    more are waiting."""

    items: Sequence[SignedResult]
    next_cursor: int
    more: bool = False


ResultProvider = Callable[[str, int, int], Awaitable[ResultPage]]
"""(topic, cursor, limit) -> the page of signed results after `cursor`."""
MetaHandler = Callable[[str, MetaRequest], Awaitable[Sequence[Message]]]
"""(peer, METAREQUEST) -> the replies: [CrossValidationReport, CovarianceReport] for "estimate",
[MetaClassifierOffer] for "build"."""
OfferHandler = Callable[[str, MetaClassifierOffer], Awaitable[MetaClassifierOffer]]
"""(peer, its classifier offer) -> this node's own offer for the same session."""
CentroidsProvider = Callable[[str, str, int], Awaitable["SignedModel | None"]]
"""(asking peer, topic, k) -> this node's signed k-means model of the topic (kind "centroids"), or None."""


class ProtocolError(P2PError):
    """A request to a peer failed: unreachable, too slow, refused, or answered against the rules."""


class Refused(ProtocolError):
    """The peer answered with `Reject`: `reason` is its slug ("busy": a holder at its upload cap)."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class Protocols:
    """The request/response protocols of one host: a client side and provider-backed handlers."""

    def __init__(self, p2p: P2PHost, guard: PeerGuard | None = None) -> None:
        settings = p2p.settings
        self.p2p = p2p
        self.guard = guard or PeerGuard(
            RateLimiter(settings.requests_per_second, settings.request_burst),
            PeerLedger(max_violations=settings.max_violations),
        )
        self.timeout = settings.request_timeout
        self.bytes_in: Counter[str] = Counter()
        self.bytes_out: Counter[str] = Counter()
        self.bytes_by_message: Counter[str] = Counter()
        """Frame bytes per direction and message type ("out model_response", "in meta_request", ...)."""
        self._handlers = trio.CapacityLimiter(MAX_CONCURRENT_HANDLERS)
        self._running: Counter[str] = Counter()  # exchanges running per peer
        # this node's own requests kept to half of what a peer with its settings serves
        self.pacer = OutboundPacer(
            settings.requests_per_second / 2, max(1.0, settings.request_burst / 2), MAX_HANDLERS_PER_PEER // 2
        )

    # -- serving ----------------------------------------------------------------------------------------
    def serve(self, protocol: TProtocol, expected: type[Message], respond: Respond) -> None:
        """Answer each `expected` request on `protocol` with the messages `respond(peer, request)` returns."""

        async def handler(stream: Any) -> None:
            peer = str(stream.muxed_conn.peer_id)
            if self._running[peer] >= MAX_HANDLERS_PER_PEER:  # counted: an honest peer never needs more
                self.guard.reject(
                    peer, WireError("rate_limited", f"{MAX_HANDLERS_PER_PEER} exchanges at once")
                )
                await _reset(stream)
                return
            try:
                self._handlers.acquire_nowait()
            except trio.WouldBlock:
                log.warning(
                    "%s from %s refused: %d exchanges already running",
                    protocol,
                    peer,
                    self._handlers.total_tokens,
                )
                await _reset(stream)
                return
            self._running[peer] += 1
            try:
                with trio.fail_after(self.timeout):
                    request = await self._receive(peer, stream, expected)
                    for reply in await respond(peer, request):
                        await self._send(peer, stream, reply)
            except WireError as error:
                await self._try_send(peer, stream, Reject(error.reason, error.detail[:200]))
            except trio.TooSlowError:
                self.guard.reject(peer, WireError("timeout", f"{protocol} exchange exceeded {self.timeout}s"))
            except Exception as exc:  # a broken stream or a failing provider must not take the host down
                log.warning("%s from %s failed: %s", protocol, peer, exception_reason(exc))
            finally:
                self._running[peer] -= 1
                if not self._running[peer]:
                    del self._running[peer]
                self._handlers.release()
                await _close(stream)

        self.p2p.host.set_stream_handler(protocol, handler)

    def serve_neighbours(
        self, respond: Callable[[str, NeighbourExchange], Awaitable[NeighbourExchange]]
    ) -> None:
        async def answer(peer: str, request: NeighbourExchange) -> list[Message]:
            return [await respond(peer, request)]

        self.serve(NEIGHBOURS, NeighbourExchange, answer)

    def serve_models(self, provider: ModelProvider) -> None:
        async def answer(peer: str, request: ModelRequest) -> list[Message]:
            return [ModelResponse(request.topic, await provider(request.topic, request.version))]

        self.serve(MODEL, ModelRequest, answer)

    def serve_results(self, provider: ResultProvider) -> None:
        async def answer(peer: str, request: ResultSyncRequest) -> list[Message]:
            page = await provider(request.topic, request.cursor, request.limit)
            items = tuple(page.items)[: request.limit]
            if request.held is not None:
                items = tuple(item for item in items if item.result.url not in request.held)
            more = page.more or len(page.items) > request.limit
            return [ResultSyncResponse(request.topic, items, page.next_cursor, more)]

        self.serve(RESULTS, ResultSyncRequest, answer)

    def serve_centroids(self, provider: CentroidsProvider) -> None:
        """Collaborative clustering (thesis 3.3.3): answer a `ModelRequest` whose version field names k
        with this node's k-means centroids of the topic."""

        async def answer(peer: str, request: ModelRequest) -> list[Message]:
            k = request.version or 0
            if request.origin is not None:
                raise WireError("bad_value", "centroids are served by their origin only")
            if not 2 <= k <= 32:
                raise WireError("out_of_range", "k must lie in [2, 32]")
            return [ModelResponse(request.topic, await provider(peer, request.topic, k))]

        self.serve(CENTROIDS, ModelRequest, answer)

    def serve_meta(self, handler: MetaHandler, offers: OfferHandler | None = None) -> None:
        self.serve(META, MetaRequest, handler)
        if offers is not None:

            async def answer(peer: str, offer: MetaClassifierOffer) -> list[Message]:
                _verify_offer(offer)
                return [await offers(peer, offer)]

            self.serve(META_OFFER, MetaClassifierOffer, answer)

    # -- requesting -------------------------------------------------------------------------------------
    async def request(
        self, peer: str | ID, protocol: TProtocol, message: Message, replies: Sequence[type[Message]]
    ) -> list[Message]:
        """Send `message` on a new stream and read one reply of each type in `replies`, in order."""
        peer_id = peer if isinstance(peer, ID) else ID.from_base58(peer)
        name = str(peer_id)
        async with self.pacer.turn(name):  # outside the timeout: the wait is for this node's own requests
            return await self._exchange(peer_id, protocol, message, replies)

    async def _exchange(
        self, peer_id: ID, protocol: TProtocol, message: Message, replies: Sequence[type[Message]]
    ) -> list[Message]:
        name = str(peer_id)
        stream = None
        try:
            with trio.fail_after(self.timeout):
                stream = await self.p2p.host.new_stream(peer_id, [protocol])
                await self._send(name, stream, message)
                return [await self._receive(name, stream, kind, solicited=True) for kind in replies]
        except ProtocolError:
            raise
        except WireError as error:
            raise ProtocolError(f"peer {name} answered {protocol} against the rules: {error}") from error
        except trio.TooSlowError as exc:
            raise ProtocolError(f"peer {name} did not answer {protocol} within {self.timeout}s") from exc
        except Exception as exc:  # libp2p raises many kinds, wrapped in exception groups
            raise ProtocolError(f"peer {name} unreachable for {protocol}: {exception_reason(exc)}") from exc
        finally:
            if stream is not None:
                await _close(stream)

    async def exchange_neighbours(self, peer: str | ID, mine: NeighbourExchange) -> NeighbourExchange:
        (reply,) = await self.request(peer, NEIGHBOURS, mine, [NeighbourExchange])
        return reply  # type: ignore[return-value]

    async def fetch_model(
        self, peer: str | ID, topic: str, version: int | None = None, origin: str | None = None
    ) -> SignedModel | None:
        """The model of `topic` (latest or `version`) by `origin`, which the peer may relay (a request naming
        an origin is a dissemination pull: holders cap those, see `P2PService`), or the peer's own when
        None (schema 1, which every peer parses); signature, origin and version checked (a violation
        counts against the peer and raises ProtocolError); None if the peer has none."""
        request = ModelRequest(topic, version, origin)
        (reply,) = await self.request(peer, MODEL, request, [ModelResponse])
        model = reply.model  # type: ignore[attr-defined]
        if model is None:
            return None
        self._checked(peer, verify_model, model)
        expected = origin or str(peer)
        if model.payload.origin != expected:
            self._violation(
                peer, WireError("wrong_origin", f"served a model of {model.payload.origin[:16]}...")
            )
        if version is not None and model.payload.version != version:
            self._violation(
                peer, WireError("bad_value", f"asked for version {version}, got {model.payload.version}")
            )
        return model

    async def fetch_centroids(self, peer: str | ID, topic: str, k: int) -> SignedModel | None:
        """The peer's k-means model of `topic` with k centroids, signature checked; None if it has none."""
        (reply,) = await self.request(peer, CENTROIDS, ModelRequest(topic, k), [ModelResponse])
        model = reply.model  # type: ignore[attr-defined]
        if model is not None:
            self._checked(peer, verify_model, model)
        return model

    async def fetch_results(
        self, peer: str | ID, topic: str, cursor: int = 0, limit: int = 500, held: HeldFilter | None = None
    ) -> ResultSyncResponse:
        """One page of the peer's results of `topic` after `cursor`, every item's signature checked; with
        `held` (the URLs this node holds already) the peer may leave those out."""
        request = ResultSyncRequest(topic, cursor, limit, held)
        (reply,) = await self.request(peer, RESULTS, request, [ResultSyncResponse])
        if len(reply.items) > limit:  # type: ignore[attr-defined]
            self._violation(peer, WireError("too_many_items", f"{len(reply.items)} items > limit {limit}"))  # type: ignore[attr-defined]
        for item in reply.items:  # type: ignore[attr-defined]
            self._checked(peer, verify_result, item)
        return reply  # type: ignore[return-value]

    async def meta_request(self, peer: str | ID, request: MetaRequest) -> list[Message]:
        """METAREQUEST: "estimate" returns the peer's cross-validation and covariance reports, "build" its
        classifier offer (signature checked)."""
        if request.phase == "estimate":
            return await self.request(peer, META, request, [CrossValidationReport, CovarianceReport])
        (offer,) = await self.request(peer, META, request, [MetaClassifierOffer])
        if offer.model is None and not _references_held(offer, request, str(peer)):  # type: ignore[attr-defined]
            self._violation(peer, WireError("bad_value", "offer references a model the initiator lacks"))
        self._checked(peer, _verify_offer, offer)
        return [offer]

    async def exchange_offers(self, peer: str | ID, mine: MetaClassifierOffer) -> MetaClassifierOffer:
        """Swap classifiers with a peer of a meta session (estimation phase, fig. 3.6)."""
        (offer,) = await self.request(peer, META_OFFER, mine, [MetaClassifierOffer])
        self._checked(peer, _verify_offer, offer)
        return offer  # type: ignore[return-value]

    def traffic(self) -> dict[str, int]:
        return {"in": sum(self.bytes_in.values()), "out": sum(self.bytes_out.values())}

    def count(self, direction: str, kind: str, size: int) -> None:
        """Count bytes exchanged outside request/response streams (gossip announcements)."""
        self.bytes_by_message[f"{direction} {kind}"] += size

    # -- frames -----------------------------------------------------------------------------------------
    async def _send(self, peer: str, stream: Any, message: Message) -> None:
        frame = encode_frame(message, type(message).MAX_FRAME)
        self.bytes_out[peer] += len(frame)
        self.bytes_by_message[f"out {message.TYPE}"] += len(frame)
        await stream.write(frame)

    async def _receive(self, peer: str, stream: Any, expected: type[M], solicited: bool = False) -> M:
        """One frame from `peer`. A `solicited` one answers this node's own request and is not charged to
        the peer's rate limit: pulling many announced models from an honest peer had banned it."""
        limit = max(expected.MAX_FRAME, Reject.MAX_FRAME)
        if solicited:
            self.guard.ledger.check(peer)
        else:
            self.guard.admit(peer)
        try:
            payload = await read_frame(stream, limit)
            self.bytes_in[peer] += HEADER_SIZE + len(payload)
            message = decode_frame(payload, None, limit)
            self.bytes_by_message[f"in {message.TYPE}"] += HEADER_SIZE + len(payload)
            if isinstance(message, Reject) and expected is not Reject:
                raise Refused(f"peer {peer} refused: {message.reason} {message.detail}", message.reason)
            if not isinstance(message, expected):
                raise WireError("unexpected_type", f"got {type(message).__name__}, expected {expected.TYPE}")
            return message
        except WireError as error:
            if error.reason != "closed":
                self.guard.reject(peer, error)
            raise

    async def _try_send(self, peer: str, stream: Any, message: Message) -> None:
        with contextlib.suppress(Exception):  # the peer may be gone already
            await self._send(peer, stream, message)

    def _violation(self, peer: str | ID, error: WireError) -> None:
        self.guard.reject(str(peer), error)
        raise ProtocolError(f"peer {peer} sent a rejected message: {error}") from error

    def _checked(self, peer: str | ID, check: Callable[[Any], Any], value: Any) -> None:
        try:
            check(value)
        except WireError as error:
            self._violation(peer, error)


def _verify_offer(offer: Any) -> None:
    if offer.model is not None:
        verify_model(offer.model)


def _references_held(offer: Any, request: MetaRequest, peer: str) -> bool:
    """A build offer without a model must name the version of the peer's model the initiator holds."""
    return any(h.origin == peer and h.model_version == offer.model_version for h in request.held)


async def _close(stream: Any) -> None:
    with trio.CancelScope(shield=True), trio.move_on_after(1), contextlib.suppress(Exception):
        await stream.close()


async def _reset(stream: Any) -> None:
    with trio.CancelScope(shield=True), trio.move_on_after(1), contextlib.suppress(Exception):
        await stream.reset()
