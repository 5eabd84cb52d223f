"""Ed25519 signatures over models and crawl results, bound to their origin peer.

A libp2p Ed25519 peer id *is* the public key (an identity multihash of the protobuf-serialised key), so a
receiver verifies a signature with the key taken from the claimed origin's peer id: the signature proves
the origin, and a message replayed under another origin fails. The signed bytes are a canonical msgpack
encoding (maps with sorted keys) of a domain tag, the origin, the topic, the version and the payload.

Keys are libp2p's (`libp2p.crypto.ed25519.Ed25519PrivateKey`, as `p2p.identity` loads them) or anything
with the same `sign(data)` / `get_public_key().to_bytes()` shape; verification needs only PyNaCl, so
this module does not import libp2p (slow to import).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Protocol

import base58
from nacl.exceptions import BadSignatureError, CryptoError
from nacl.signing import SigningKey, VerifyKey

from p2p.codec import pack
from p2p.errors import WireError
from p2p.message_limits import SIGNATURE_LEN
from p2p.messages.models import ModelPayload, SignedModel
from p2p.messages.results import CrawlResult, SignedResult
from p2p.value_checks import check_peer_id

__all__ = [
    "LocalEd25519Key",
    "canonical_bytes",
    "peer_id_from_public_key",
    "public_key_from_peer_id",
    "sign_model",
    "sign_payload",
    "sign_result",
    "sign_results",
    "verify_model",
    "verify_payload",
    "verify_result",
]

_ED25519_ID_PREFIX = bytes([0x00, 0x24, 0x08, 0x01, 0x12, 0x20])
"""identity multihash (0x00, 36 bytes) of a libp2p PublicKey protobuf: KeyType Ed25519 (0x08 0x01) and
32 key bytes (0x12 0x20)."""
MODEL_DOMAIN = "topicswarm/model/1"
RESULT_DOMAIN = "topicswarm/result/1"


class PublicKeyLike(Protocol):
    def to_bytes(self) -> bytes: ...


class PrivateKeyLike(Protocol):
    def sign(self, data: bytes) -> bytes: ...

    def get_public_key(self) -> PublicKeyLike: ...


class LocalEd25519Key:
    """A libp2p-shaped Ed25519 private key on PyNaCl, for tools and tests that do not start a host."""

    def __init__(self, seed: bytes | None = None) -> None:
        self._key = SigningKey(seed) if seed is not None else SigningKey.generate()

    def sign(self, data: bytes) -> bytes:
        return self._key.sign(data).signature

    def get_public_key(self) -> _RawPublicKey:
        return _RawPublicKey(bytes(self._key.verify_key))

    @property
    def peer_id(self) -> str:
        return peer_id_from_public_key(self.get_public_key().to_bytes())


@dataclasses.dataclass(frozen=True)
class _RawPublicKey:
    raw: bytes

    def to_bytes(self) -> bytes:
        return self.raw


def peer_id_from_public_key(raw_key: bytes) -> str:
    """The libp2p peer id (base58, "12D3KooW...") of a raw 32-byte Ed25519 public key."""
    if len(raw_key) != 32:
        raise ValueError(f"an Ed25519 public key has 32 bytes, got {len(raw_key)}")
    return base58.b58encode(_ED25519_ID_PREFIX + raw_key).decode("ascii")


def public_key_from_peer_id(peer_id: str) -> bytes:
    """The raw Ed25519 key inside a peer id; `WireError("unverifiable_origin")` for other key types."""
    check_peer_id(peer_id, "origin")
    raw = base58.b58decode(peer_id)
    if len(raw) != len(_ED25519_ID_PREFIX) + 32 or not raw.startswith(_ED25519_ID_PREFIX):
        raise WireError("unverifiable_origin", f"origin {peer_id[:16]}... is not an Ed25519 peer id")
    return raw[len(_ED25519_ID_PREFIX) :]


def _canonical(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _canonical(value[key]) for key in sorted(value)}
    if isinstance(value, list | tuple):
        return [_canonical(item) for item in value]
    return value


def canonical_bytes(domain: str, origin: str, topic: str, version: int, payload: Mapping[str, Any]) -> bytes:
    """The exact bytes that are signed: the binding fields first, then the payload with sorted keys."""
    return pack(_canonical([domain, origin, topic, version, payload]))


def sign_payload(
    key: PrivateKeyLike, domain: str, origin: str, topic: str, version: int, payload: Mapping[str, Any]
) -> bytes:
    """Signs as `origin`, which must be the key's own peer id (a node cannot sign for another)."""
    own_id = peer_id_from_public_key(key.get_public_key().to_bytes())
    if origin != own_id:
        raise ValueError(f"origin {origin} is not this key's peer id {own_id}")
    return key.sign(canonical_bytes(domain, origin, topic, version, payload))


def verify_payload(
    domain: str, origin: str, topic: str, version: int, payload: Mapping[str, Any], signature: bytes
) -> None:
    """Raises `WireError` unless `signature` is the origin's over exactly these fields."""
    if len(signature) != SIGNATURE_LEN:
        raise WireError("bad_signature", f"signature has {len(signature)} bytes, expected {SIGNATURE_LEN}")
    raw_key = public_key_from_peer_id(origin)
    try:
        VerifyKey(raw_key).verify(canonical_bytes(domain, origin, topic, version, payload), signature)
    except (BadSignatureError, CryptoError, ValueError, TypeError):
        raise WireError("bad_signature", f"signature does not match origin {origin[:16]}...") from None


def sign_model(key: PrivateKeyLike, payload: ModelPayload) -> SignedModel:
    signature = sign_payload(
        key, MODEL_DOMAIN, payload.origin, payload.topic, payload.version, payload.to_wire()
    )
    return SignedModel(payload=payload, signature=signature)


def verify_model(model: SignedModel) -> ModelPayload:
    """The payload, once its signature by `payload.origin` has been checked."""
    payload = model.payload
    verify_payload(
        MODEL_DOMAIN, payload.origin, payload.topic, payload.version, payload.to_wire(), model.signature
    )
    return payload


def _result_version(result: CrawlResult) -> int:
    # Results have no model version; the fetch time (microseconds) plays its part in the binding.
    return round(result.fetched_at * 1_000_000)


def sign_result(key: PrivateKeyLike, result: CrawlResult) -> SignedResult:
    signature = sign_payload(
        key, RESULT_DOMAIN, result.origin, result.topic, _result_version(result), result.to_wire()
    )
    return SignedResult(result=result, signature=signature)


def sign_results(
    key: PrivateKeyLike, results: list[CrawlResult] | tuple[CrawlResult, ...]
) -> tuple[SignedResult, ...]:
    """Signs a batch item by item, so any item stays verifiable on its own after a cursor-based sync."""
    return tuple(sign_result(key, result) for result in results)


def verify_result(item: SignedResult) -> CrawlResult:
    result = item.result
    verify_payload(
        RESULT_DOMAIN, result.origin, result.topic, _result_version(result), result.to_wire(), item.signature
    )
    return result
