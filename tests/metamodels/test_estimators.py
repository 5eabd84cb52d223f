"""Estimators 3.10/3.11 and 3.15-3.19 on cases worked by hand."""

import math

import pytest

from metamodels.errors import MetaInputError
from metamodels.estimators import (
    chain_estimate,
    chain_implied_correlation,
    chain_probability,
    correctness_correlation,
    correctness_covariance,
    cross_accuracy,
    equal_error,
    equal_loss,
    exchangeable_agreement,
    held_out_accuracy,
    meta_estimate,
    peers_needed,
    robust_cross_accuracy,
)


def test_chain_for_two_models_is_product_plus_covariance():
    # P(both right) = 0.8 * (0.64 + 0.04) / 0.8 = 0.68; P(both wrong) = 0.2 * (0.04 + 0.04) / 0.2 = 0.08
    assert chain_probability([0.8, 0.8], 0.04) == pytest.approx(0.68)
    estimate = chain_estimate([0.8, 0.8], 0.04)
    assert estimate.loss == pytest.approx(1 - 0.76)
    assert estimate.error == pytest.approx(0.08 / 0.76)
    assert estimate.accuracy == pytest.approx(0.68 / 0.76)


def test_chain_with_unequal_accuracies():
    # P1 = 0.9 * (0.72+0.02)/0.9 * (0.56+0.02)/0.8 = 0.74 * 0.725 = 0.5365
    # P0 = 0.1 * (0.02+0.02)/0.1 * (0.06+0.02)/0.2 = 0.04 * 0.4 = 0.016
    estimate = chain_estimate([0.9, 0.8, 0.7], 0.02)
    assert estimate.loss == pytest.approx(1 - 0.5525)
    assert estimate.error == pytest.approx(0.016 / 0.5525)


def test_closed_forms_equal_the_chain_for_equal_models():
    for n in (1, 2, 5, 16):
        estimate = chain_estimate([0.75] * n, 0.03)
        assert equal_loss(0.25, 0.03, n) == pytest.approx(estimate.loss)
        assert equal_error(0.25, 0.03, n) == pytest.approx(estimate.error)


def test_more_independent_models_lower_error_and_raise_loss():
    losses = [equal_loss(0.2, 0.0, n) for n in (1, 2, 4, 8)]
    errors = [equal_error(0.2, 0.0, n) for n in (1, 2, 4, 8)]
    assert losses == sorted(losses) and errors == sorted(errors, reverse=True)
    assert errors[1] == pytest.approx(0.04 / 0.68)


def test_covariance_is_the_population_form():
    # E[ab] = 0.25, E[a] = 0.5, E[b] = 0.25 -> 0.125, so P(both) = 0.5 * 0.25 + 0.125 exactly
    assert correctness_covariance([1, 1, 0, 0], [1, 0, 0, 0]) == pytest.approx(0.125)


def test_held_out_accuracy_skips_the_models_training_documents():
    counts = held_out_accuracy([1, 1, -1, -1], [1, -1, 1, -1], ["a", "b", "c", "d"], {"b"})
    assert counts == (2, 3)


def test_cross_accuracy_averages_holders_and_skips_empty_ones():
    assert cross_accuracy([(2, 3), (3, 4), (0, 0)]) == pytest.approx((2 / 3 + 3 / 4) / 2)
    with pytest.raises(MetaInputError):
        cross_accuracy([(0, 0)])


def test_peers_needed_for_an_error_goal_is_the_fewest_that_meet_it():
    # independent models at 0.8: error 0.2, 0.04/0.68 = 0.059, 0.008/0.52 = 0.0154
    estimate = peers_needed(0.8, 0.0, max_error=0.05)
    assert estimate.peers == 3
    assert estimate.loss == pytest.approx(0.48)


def test_peers_needed_for_a_loss_bound_is_the_most_within_it():
    # loss 0, 0.32, 0.48 for 1, 2, 3 peers
    assert peers_needed(0.8, 0.0, max_loss=0.4).peers == 2


def test_peers_needed_returns_none_when_the_goal_is_out_of_reach():
    assert peers_needed(0.8, 0.0, max_error=0.01, max_loss=0.3) is None


def test_exchangeable_model_matches_chain_for_two_and_decays_slower_after():
    # Beta(2.4, 0.6): E[q^2] = 2.4*3.4/(3*4) = 0.68 = chain; E[q^3] = 0.68 * 4.4/5 = 0.5984 > 0.8*0.85^2
    two = exchangeable_agreement(0.8, 0.04, 2)
    assert two.loss == pytest.approx(chain_estimate([0.8, 0.8], 0.04).loss)
    three = exchangeable_agreement(0.8, 0.04, 3)
    wrong3 = 0.6 * 1.6 * 2.6 / (3 * 4 * 5)
    assert three.loss == pytest.approx(1 - 0.5984 - wrong3)
    assert 1 - three.loss > 1 - chain_estimate([0.8] * 3, 0.04).loss


def test_exchangeable_model_without_covariance_is_independence():
    estimate = exchangeable_agreement(0.7, 0.0, 3)
    assert estimate.loss == pytest.approx(1 - 0.7**3 - 0.3**3)
    assert not math.isnan(estimate.error)


def test_peers_needed_with_the_exchangeable_model_needs_more_peers_for_correlated_models():
    # shared hard documents keep the error up, so the exchangeable model asks for more peers than the chain
    chain = peers_needed(0.8, 0.04, max_error=0.01, model="chain")
    exchangeable = peers_needed(0.8, 0.04, max_error=0.01, model="exchangeable")
    assert exchangeable.peers > chain.peers
    with pytest.raises(MetaInputError):
        peers_needed(0.8, 0.04, max_error=0.01, model="oracle")


def test_robust_cross_accuracy_one_lying_reporter_cannot_lift_a_bad_model():
    honest = {"self": (2, 20), "b": (3, 20)}
    assert robust_cross_accuracy({**honest, "liar": (20, 20)})[0] == pytest.approx(0.15)
    # with two reporters the lower one counts
    assert robust_cross_accuracy({"self": (2, 20), "liar": (20, 20)})[0] == pytest.approx(0.1)
    # and it cannot sink a good model either while honest reporters are the majority
    assert robust_cross_accuracy({"a": (18, 20), "b": (19, 20), "liar": (0, 20)})[0] == pytest.approx(0.9)


def test_robust_cross_accuracy_skips_reporters_with_too_few_documents():
    assert robust_cross_accuracy({"a": (1, 2)}, min_evaluated=3) is None
    assert robust_cross_accuracy({"a": (1, 2), "b": (3, 4)}, min_evaluated=3) == (0.75, 4)


def test_chain_formula_is_the_markov_chain_law():
    # p = 0.8, cov = 0.04: P(right | right) = 0.8 + 0.04/0.8 = 0.85, so P(all 3 right) = 0.8 * 0.85 * 0.85;
    # P(wrong | wrong) = 0.2 + 0.04/0.2 = 0.4, so P(all 3 wrong) = 0.2 * 0.4 * 0.4
    assert chain_probability([0.8] * 3, 0.04) == pytest.approx(0.578)
    assert chain_probability([0.2] * 3, 0.04) == pytest.approx(0.032)


def test_chain_correlation_decays_with_distance():
    # rho = 0.04 / (0.8 * 0.2) = 0.25. Worked through the chain: P(right | wrong) = 0.8 - 0.04/0.2 = 0.6,
    # P(X1 = 1, X3 = 1) = 0.8 * (0.85^2 + 0.15 * 0.6) = 0.65, cov(X1, X3) = 0.65 - 0.64 = 0.01 -> 0.0625
    assert correctness_correlation(0.8, 0.04) == pytest.approx(0.25)
    assert chain_implied_correlation(0.8, 0.04, 1) == pytest.approx(0.25)
    assert chain_implied_correlation(0.8, 0.04, 2) == pytest.approx(0.0625)
    assert chain_implied_correlation(0.8, 0.04, 0) == pytest.approx(1.0)
    assert correctness_correlation(1.0, 0.0) == 0.0
    with pytest.raises(MetaInputError):
        chain_implied_correlation(0.8, 0.04, -1)


def test_meta_estimate_defaults_to_the_exchangeable_model():
    assert meta_estimate(0.8, 0.04, 3) == exchangeable_agreement(0.8, 0.04, 3)
    assert meta_estimate(0.8, 0.04, 3, model="chain") == chain_estimate([0.8] * 3, 0.04)
    with pytest.raises(MetaInputError):
        meta_estimate(0.8, 0.04, 0, model="chain")
    with pytest.raises(MetaInputError):
        meta_estimate(0.8, 0.04, 3, model="oracle")


def test_peers_needed_defaults_to_the_exchangeable_estimate():
    # correlated models: the chain promises error <= 0.01 with fewer peers than the exchangeable model
    default = peers_needed(0.8, 0.04, max_error=0.01, max_peers=200)
    assert default == peers_needed(0.8, 0.04, max_error=0.01, max_peers=200, model="exchangeable")
    assert default != peers_needed(0.8, 0.04, max_error=0.01, max_peers=200, model="chain")
