"""Robust weighting and aggregation on cases worked by hand."""

import math

import numpy as np
import pytest

from metamodels.robust import (
    RobustSettings,
    accuracy_weight,
    accuracy_weights,
    robust_combine,
    weighted_median,
    weighted_trimmed_mean,
)


def test_weight_is_log_odds_above_chance():
    assert accuracy_weight(0.75, 20) == pytest.approx(math.log(3))


def test_models_at_or_below_chance_or_barely_tested_get_weight_zero():
    assert accuracy_weight(0.5, 20) == 0.0
    assert accuracy_weight(0.1, 20) == 0.0
    assert accuracy_weight(0.9, 3) == 0.0


def test_perfect_accuracy_is_capped():
    assert accuracy_weight(1.0, 20) == pytest.approx(math.log(99))


def test_weights_from_counts():
    assert accuracy_weights([(15, 20), (2, 20), (0, 0)]) == pytest.approx([math.log(3), 0.0, 0.0])


def test_trimmed_mean_cuts_whole_models_from_each_end():
    # trim 0.2 of 5 equal weights drops 1 and 100: mean(2, 3, 4) = 3
    assert weighted_trimmed_mean([[1, 2, 3, 4, 100]], [1] * 5, 0.2) == pytest.approx([3.0])


def test_trimmed_mean_cuts_partial_weight():
    # trim 0.1: half of 1's and of 100's weight stay: (0.1*1 + 0.2*(2+3+4) + 0.1*100) / 0.8
    assert weighted_trimmed_mean([[1, 2, 3, 4, 100]], [1] * 5, 0.1) == pytest.approx([11.9 / 0.8])


def test_trimmed_mean_without_trim_is_the_weighted_mean():
    assert weighted_trimmed_mean([[1.0, 3.0]], [3, 1], 0.0) == pytest.approx([1.5])


def test_weighted_median():
    assert weighted_median([[100, 1, 4, 3, 2]], [1] * 5) == pytest.approx([3.0])
    assert weighted_median([[1, 2, 3, 4, 100]], [0, 0, 0, 1, 1]) == pytest.approx([4.0])


def test_no_weight_means_no_evidence():
    assert robust_combine(np.array([[1.0, -2.0]]), [0.0, 0.0]).tolist() == [0.0]


def test_a_hostile_minority_with_huge_scores_cannot_flip_the_trimmed_mean():
    honest = np.full((1, 12), 0.4)
    hostile = np.full((1, 4), -1000.0)
    confidences = np.hstack([honest, hostile])
    assert float(np.mean(confidences)) < 0
    assert robust_combine(confidences, np.ones(16), RobustSettings(trim=0.25))[0] > 0
