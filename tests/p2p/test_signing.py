"""Signatures: bound to the origin's peer id, topic, version and every payload byte."""

from __future__ import annotations

import dataclasses

import pytest

from p2p.codec import decode_frame, encode_frame
from p2p.errors import WireError
from p2p.messages.models import ModelResponse
from p2p.messages.results import ResultSyncResponse
from p2p.signing import (
    MODEL_DOMAIN,
    canonical_bytes,
    peer_id_from_public_key,
    public_key_from_peer_id,
    sign_model,
    sign_payload,
    sign_result,
    verify_model,
    verify_payload,
    verify_result,
)
from p2p.wire_testing import sample_model, sample_result, wire_key


def test_peer_id_matches_libp2p():
    from libp2p.crypto.ed25519 import create_new_key_pair
    from libp2p.peer.id import ID

    pair = create_new_key_pair(b"\x07" * 32)
    expected = ID.from_pubkey(pair.public_key).to_base58()
    assert peer_id_from_public_key(pair.public_key.to_bytes()) == expected
    assert public_key_from_peer_id(expected) == pair.public_key.to_bytes()


def test_libp2p_private_key_signs_models_that_verify():
    from libp2p.crypto.ed25519 import create_new_key_pair
    from libp2p.peer.id import ID

    pair = create_new_key_pair(b"\x09" * 32)
    origin = ID.from_pubkey(pair.public_key).to_base58()
    payload = dataclasses.replace(sample_model(wire_key(1)), origin=origin)
    signed = sign_model(pair.private_key, payload)
    assert verify_model(signed) == payload


def test_model_signature_survives_the_wire():
    key = wire_key(1)
    signed = sign_model(key, sample_model(key, sparse=True))
    frame = encode_frame(ModelResponse(topic="databases", model=signed))
    received = decode_frame(frame[4:], ModelResponse)
    assert verify_model(received.model) == signed.payload


def test_result_signatures_survive_the_wire():
    key = wire_key(2)
    items = tuple(sign_result(key, sample_result(key, n=n)) for n in range(3))
    frame = encode_frame(ResultSyncResponse(topic="databases", items=items, next_cursor=3))
    received = decode_frame(frame[4:], ResultSyncResponse)
    assert [verify_result(item) for item in received.items] == [item.result for item in items]


@pytest.mark.parametrize(
    "change",
    [
        {"version": 2},
        {"topic": "other"},
        {"biases": (0.51,)},
        {"created": 1.0},
        {"training_doc_ids": ("doc-0",)},
        {"feature_config": {"n_features": 64, "stem": False, "ngrams": (1, 2), "language": "english"}},
    ],
)
def test_tampered_model_fails(change):
    key = wire_key(1)
    signed = sign_model(key, sample_model(key))
    tampered = dataclasses.replace(signed, payload=dataclasses.replace(signed.payload, **change))
    with pytest.raises(WireError) as info:
        verify_model(tampered)
    assert info.value.reason == "bad_signature"


def test_tampered_weight_byte_fails():
    key = wire_key(1)
    signed = sign_model(key, sample_model(key))
    weights = bytearray(signed.payload.weights)
    weights[0] ^= 1
    tampered = dataclasses.replace(
        signed, payload=dataclasses.replace(signed.payload, weights=bytes(weights))
    )
    with pytest.raises(WireError, match="bad_signature"):
        verify_model(tampered)


def test_model_replayed_under_another_origin_fails():
    honest, thief = wire_key(1), wire_key(2)
    signed = sign_model(honest, sample_model(honest))
    replayed = dataclasses.replace(signed, payload=dataclasses.replace(signed.payload, origin=thief.peer_id))
    with pytest.raises(WireError) as info:
        verify_model(replayed)
    assert info.value.reason == "bad_signature"


def test_result_replayed_under_another_origin_fails():
    honest, thief = wire_key(1), wire_key(2)
    item = sign_result(honest, sample_result(honest))
    replayed = dataclasses.replace(item, result=dataclasses.replace(item.result, origin=thief.peer_id))
    with pytest.raises(WireError, match="bad_signature"):
        verify_result(replayed)


def test_model_signature_is_not_valid_for_a_result():
    key = wire_key(1)
    payload = {"x": 1}
    signature = sign_payload(key, MODEL_DOMAIN, key.peer_id, "t", 1, payload)
    with pytest.raises(WireError, match="bad_signature"):
        verify_payload("topicswarm/result/1", key.peer_id, "t", 1, payload, signature)


def test_signer_cannot_claim_another_origin():
    with pytest.raises(ValueError, match="not this key's peer id"):
        sign_model(wire_key(1), sample_model(wire_key(2)))


def test_forged_signature_fails():
    key = wire_key(1)
    signed = sign_model(key, sample_model(key))
    with pytest.raises(WireError, match="bad_signature"):
        verify_model(dataclasses.replace(signed, signature=b"\x00" * 64))


def test_sha256_peer_id_origin_cannot_be_verified():
    with pytest.raises(WireError) as info:
        verify_payload("d", "QmYyQSo1c1Ym7orWxLYvCrM2EmxFTANf8wXmmE7DWjhx5N", "t", 1, {}, b"\x00" * 64)
    assert info.value.reason == "unverifiable_origin"


def test_canonical_bytes_ignore_key_order():
    origin = wire_key(1).peer_id
    assert canonical_bytes("d", origin, "t", 1, {"a": 1, "b": {"y": 2, "x": 3}}) == canonical_bytes(
        "d", origin, "t", 1, {"b": {"x": 3, "y": 2}, "a": 1}
    )


@pytest.mark.parametrize(
    ("item_topic", "kept"),
    [("databases", True), ("databases/sql", True), ("databases2", False), ("mathematics", False)],
)
def test_a_result_sync_carries_the_topic_asked_for_or_a_subtopic_of_it(item_topic, kept):
    key = wire_key(2)
    items = (sign_result(key, sample_result(key, topic=item_topic)),)

    def received() -> ResultSyncResponse:
        frame = encode_frame(ResultSyncResponse(topic="databases", items=items, next_cursor=1))
        return decode_frame(frame[4:], ResultSyncResponse)

    if kept:
        assert received().items[0].result.topic == item_topic
    else:
        with pytest.raises(WireError, match="outside the one asked for"):
            received()
