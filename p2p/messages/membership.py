"""Membership and topic gossip: the neighbour lists peers exchange (thesis 3.3.1) and the topic keys they
announce to their communities.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Self

from p2p.message_limits import (
    KIB,
    MAX_ABS_FLOAT,
    MAX_ADDRS_PER_PEER,
    MAX_ANNOUNCED_TOPICS,
    MAX_NEIGHBOURS,
    MAX_VERSION,
)
from p2p.messages.envelope import FieldReader, Message, record_check
from p2p.value_checks import check_addr, check_float, check_int, check_peer_id, check_seq, check_topic


# ------------------------------------------------------------------------------------- membership
@dataclass(frozen=True)
class NeighbourEntry:
    """One line of a thesis 3.3.1 neighbour list: who, where, and when last heard of (unix seconds)."""

    peer_id: str
    addrs: tuple[str, ...]
    last_contact: float

    def to_wire(self) -> dict[str, Any]:
        return {"peer_id": self.peer_id, "addrs": list(self.addrs), "last_contact": float(self.last_contact)}

    @classmethod
    def parse(cls, f: FieldReader) -> Self:
        return cls(
            peer_id=f.get("peer_id", check_peer_id),
            addrs=f.get("addrs", check_seq, MAX_ADDRS_PER_PEER, check_addr),
            last_contact=f.get("last_contact", check_float, 0.0, MAX_ABS_FLOAT),
        )


@dataclass(frozen=True)
class NeighbourExchange(Message):
    """Push-pull neighbour exchange: both sides send their bounded list."""

    TYPE: ClassVar[str] = "neighbours"
    MAX_FRAME: ClassVar[int] = 256 * KIB
    entries: tuple[NeighbourEntry, ...]

    def body(self) -> dict[str, Any]:
        return {"entries": [entry.to_wire() for entry in self.entries]}

    @classmethod
    def parse(cls, f: FieldReader) -> Self:
        return cls(entries=f.get("entries", check_seq, MAX_NEIGHBOURS, record_check(NeighbourEntry)))


@dataclass(frozen=True)
class TopicEntry:
    """A topic key a peer holds and the newest model version it has for it (0: no model yet)."""

    key: str
    model_version: int = 0

    def to_wire(self) -> dict[str, Any]:
        return {"key": self.key, "model_version": self.model_version}

    @classmethod
    def parse(cls, f: FieldReader) -> Self:
        return cls(
            key=f.get("key", check_topic), model_version=f.get("model_version", check_int, 0, MAX_VERSION)
        )


@dataclass(frozen=True)
class TopicAnnouncement(Message):
    """A batch of topic keys, small enough for gossipsub (well under its 1 MiB cap)."""

    TYPE: ClassVar[str] = "topics"
    MAX_FRAME: ClassVar[int] = 64 * KIB
    origin: str
    topics: tuple[TopicEntry, ...]

    def body(self) -> dict[str, Any]:
        return {"origin": self.origin, "topics": [topic.to_wire() for topic in self.topics]}

    @classmethod
    def parse(cls, f: FieldReader) -> Self:
        return cls(
            origin=f.get("origin", check_peer_id),
            topics=f.get("topics", check_seq, MAX_ANNOUNCED_TOPICS, record_check(TopicEntry)),
        )
