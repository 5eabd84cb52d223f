"""Schemas: every message round-trips; every rule rejects with its reason."""

from __future__ import annotations

import copy
import math
import struct

import numpy as np
import pytest

from p2p.codec import decode_frame, encode_frame, pack
from p2p.errors import WireError
from p2p.message_limits import MAX_NEIGHBOURS, MAX_RESULTS
from p2p.messages.envelope import MESSAGE_TYPES, message_from_wire
from p2p.messages.membership import NeighbourExchange
from p2p.messages.meta_classifier import MetaClassifierOffer
from p2p.messages.models import ModelPayload, ModelRequest, ModelResponse, pack_weights
from p2p.messages.results import ResultSyncRequest
from p2p.signing import sign_model
from p2p.wire_testing import sample_messages, sample_model, wire_key

SAMPLES = list(sample_messages())


def rejects(wire, reason, expected=None):
    with pytest.raises(WireError) as info:
        decode_frame(pack(wire), expected)
    assert info.value.reason == reason, info.value
    return info.value


def model_wire(**changes):
    key = wire_key(1)
    wire = ModelResponse(topic="databases", model=sign_model(key, sample_model(key))).to_wire()
    wire["model"]["payload"].update(changes)
    return wire


def test_every_message_type_has_a_sample():
    assert {type(m).TYPE for m in SAMPLES} == set(MESSAGE_TYPES)


@pytest.mark.parametrize("message", SAMPLES, ids=lambda m: type(m).__name__)
def test_round_trip_through_frame(message):
    frame = encode_frame(message)
    assert decode_frame(frame[4:], type(message)) == message


@pytest.mark.parametrize("message", SAMPLES, ids=lambda m: type(m).__name__)
def test_round_trip_is_byte_stable(message):
    once = encode_frame(message)
    assert encode_frame(decode_frame(once[4:])) == once


def test_sparse_and_dense_weights_give_the_same_matrix():
    key = wire_key(1)
    matrix = np.zeros((2, 50), dtype=np.float32)
    matrix[0, 3] = 1.5
    matrix[1, 49] = -2.0
    sparse = pack_weights(matrix)
    assert sparse["weights"] == b"" and len(sparse["indices"]) == 8
    payload = sample_model(key, kind="centroids", rows=2, n_features=50)
    payload = ModelPayload(**{**payload.__dict__, **sparse})
    assert np.array_equal(payload.weight_matrix(), matrix)
    dense = ModelPayload(**{**payload.__dict__, **pack_weights(np.ones((2, 50)))})
    assert dense.weights and np.array_equal(dense.weight_matrix(), np.ones((2, 50), dtype=np.float32))


def test_expected_type_enforced():
    rejects(ModelRequest(topic="t").to_wire(), "unexpected_type", expected=NeighbourExchange)


def test_unknown_message_type_rejected():
    rejects({"type": "launch_missiles", "version": 1}, "unknown_type")


def test_unknown_version_rejected():
    wire = ModelRequest(topic="t").to_wire()
    wire["version"] = 3
    rejects(wire, "unknown_version")


def test_model_request_without_origin_goes_as_version_1_which_old_peers_parse():
    wire = ModelRequest(topic="t", version=4).to_wire()
    assert wire == {"type": "model_request", "version": 1, "topic": "t", "model_version": 4}
    assert message_from_wire(wire) == ModelRequest("t", 4)


def test_model_request_naming_an_origin_is_version_2_and_round_trips():
    origin = wire_key(2).peer_id
    wire = ModelRequest(topic="t", version=4, origin=origin).to_wire()
    assert wire["version"] == 2 and wire["origin"] == origin
    assert message_from_wire(wire) == ModelRequest("t", 4, origin)


def test_model_request_version_2_without_origin_parses_as_the_peers_own_model():
    wire = {**ModelRequest(topic="t").to_wire(), "version": 2}
    assert message_from_wire(wire) == ModelRequest("t")


def test_origin_in_a_version_1_model_request_is_an_unknown_field():
    wire = {**ModelRequest(topic="t", version=4, origin=wire_key(2).peer_id).to_wire(), "version": 1}
    rejects(wire, "unknown_field")


@pytest.mark.parametrize(("value", "reason"), [("not-a-peer", "bad_peer_id"), (7, "wrong_type")])
def test_model_request_origin_must_be_a_peer_id(value, reason):
    wire = {**ModelRequest(topic="t", version=4, origin=wire_key(2).peer_id).to_wire(), "origin": value}
    rejects(wire, reason)


def test_missing_field_rejected():
    wire = ModelRequest(topic="t").to_wire()
    del wire["topic"]
    rejects(wire, "missing_field")


def test_unknown_field_rejected():
    wire = ModelRequest(topic="t").to_wire()
    wire["extra"] = 1
    rejects(wire, "unknown_field")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("topic", 5),
        ("topic", b"bytes"),
        ("model_version", "7"),
        ("model_version", True),
        ("model_version", 1.0),
    ],
)
def test_wrong_types_rejected(field, value):
    wire = ModelRequest(topic="t").to_wire()
    wire[field] = value
    rejects(wire, "wrong_type")


def test_top_level_must_be_a_map():
    rejects([1, 2, 3], "wrong_type")


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_bias_rejected(value):
    rejects(model_wire(biases=[value]), "non_finite_float")


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_float32_weight_rejected(value):
    weights = np.ones(64, dtype="<f4")
    weights[17] = value
    error = rejects(model_wire(weights=weights.tobytes()), "non_finite_float")
    assert "element 17" in str(error)


def test_non_finite_sparse_value_rejected():
    wire = model_wire(weights=b"", indices=np.array([1, 2], "<u4").tobytes())
    wire["model"]["payload"]["values"] = np.array([1.0, np.nan], "<f4").tobytes()
    rejects(wire, "non_finite_float")


def test_dense_weights_must_match_declared_features():
    rejects(model_wire(weights=np.ones(63, dtype="<f4").tobytes()), "dimension_mismatch")


def test_weights_longer_than_the_feature_space_rejected():
    rejects(model_wire(weights=np.ones(65, dtype="<f4").tobytes()), "too_long")


def test_sparse_index_outside_feature_space_rejected():
    wire = model_wire(weights=b"", indices=np.array([3, 64], "<u4").tobytes())
    wire["model"]["payload"]["values"] = np.ones(2, "<f4").tobytes()
    rejects(wire, "dimension_mismatch")


def test_sparse_indices_must_increase():
    wire = model_wire(weights=b"", indices=np.array([5, 5], "<u4").tobytes())
    wire["model"]["payload"]["values"] = np.ones(2, "<f4").tobytes()
    rejects(wire, "dimension_mismatch")


def test_linear_model_has_one_row():
    rejects(model_wire(rows=2, weights=np.ones(128, dtype="<f4").tobytes()), "dimension_mismatch")


def test_bias_count_must_match_rows():
    rejects(model_wire(biases=[0.1, 0.2]), "dimension_mismatch")


def test_feature_config_needs_n_features():
    rejects(model_wire(feature_config={"stem": True}), "missing_field")


def test_feature_config_rejects_nested_maps():
    rejects(model_wire(feature_config={"n_features": 64, "x": {"a": 1}}), "wrong_type")


def test_model_kind_must_be_known():
    rejects(model_wire(kind="neural"), "bad_value")


def test_model_of_another_topic_rejected():
    wire = model_wire()
    wire["topic"] = "other"
    rejects(wire, "bad_value")


def test_signature_length_checked():
    wire = model_wire()
    wire["model"]["signature"] = b"\x00" * 10
    rejects(wire, "bad_value")


def test_too_many_neighbours_rejected():
    entry = next(m for m in SAMPLES if isinstance(m, NeighbourExchange) and m.entries).to_wire()["entries"][0]
    rejects({"type": "neighbours", "version": 1, "entries": [entry] * (MAX_NEIGHBOURS + 1)}, "too_many_items")


@pytest.mark.parametrize(
    ("peer_id", "reason"),
    [
        ("", "too_short"),
        ("not-base58!", "bad_peer_id"),
        ("0OIl", "bad_peer_id"),
        ("1" * 129, "too_long"),
        ("QmYyQSo1c1Ym7orWxLYvCrM2EmxFTANf8wXmmE7DWjhx5Nx", "bad_peer_id"),
    ],
)
def test_malformed_peer_id_rejected(peer_id, reason):
    wire = NeighbourExchange(entries=()).to_wire()
    wire["entries"] = [{"peer_id": peer_id, "addrs": [], "last_contact": 1.0}]
    rejects(wire, reason)


def test_sha256_peer_id_is_well_formed():
    wire = NeighbourExchange(entries=()).to_wire()
    wire["entries"] = [
        {
            "peer_id": "QmYyQSo1c1Ym7orWxLYvCrM2EmxFTANf8wXmmE7DWjhx5N",
            "addrs": ["/ip4/1.2.3.4/tcp/1"],
            "last_contact": 1,
        }
    ]
    assert decode_frame(pack(wire)).entries[0].last_contact == 1.0


@pytest.mark.parametrize("addr", ["ip4/1.2.3.4", "/ip4/1.2.3.4 /tcp/1", "//", "/" + "a" * 300])
def test_bad_multiaddr_rejected(addr):
    wire = copy.deepcopy(SAMPLES[0].to_wire())
    wire["entries"][0]["addrs"] = [addr]
    with pytest.raises(WireError):
        decode_frame(pack(wire))


def result_wire(**changes):
    wire = next(m for m in SAMPLES if type(m).TYPE == "result_sync_response" and m.items).to_wire()
    wire["items"][0]["result"].update(changes)
    return wire


@pytest.mark.parametrize(
    "url",
    ["javascript:alert(1)", "ftp://x/y", "http://", "http://a b/", "/relative", "http://x/" + "a" * 2048],
)
def test_bad_result_url_rejected(url):
    with pytest.raises(WireError) as info:
        decode_frame(pack(result_wire(url=url)))
    assert info.value.reason in {"bad_url", "too_long"}


def test_overlong_preview_rejected():
    rejects(result_wire(preview="x" * 5000), "too_long")


def test_result_of_another_topic_rejected():
    rejects(result_wire(topic="other"), "bad_value")


def test_result_limit_capped():
    wire = ResultSyncRequest(topic="t").to_wire()
    wire["limit"] = MAX_RESULTS + 1
    rejects(wire, "out_of_range")


def test_topic_with_control_characters_rejected():
    rejects(ModelRequest(topic="a\x00b").to_wire(), "bad_topic")


def test_cross_validation_errors_cannot_exceed_tests():
    wire = next(m for m in SAMPLES if type(m).TYPE == "meta_cv").to_wire()
    wire["entries"][0]["errors"] = wire["entries"][0]["tested"] + 1
    rejects(wire, "bad_value")


def test_covariance_outside_bernoulli_bound_rejected():
    wire = next(m for m in SAMPLES if type(m).TYPE == "meta_cov").to_wire()
    wire["entries"][0]["covariance"] = 0.3
    rejects(wire, "out_of_range")


def test_meta_request_goal_loss_is_a_fraction():
    wire = next(m for m in SAMPLES if type(m).TYPE == "meta_request").to_wire()
    wire["goal_loss"] = 1.5
    rejects(wire, "out_of_range")


def test_meta_model_needs_meta_parameters():
    wire = next(m for m in SAMPLES if type(m).TYPE == "model_response" and m.model and m.model.payload.meta)
    wire = wire.to_wire()
    del wire["model"]["payload"]["meta"]
    rejects(wire, "bad_value")


def test_frame_header_is_consistent_for_large_model():
    key = wire_key(1)
    big = ModelResponse(topic="databases", model=sign_model(key, sample_model(key, n_features=2**18)))
    frame = encode_frame(big)
    assert struct.unpack(">I", frame[:4])[0] == len(frame) - 4
    assert len(pack(big.to_wire())) > 2**20
    assert decode_frame(frame[4:]).model.payload.n_features == 2**18


def test_model_extra_round_trips_and_rejects_non_finite_numbers():
    wire = model_wire()
    assert decode_frame(pack(wire)).model.payload.extra["calibration"]["scale"] == 1.25
    wire["model"]["payload"]["extra"]["calibration"]["scale"] = math.nan
    rejects(wire, "non_finite_float")


def test_model_extra_nests_one_level_only():
    rejects(model_wire(extra={"a": {"b": {"c": 1}}}), "wrong_type")


@pytest.mark.parametrize("extra", [[1, 2], b"x", 5])
def test_model_extra_must_be_a_map(extra):
    rejects(model_wire(extra=extra), "wrong_type")


def test_meta_offer_needs_a_model_or_the_version_it_references():
    rejects({"type": "meta_offer", "version": 1, "session": "s-1"}, "missing_field")


def test_meta_offer_version_must_match_its_model():
    key = wire_key(2)
    wire = MetaClassifierOffer(session="s-1", model=sign_model(key, sample_model(key))).to_wire()
    wire["model_version"] += 1
    rejects(wire, "bad_value")


def test_meta_offer_by_reference_is_a_small_frame():
    key = wire_key(2)
    full = encode_frame(MetaClassifierOffer(session="s-1", model=sign_model(key, sample_model(key))))
    by_reference = encode_frame(MetaClassifierOffer(session="s-1", model=None, model_version=1))
    assert len(by_reference) < 64 < len(full)


def test_a_peers_text_is_shown_without_terminal_escapes_or_direction_overrides():
    from p2p.value_checks import shown_text

    assert shown_text("txt\x1b[2J\x1b]0;owned\x07\u202eexe.txt") == "txt [2J ]0;owned  exe.txt"
    assert shown_text("line\nnext\tcell") == "line\nnext\tcell"
