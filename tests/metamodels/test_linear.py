from __future__ import annotations

import json

import msgpack
import numpy as np
import pytest

from metamodels.errors import FeatureSpaceMismatch, ModelFormatError, TrainingDataError
from metamodels.features import FeatureConfig, Featurizer
from metamodels.linear import LinearModel, train_linear_svm

CFG = FeatureConfig(n_features=2**14)
SPACE = ["orbit shuttle launch rocket nasa", "moon orbit lunar lander apollo", "rocket launch pad satellite"]
CARS = ["engine car wheel brake", "car dealer price engine oil", "brake pedal tyre car wheel"]


@pytest.fixture(scope="module")
def model_and_features():
    fz = Featurizer(CFG)
    X = fz.transform(SPACE + CARS)
    y = np.array([1, 1, 1, 0, 0, 0])
    return train_linear_svm(X, y, C=1.0, config=CFG, training_ids=[f"d{i}" for i in range(6)]), fz, X


def test_svm_separates_training_documents(model_and_features):
    model, _, X = model_and_features
    assert (model.decision_function(X)[:3] > 0).all()
    assert (model.decision_function(X)[3:] < 0).all()


def test_confidence_is_decision_divided_by_mean_positive_training_score(model_and_features):
    model, _, X = model_and_features
    decisions = model.decision_function(X)
    assert model.calibration.scale == pytest.approx(decisions[:3].mean())
    assert model.confidence(X) == pytest.approx(decisions / decisions[:3].mean())
    assert model.calibration.n_positive == 3
    assert model.calibration.n_negative == 3


def test_unseen_text_is_scored_by_its_terms(model_and_features):
    model, fz, _ = model_and_features
    conf = model.confidence(fz.transform(["the rocket reached orbit", "a new car engine"]))
    assert conf[0] > 0 > conf[1]


@pytest.mark.parametrize("codec", ["msgpack", "none"])
def test_model_round_trip_is_exact(model_and_features, codec):
    model, _, X = model_and_features
    data = model.to_dict()
    if codec == "msgpack":
        data = msgpack.unpackb(msgpack.packb(data))
    loaded = LinearModel.from_dict(data)
    assert loaded == model
    assert loaded.to_dict() == model.to_dict()
    assert np.array_equal(loaded.decision_function(X), model.decision_function(X))
    assert loaded.training_ids == tuple(f"d{i}" for i in range(6))


def test_scalar_fields_survive_json(model_and_features):
    model, _, _ = model_and_features
    data = model.to_dict()
    scalars = {k: v for k, v in data.items() if not isinstance(v, bytes)}
    assert json.loads(json.dumps(scalars)) == scalars


def test_feature_restriction_keeps_weights_inside_the_selected_space():
    fz = Featurizer(CFG)
    X = fz.transform(SPACE + CARS)
    selected = np.array(sorted({fz.feature_of(t)[0] for t in ("orbit", "rocket", "car", "engin")}))
    model = train_linear_svm(X, np.array([1, 1, 1, 0, 0, 0]), config=CFG, features=selected)
    assert set(model.indices.tolist()) <= set(selected.tolist())
    assert model.n_weights > 0


def test_training_needs_both_classes():
    X = Featurizer(CFG).transform(SPACE)
    with pytest.raises(TrainingDataError, match="positive and negative"):
        train_linear_svm(X, np.array([1, 1, 1]), config=CFG)


def test_features_of_another_width_are_refused(model_and_features):
    model, _, _ = model_and_features
    with pytest.raises(FeatureSpaceMismatch):
        model.decision_function(Featurizer(FeatureConfig(n_features=2**10)).transform(["orbit"]))


def _corrupt(data, **changes):
    return {**data, **changes}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"kind": "tree"}, "not a linear model"),
        ({"version": 7}, "version 7"),
        ({"bias": float("nan")}, "bias must be a finite number"),
        ({"bias": "0.5"}, "bias must be a finite number"),
        ({"weights": b"\x00\x00\x80\x7f"}, "equal length|finite"),
        ({"indices": b"\x01\x02\x03"}, "not a multiple of 4"),
        ({"indices": [1, 2]}, "must be bytes"),
        ({"feature_config": {"n_features": 5}}, "FeatureConfig lacks fields"),
        ({"training_ids": [1, 2]}, "training_ids"),
    ],
)
def test_malformed_model_dicts_are_refused(model_and_features, changes, message):
    model, _, _ = model_and_features
    with pytest.raises(ModelFormatError, match=message):
        LinearModel.from_dict(_corrupt(model.to_dict(), **changes))


def test_non_finite_weights_and_out_of_space_indices_are_refused(model_and_features):
    model, _, _ = model_and_features
    data = model.to_dict()
    weights = np.frombuffer(data["weights"], dtype="<f4").copy()
    weights[0] = np.inf
    with pytest.raises(ModelFormatError, match="weights must be finite"):
        LinearModel.from_dict(_corrupt(data, weights=weights.tobytes()))
    indices = np.frombuffer(data["indices"], dtype="<i4").copy()
    indices[-1] = CFG.n_features
    with pytest.raises(ModelFormatError, match="must lie in"):
        LinearModel.from_dict(_corrupt(data, indices=indices.tobytes()))
    with pytest.raises(ModelFormatError, match="strictly increasing"):
        LinearModel.from_dict(_corrupt(data, indices=indices[::-1].copy().tobytes()))


def test_calibration_scale_must_be_positive(model_and_features):
    model, _, _ = model_and_features
    data = model.to_dict()
    with pytest.raises(ModelFormatError, match="scale must be positive"):
        LinearModel.from_dict(_corrupt(data, calibration={**data["calibration"], "scale": 0.0}))
