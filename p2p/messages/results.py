"""Result sync: crawl results signed by their origin, and the paged request (with a Bloom filter of the
URLs the asker holds) and response that pull a topic's results from a peer.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from p2p.message_limits import (
    KIB,
    MAX_ABS_FLOAT,
    MAX_CURSOR,
    MAX_FINGERPRINT_LEN,
    MAX_HELD_FILTER_BYTES,
    MAX_HELD_HASHES,
    MAX_PREVIEW_LEN,
    MAX_RESULTS,
    MAX_TITLE_LEN,
    MIB,
    SIGNATURE_LEN,
)
from p2p.messages.envelope import FieldReader, Message, record_check
from p2p.value_checks import (
    FINGERPRINT_RE,
    check_bool,
    check_bytes,
    check_float,
    check_int,
    check_pattern,
    check_peer_id,
    check_seq,
    check_str,
    check_topic,
    check_url,
    fail,
)


# ----------------------------------------------------------------------------------- crawl results
@dataclass(frozen=True)
class CrawlResult:
    """One page a peer's crawler accepted for a topic, as shared with the topic's community."""

    url: str
    title: str
    preview: str
    topic: str
    confidence: float
    fingerprint: str
    origin: str
    fetched_at: float

    def to_wire(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "title": self.title,
            "preview": self.preview,
            "topic": self.topic,
            "confidence": float(self.confidence),
            "fingerprint": self.fingerprint,
            "origin": self.origin,
            "fetched_at": float(self.fetched_at),
        }

    @classmethod
    def parse(cls, f: FieldReader) -> Self:
        return cls(
            url=f.get("url", check_url),
            title=f.get("title", check_str, MAX_TITLE_LEN, 0),
            preview=f.get("preview", check_str, MAX_PREVIEW_LEN, 0),
            topic=f.get("topic", check_topic),
            confidence=f.get("confidence", check_float),
            fingerprint=f.get(
                "fingerprint", check_pattern, MAX_FINGERPRINT_LEN, FINGERPRINT_RE, "fingerprint"
            ),
            origin=f.get("origin", check_peer_id),
            fetched_at=f.get("fetched_at", check_float, 0.0, MAX_ABS_FLOAT),
        )


@dataclass(frozen=True)
class SignedResult:
    """A crawl result signed by its origin; each item stays verifiable when relayed or synced alone."""

    result: CrawlResult
    signature: bytes

    def to_wire(self) -> dict[str, Any]:
        return {"result": self.result.to_wire(), "signature": bytes(self.signature)}

    @classmethod
    def parse(cls, f: FieldReader) -> Self:
        return cls(
            result=f.get("result", record_check(CrawlResult)),
            signature=f.get("signature", check_bytes, SIGNATURE_LEN, SIGNATURE_LEN),
        )


HELD_FILTER_PERSON = b"topicswarm-bloom"


def held_filter_probes(key: str, bits: int, hashes: int) -> list[int]:
    """The bit positions of `key` in a `HeldFilter` of `bits` bits and `hashes` hash functions (the
    specification both peers must share, hence BLAKE2b and not Python's per-process `hash()`)."""
    digest = hashlib.blake2b(key.encode("utf-8"), digest_size=16, person=HELD_FILTER_PERSON).digest()
    h1 = int.from_bytes(digest[:8], "little")
    h2 = int.from_bytes(digest[8:], "little") | 1
    return [(h1 + i * h2) % bits for i in range(hashes)]


def _check_filter_bits(value: Any, where: str) -> bytes:
    bits = check_bytes(value, where, MAX_HELD_FILTER_BYTES)
    if not bits:
        raise fail("too_short", where, "an empty filter (send none instead)")
    return bits


@dataclass(frozen=True)
class HeldFilter:
    """A Bloom filter of the result URLs a result-sync asker already holds, so the provider leaves them
    out. A false positive only leaves one result unsent; checking a result costs the provider one BLAKE2b
    and at most `MAX_HELD_HASHES` bit probes, however hostile the filter.

    Specification: m = 8 * len(bits) bits, k = hashes. A key (the URL exactly as in `CrawlResult.url`,
    UTF-8) sets bits (h1 + i * h2) mod m for i in 0..k-1, where h1 and h2 are the little-endian unsigned
    64-bit halves of BLAKE2b with a 16-byte digest and person b"topicswarm-bloom", h2 forced odd (double
    hashing, Kirsch and Mitzenmacher); bit j is bit j % 8 (least significant first) of byte j // 8."""

    bits: bytes
    hashes: int

    @staticmethod
    def capacity(fp_rate: float, max_bytes: int) -> int:
        """Most keys a filter of `max_bytes` holds at `fp_rate` (a sender with more keeps its newest)."""
        return max(int(8 * max_bytes * math.log(2) ** 2 / -math.log(fp_rate)), 1)

    @classmethod
    def build(cls, keys: Iterable[str], fp_rate: float, max_bytes: int) -> HeldFilter:
        """A filter of `keys` sized for `fp_rate` (m = -n ln p / ln(2)^2 bits, k = m/n ln 2), capped at
        `max_bytes` (more keys than that holds at `fp_rate` raise the false-positive rate instead)."""
        unique = set(keys)
        if not 0.0 < fp_rate < 1.0:
            raise ValueError(f"fp_rate must lie in (0, 1), got {fp_rate}")
        if not 1 <= max_bytes <= MAX_HELD_FILTER_BYTES:
            raise ValueError(f"max_bytes must lie in [1, {MAX_HELD_FILTER_BYTES}], got {max_bytes}")
        n = max(len(unique), 1)
        wanted = math.ceil(-n * math.log(fp_rate) / math.log(2) ** 2)
        size = min(max(math.ceil(wanted / 8), 1), max_bytes)
        hashes = min(max(round(8 * size / n * math.log(2)), 1), MAX_HELD_HASHES)
        array = bytearray(size)
        for key in unique:
            for j in held_filter_probes(key, 8 * size, hashes):
                array[j >> 3] |= 1 << (j & 7)
        return cls(bytes(array), hashes)

    def __contains__(self, key: str) -> bool:
        return all(
            self.bits[j >> 3] >> (j & 7) & 1 for j in held_filter_probes(key, 8 * len(self.bits), self.hashes)
        )

    def to_wire(self) -> dict[str, Any]:
        return {"bits": bytes(self.bits), "hashes": self.hashes}

    @classmethod
    def parse(cls, f: FieldReader) -> Self:
        return cls(
            bits=f.get("bits", _check_filter_bits), hashes=f.get("hashes", check_int, 1, MAX_HELD_HASHES)
        )


@dataclass(frozen=True)
class ResultSyncRequest(Message):
    """Ask for a topic's results after `cursor` (0: from the beginning), at most `limit` of them; with
    `held`, a Bloom filter of the URLs the asker holds already, which the provider may leave out."""

    TYPE: ClassVar[str] = "result_sync_request"
    MAX_FRAME: ClassVar[int] = 16 * KIB + MAX_HELD_FILTER_BYTES
    topic: str
    cursor: int = 0
    limit: int = MAX_RESULTS
    held: HeldFilter | None = None

    def body(self) -> dict[str, Any]:
        body = {"topic": self.topic, "cursor": self.cursor, "limit": self.limit}
        if self.held is not None:
            body["held"] = self.held.to_wire()
        return body

    @classmethod
    def parse(cls, f: FieldReader) -> Self:
        return cls(
            topic=f.get("topic", check_topic),
            cursor=f.get("cursor", check_int, 0, MAX_CURSOR),
            limit=f.get("limit", check_int, 1, MAX_RESULTS),
            held=f.optional("held", record_check(HeldFilter)),
        )


@dataclass(frozen=True)
class ResultSyncResponse(Message):
    """Results after the request's cursor; ask again from `next_cursor` while `more` is true."""

    TYPE: ClassVar[str] = "result_sync_response"
    MAX_FRAME: ClassVar[int] = 4 * MIB
    topic: str
    items: tuple[SignedResult, ...]
    next_cursor: int
    more: bool = False

    def body(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "items": [item.to_wire() for item in self.items],
            "next_cursor": self.next_cursor,
            "more": self.more,
        }

    @classmethod
    def parse(cls, f: FieldReader) -> Self:
        topic = f.get("topic", check_topic)
        items = f.get("items", check_seq, MAX_RESULTS, record_check(SignedResult))
        # an item carries the topic or the subtopic of it its crawler filed it in
        if any(i.result.topic != topic and not i.result.topic.startswith(topic + "/") for i in items):
            raise fail(
                "bad_value",
                "result_sync_response.items",
                "an item belongs to a topic outside the one asked for",
            )
        return cls(
            topic=topic,
            items=items,
            next_cursor=f.get("next_cursor", check_int, 0, MAX_CURSOR),
            more=f.get("more", check_bool),
        )
