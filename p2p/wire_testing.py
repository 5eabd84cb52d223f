"""Test kit for the wire layer: deterministic keys, one valid sample of every message, short-read streams,
and a wait for tests running real hosts.

Used by the wire tests and by anyone testing a protocol handler without starting libp2p hosts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import SimpleNamespace

import numpy as np
import trio

from p2p.messages.envelope import Message, Reject
from p2p.messages.membership import NeighbourEntry, NeighbourExchange, TopicAnnouncement, TopicEntry
from p2p.messages.meta_classifier import (
    CovarianceReport,
    CovEntry,
    CrossValidationReport,
    CvEntry,
    HeldModel,
    MemberRef,
    MetaClassifierOffer,
    MetaModelDescription,
    MetaRequest,
)
from p2p.messages.models import MetaParams, ModelPayload, ModelRequest, ModelResponse, pack_weights
from p2p.messages.results import CrawlResult, ResultSyncRequest, ResultSyncResponse
from p2p.signing import LocalEd25519Key, sign_model, sign_result


async def wait_until(predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    """Poll `predicate` until true; TooSlowError after `timeout` seconds (a hang guard, not a timing)."""
    with trio.fail_after(timeout):
        while not predicate():
            await trio.sleep(0.05)


def own_model(node: object, topic: str, version: int = 1) -> ModelPayload:
    """A linear model of `topic` whose origin is `node` (anything with a `peer_id`), 4096 features."""
    peer_id = str(node.peer_id)  # type: ignore[attr-defined]
    return sample_model(SimpleNamespace(peer_id=peer_id), topic=topic, version=version, n_features=4096)


def wire_key(n: int) -> LocalEd25519Key:
    """The n-th deterministic test key (same peer id in every run)."""
    return LocalEd25519Key(seed=bytes([n % 256]) * 32)


def sample_model(
    key: LocalEd25519Key,
    topic: str = "databases",
    version: int = 1,
    n_features: int = 64,
    kind: str = "linear",
    rows: int = 1,
    sparse: bool = False,
    members: tuple[str, ...] = (),
) -> ModelPayload:
    rng = np.random.default_rng(version)
    matrix = rng.normal(size=(rows, n_features)).astype(np.float32)
    if sparse:
        matrix[:, ::3] = 0.0
        matrix[:, 1::3] = 0.0
    packed = pack_weights(matrix)
    meta = None
    if kind == "meta":
        meta = MetaParams(member_origins=members, member_weights=(1.0,) * rows, t1=0.2, t2=-0.2)
    return ModelPayload(
        topic=topic,
        version=version,
        kind=kind,
        feature_config={"n_features": n_features, "stem": True, "ngrams": (1, 2), "language": "english"},
        rows=rows,
        weights=packed["weights"],
        indices=packed["indices"],
        values=packed["values"],
        biases=() if kind == "centroids" else tuple(0.5 for _ in range(rows)),
        training_doc_ids=tuple(f"doc-{i}" for i in range(5)),
        origin=key.peer_id,
        created=1_700_000_000.25,
        meta=meta,
        extra={"calibration": {"scale": 1.25, "n_positive": 10}, "names": ("a", "b"), "blob": b"\x00\x01"},
    )


def sample_result(key: LocalEd25519Key, topic: str = "databases", n: int = 0) -> CrawlResult:
    return CrawlResult(
        url=f"http://127.0.0.3:8080/docs/page{n}.html",
        title=f"Page {n}",
        preview="PostgreSQL is an object-relational database …",
        topic=topic,
        confidence=0.75,
        fingerprint=f"{n:016x}",
        origin=key.peer_id,
        fetched_at=1_700_000_100.5 + n,
    )


def sample_messages() -> Iterator[Message]:
    """One valid instance of every message type (and of each model kind and weight form)."""
    a, b, c = wire_key(1), wire_key(2), wire_key(3)
    topic = "databases"
    yield NeighbourExchange(
        entries=(
            NeighbourEntry(a.peer_id, ("/ip4/127.0.0.1/tcp/4001",), 1_700_000_000.0),
            NeighbourEntry(b.peer_id, ("/ip4/127.0.0.1/tcp/4002", "/ip6/::1/tcp/4002"), 1_700_000_001.5),
        )
    )
    yield NeighbourExchange(entries=())
    yield TopicAnnouncement(origin=a.peer_id, topics=(TopicEntry(topic, 3), TopicEntry("linux/kernel", 0)))
    yield ModelRequest(topic=topic)
    yield ModelRequest(topic=topic, version=7)
    yield ModelRequest(topic=topic, version=7, origin=b.peer_id)
    yield ModelResponse(topic=topic, model=None)
    yield ModelResponse(topic=topic, model=sign_model(a, sample_model(a)))
    yield ModelResponse(topic=topic, model=sign_model(a, sample_model(a, version=2, sparse=True)))
    yield ModelResponse(topic=topic, model=sign_model(b, sample_model(b, kind="centroids", rows=3)))
    yield ModelResponse(
        topic=topic,
        model=sign_model(c, sample_model(c, kind="meta", rows=2, members=(a.peer_id, b.peer_id))),
    )
    yield ResultSyncRequest(topic=topic, cursor=0, limit=100)
    yield ResultSyncResponse(
        topic=topic, items=tuple(sign_result(a, sample_result(a, topic, n)) for n in range(3)), next_cursor=3
    )
    yield ResultSyncResponse(topic=topic, items=(), next_cursor=0, more=False)
    yield MetaRequest(
        session="s-1",
        topic=topic,
        initiator=a.peer_id,
        phase="estimate",
        goal_loss=0.2,
        goal_error=0.05,
        participants=(b.peer_id, c.peer_id),
    )
    yield MetaRequest(session="s-1", topic=topic, initiator=a.peer_id, phase="build", goal_loss=0.0)
    yield MetaRequest(
        session="s-1",
        topic=topic,
        initiator=a.peer_id,
        phase="build",
        goal_loss=0.2,
        held=(HeldModel(b.peer_id, 3),),
    )
    yield MetaClassifierOffer(session="s-1", model=sign_model(b, sample_model(b)))
    yield MetaClassifierOffer(session="s-1", model=None, model_version=3)
    yield CrossValidationReport(
        session="s-1", topic=topic, reporter=b.peer_id, entries=(CvEntry(a.peer_id, 1, 120, 11),)
    )
    yield CovarianceReport(
        session="s-1", topic=topic, reporter=b.peer_id, entries=(CovEntry(a.peer_id, c.peer_id, 120, 0.03),)
    )
    yield MetaModelDescription(
        session="s-1",
        topic=topic,
        initiator=a.peer_id,
        members=(MemberRef(a.peer_id, 1, 1.0), MemberRef(b.peer_id, 1, 1.0)),
        t1=0.1,
        t2=-0.1,
        expected_loss=0.2,
        expected_error=0.04,
        created=1_700_000_200.0,
        model_version=2,
    )
    yield Reject(reason="rate_limited", detail="slow down")


class ShortReadStream:
    """An in-memory stream whose `read(n)` returns at most `chunk` bytes, like libp2p's streams do."""

    def __init__(self, data: bytes, chunk: int = 3) -> None:
        self._data = memoryview(data)
        self._pos = 0
        self._chunk = chunk
        self.reads = 0

    async def read(self, n: int) -> bytes:
        self.reads += 1
        end = min(self._pos + n, self._pos + self._chunk, len(self._data))
        chunk = bytes(self._data[self._pos : end])
        self._pos = end
        return chunk

    @property
    def consumed(self) -> int:
        return self._pos
