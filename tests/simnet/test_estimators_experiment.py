"""The estimators experiment's peer-count validation and its check of each formula against its own law."""

import math

import numpy as np
import pytest

from metamodels.estimators import chain_estimate, exchangeable_agreement, peers_needed
from simnet.experiments.estimators import (
    largest_count_within,
    measured_curve,
    predicted_count,
    simulated_agreement,
    smallest_count_within,
)


def test_smallest_count_meeting_an_error_goal_skips_undecided_counts():
    assert smallest_count_within(np.array([0.2, math.nan, 0.05, 0.01]), 0.05) == 3
    assert smallest_count_within(np.array([0.2, 0.1]), 0.05) is None


def test_largest_count_within_a_loss_bound_stops_at_the_first_excess():
    assert largest_count_within(np.array([0.0, 0.1, 0.25, 0.2]), 0.2) == 2
    assert largest_count_within(np.array([0.3, 0.1]), 0.2) is None
    assert largest_count_within(np.array([0.0, 0.1]), 0.2) == 2


def test_measured_curve_of_all_models_is_their_unanimous_decision():
    # three models on three documents (truth +1): all right, split, all wrong
    decisions = np.array([[1, 1, 1], [1, -1, 1], [-1, -1, -1]])
    truth = np.array([1, 1, 1])
    losses, errors = measured_curve(decisions, truth, subsets=4, rng=np.random.default_rng(0))
    assert losses[2] == pytest.approx(1 / 3) and errors[2] == pytest.approx(0.5)
    # a single model never abstains
    assert losses[0] == 0.0


def test_predicted_count_is_the_nodes_peer_estimate():
    assert predicted_count(0.8, 0.04, "error", 0.02, "exchangeable", 16) == (
        peers_needed(0.8, 0.04, max_error=0.02, max_peers=16).peers
    )
    assert predicted_count(0.8, 0.04, "loss", 0.3, "chain", 16) == (
        peers_needed(0.8, 0.04, max_loss=0.3, max_peers=16, model="chain").peers
    )
    assert predicted_count(0.6, 0.1, "error", 0.001, "exchangeable", 4) is None


def test_each_formula_matches_the_law_it_assumes_and_the_chain_misses_exchangeable_models():
    rng = np.random.default_rng(3)
    p, cov, k = 0.9, 0.02, 8
    markov = simulated_agreement(p, cov, k, "markov", rng)
    exchangeable = simulated_agreement(p, cov, k, "exchangeable", rng)
    chain_agree = 1 - chain_estimate([p] * k, cov).loss
    exchangeable_agree = 1 - exchangeable_agreement(p, cov, k).loss
    assert markov == pytest.approx(chain_agree, abs=0.01)
    assert exchangeable == pytest.approx(exchangeable_agree, abs=0.01)
    assert exchangeable - chain_agree > 0.1
