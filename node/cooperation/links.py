"""Request/response exchanges of the cooperation layer over a libp2p host, every frame checked.

Each exchange opens one stream, sends one request frame and reads the expected reply frames; handlers read
one request and write their replies. Everything a peer sends passes `p2p.limits.PeerGuard` (ban check, rate
limit, frame limit, schema validation) and every rejection is counted per peer and reason for the UI. Bytes
in and out are counted per peer (the frames' sizes).
"""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import trio

from p2p.codec import decode_frame, encode_frame, read_frame
from p2p.errors import P2PError, WireError
from p2p.limits import PeerGuard
from p2p.schemas import Message, Reject

log = logging.getLogger(__name__)

PREFIX = "/topicswarm/coop"
HELLO = f"{PREFIX}/hello/1.0.0"
NEIGHBOURS = f"{PREFIX}/neighbours/1.0.0"
MODEL = f"{PREFIX}/model/1.0.0"
CENTROIDS = f"{PREFIX}/centroids/1.0.0"
RESULTS = f"{PREFIX}/results/1.0.0"
META = f"{PREFIX}/meta/1.0.0"

Responder = Callable[[str, Any], Awaitable[Sequence[Message]]]


class ExchangeError(P2PError):
    """A request to a peer failed (unreachable, timed out, refused, or answered wrongly)."""


class Links:
    """The cooperation protocols on one `p2p.host.P2PHost`."""

    def __init__(self, host: Any, guard: PeerGuard, timeout: float) -> None:
        self.host = host
        self.guard = guard
        self.timeout = timeout
        self.bytes_in: Counter[str] = Counter()
        self.bytes_out: Counter[str] = Counter()
        self.bytes_by_message: Counter[str] = Counter()  # "out hello", "in model_response", ...: each once

    @property
    def peer_id(self) -> str:
        return str(self.host.peer_id)

    def traffic(self) -> dict[str, int]:
        return {"in": sum(self.bytes_in.values()), "out": sum(self.bytes_out.values())}

    async def _send(self, peer: str, stream: Any, message: Message) -> None:
        frame = encode_frame(message)
        self.bytes_out[peer] += len(frame)
        self.bytes_by_message[f"out {message.TYPE}"] += len(frame)
        await stream.write(frame)

    async def _receive(self, peer: str, stream: Any, expected: type[Message]) -> Message:
        self.guard.admit(peer)
        limit = max(expected.MAX_FRAME, Reject.MAX_FRAME)
        try:
            payload = await read_frame(stream, limit)
            self.bytes_in[peer] += len(payload) + 4
            message = decode_frame(payload, None, limit)
            self.bytes_by_message[f"in {message.TYPE}"] += len(payload) + 4
            if isinstance(message, Reject) and expected is not Reject:
                raise ExchangeError(f"peer {peer} refused: {message.reason} {message.detail}")
            if not isinstance(message, expected):
                raise WireError("unexpected_type", f"got {type(message).__name__}, expected {expected.TYPE}")
            return message
        except WireError as error:
            if error.reason != "closed":
                self.guard.reject(peer, error)
            raise

    def reject(self, peer: str, error: WireError) -> None:
        """Counts a rejection found after decoding (a bad signature, a model of the wrong origin)."""
        self.guard.reject(peer, error)

    def handle(self, protocol: str, expected: type[Message], respond: Responder) -> None:
        from libp2p.custom_types import TProtocol

        async def handler(stream: Any) -> None:
            peer = str(stream.muxed_conn.peer_id)
            try:
                with trio.fail_after(self.timeout):
                    request = await self._receive(peer, stream, expected)
                    for reply in await respond(peer, request):
                        await self._send(peer, stream, reply)
            except WireError as error:
                await self._try_send(peer, stream, Reject(error.reason, error.detail[:200]))
            except (trio.TooSlowError, ExchangeError) as exc:
                log.info("%s from %s: %s", protocol, peer, exc)
            except Exception as exc:  # a broken stream must not take the node down
                log.info("%s from %s failed: %s", protocol, peer, exc)
            finally:
                with trio.CancelScope(shield=True), trio.move_on_after(1):
                    await _close(stream)

        self.host.host.set_stream_handler(TProtocol(protocol), handler)

    async def _try_send(self, peer: str, stream: Any, message: Message) -> None:
        with contextlib.suppress(Exception):  # the peer may be gone already
            await self._send(peer, stream, message)

    async def request(
        self, peer: str, protocol: str, message: Message, expected: Sequence[type[Message]]
    ) -> list[Message]:
        """Send `message` and read one reply of each expected type, in order."""
        from libp2p.custom_types import TProtocol
        from libp2p.peer.id import ID

        stream = None
        try:
            with trio.fail_after(self.timeout):
                stream = await self.host.host.new_stream(ID.from_base58(peer), [TProtocol(protocol)])
                await self._send(peer, stream, message)
                return [await self._receive(peer, stream, kind) for kind in expected]
        except ExchangeError:
            raise
        except WireError as error:
            raise ExchangeError(f"peer {peer} answered {protocol} wrongly: {error}") from error
        except trio.TooSlowError as exc:
            raise ExchangeError(f"peer {peer} did not answer {protocol} within {self.timeout}s") from exc
        except Exception as exc:  # libp2p raises many kinds, wrapped in groups
            raise ExchangeError(f"peer {peer} unreachable for {protocol}: {_reason(exc)}") from exc
        finally:
            if stream is not None:
                with trio.CancelScope(shield=True), trio.move_on_after(1):
                    await _close(stream)


async def _close(stream: Any) -> None:
    with contextlib.suppress(Exception):
        await stream.close()


def _reason(exc: BaseException) -> str:
    while True:
        if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        elif exc.__cause__ is not None:
            exc = exc.__cause__
        else:
            return f"{type(exc).__name__}: {exc}"
