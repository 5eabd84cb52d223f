"""Balanced accuracies from agreement with a reference model on unlabelled documents; the log-odds mean."""

import math

import numpy as np
import pytest

from metamodels.robust import RobustSettings, anchored_balanced_accuracies, log_odds_mean, robust_combine


def votes(truth: np.ndarray, sensitivity: float, specificity: float, rng) -> np.ndarray:
    """+1/-1 decisions of a model right on a positive with `sensitivity`, on a negative with `specificity`,
    independently of the other models given the class."""
    right = np.where(truth > 0, rng.random(truth.size) < sensitivity, rng.random(truth.size) < specificity)
    return np.where(right, truth, -truth)


def test_balanced_accuracies_are_recovered_from_agreement_with_a_reference_of_known_accuracy():
    rng = np.random.default_rng(1)
    truth = np.where(rng.random(20000) < 0.3, 1, -1)  # unbalanced classes, as a topic's crawl is
    rates = [(0.9, 0.9), (0.8, 0.85), (0.7, 0.6), (0.6, 0.55)]  # the reference errs alike on both classes
    decisions = np.column_stack([votes(truth, se, sp, rng) for se, sp in rates])
    estimated = anchored_balanced_accuracies(decisions, 0, 0.9)
    assert estimated == pytest.approx([(se + sp) / 2 for se, sp in rates], abs=0.03)


def test_models_sharing_errors_are_not_lifted_by_agreeing_with_each_other():
    rng = np.random.default_rng(2)
    truth = np.where(rng.random(5000) < 0.5, 1, -1)
    reference = votes(truth, 0.95, 0.95, rng)
    blind = np.where(rng.random(truth.size) < 0.5, truth, -1)  # rejects half the positives, always alike
    decisions = np.column_stack([reference, blind, blind])
    estimated = anchored_balanced_accuracies(decisions, 0, 0.95)
    assert estimated[1:] == pytest.approx([0.75, 0.75], abs=0.03)


def test_a_model_voting_against_the_reference_is_estimated_at_chance():
    rng = np.random.default_rng(3)
    truth = np.where(rng.random(3000) < 0.5, 1, -1)
    decisions = np.column_stack([votes(truth, 0.9, 0.9, rng), -votes(truth, 0.9, 0.9, rng)])
    assert anchored_balanced_accuracies(decisions, 0, 0.9)[1] == 0.5


def test_a_reference_at_chance_tells_nothing():
    assert anchored_balanced_accuracies(np.ones((50, 3)), 0, 0.5) is None


def test_estimates_are_capped():
    truth = np.array([1, -1] * 50)
    estimated = anchored_balanced_accuracies(np.column_stack([truth] * 3), 1, 0.9, max_accuracy=0.99)
    assert estimated == pytest.approx([0.99, 0.9, 0.99])


def test_log_odds_mean_of_one_model_is_its_confidence():
    c = np.array([[0.5], [-0.9], [0.0]])
    assert log_odds_mean(c, [2.0]) == pytest.approx(c.ravel())


def test_log_odds_mean_weighs_log_odds_not_confidences():
    # P = 0.9 (log-odds ln 9) and P = 0.25 (log-odds -ln 3), weights 1 and 2: mean log-odds ln(9/9) = 0
    c = np.array([[0.8, -0.5]])
    assert log_odds_mean(c, [1.0, 2.0]) == pytest.approx([0.0])
    # weights 2 and 1: log-odds (2 ln 9 - ln 3) / 3 = ln 3, P = 0.75
    assert log_odds_mean(c, [2.0, 1.0]) == pytest.approx([0.5])


def test_one_saturated_model_cannot_outvote_the_others_beyond_the_cap():
    c = np.array([[1.0, -0.9, -0.9]])  # a steep scaler says P = 1; two others P = 0.05
    cap = math.log(99.0)
    expected = math.tanh(0.5 * (cap - 2 * math.log(19.0)) / 3)
    assert log_odds_mean(c, [1.0, 1.0, 1.0], 0.99) == pytest.approx([expected])
    assert expected < 0


def test_robust_combine_dispatches_the_log_odds_mean_and_no_weight_is_no_evidence():
    c = np.array([[0.8, -0.5]])
    settings = RobustSettings(aggregation="log_odds_mean")
    assert robust_combine(c, [1.0, 2.0], settings) == pytest.approx(log_odds_mean(c, [1.0, 2.0]))
    assert robust_combine(c, [0.0, 0.0], settings).tolist() == [0.0]
