"""Platt scaling on cases worked by hand."""

import math

import numpy as np
import pytest

from metamodels.calibration import PlattScaler, fit_platt
from metamodels.errors import ModelFormatError


def test_symmetric_separable_scores_fit_platts_smoothed_targets_exactly():
    # 2 positives, 2 negatives: targets 3/4 and 1/4; 1 / (1 + exp(a)) = 3/4 at s = 1 gives a = -ln 3, b = 0
    scaler = fit_platt([-1.0, -1.0, 1.0, 1.0], [0, 0, 1, 1])
    assert scaler.a == pytest.approx(-math.log(3), abs=1e-4)
    assert scaler.b == pytest.approx(0.0, abs=1e-4)
    assert scaler.probability([1.0])[0] == pytest.approx(0.75, abs=1e-4)


def test_a_model_whose_scores_point_the_wrong_way_gets_a_positive_slope():
    scaler = fit_platt([-1.0, -1.0, 1.0, 1.0], [1, 1, -1, -1])
    assert scaler.a == pytest.approx(math.log(3), abs=1e-4)


def test_calibrated_confidence_is_signed_and_bounded():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    scores = 50.0 * (2 * y - 1) + rng.normal(0, 60.0, 200)  # an inflated scale
    scaler = fit_platt(scores, y)
    confidences = scaler.confidence(np.array([-1000.0, 0.0, 1000.0]))
    assert confidences[0] < 0 < confidences[2]
    assert np.all(np.abs(confidences) <= 1.0)


def test_scaler_round_trips_as_plain_data():
    scaler = PlattScaler(a=-2.5, b=0.25)
    assert PlattScaler.from_dict(scaler.to_dict()) == scaler


def test_scaler_from_foreign_data_is_refused():
    with pytest.raises(ModelFormatError):
        PlattScaler.from_dict({"kind": "platt", "version": 1, "a": "nan", "b": 0})
    with pytest.raises(ModelFormatError):
        PlattScaler.from_dict({"kind": "other"})
