"""Balanced accuracies from agreement with a reference model on unlabelled documents; the log-odds mean;
peers speaking as one voter, and silenced when weaker than the reference."""

import math

import numpy as np
import pytest

from metamodels.errors import MetaInputError
from metamodels.restrictive import loss_targeted_decisions
from metamodels.robust import (
    RobustSettings,
    accuracy_weight,
    anchored_balanced_accuracies,
    community_as_one_voter,
    log_odds_mean,
    robust_combine,
    silence_weaker_community,
)


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


def test_peers_weigh_together_as_a_typical_one_of_them_and_keep_their_ratios():
    weights = community_as_one_voter([2.0, 1.0, 1.0, 2.0], reference=0)
    assert weights[0] == 2.0
    assert weights[1:].sum() == pytest.approx((1 + 1 + 4) / 4)  # sum(w^2) / sum(w)
    assert weights[1:] / weights[1] == pytest.approx([1.0, 1.0, 2.0])


def test_one_peer_or_none_is_left_as_it_is():
    assert community_as_one_voter([0.5, 3.0], reference=0).tolist() == [0.5, 3.0]
    assert community_as_one_voter([1.5, 0.0, 0.0], reference=0).tolist() == [1.5, 0.0, 0.0]
    assert community_as_one_voter([0.0, 0.0, 2.0], reference=1).tolist() == [0.0, 0.0, 2.0]


@pytest.mark.parametrize("reweigh", [community_as_one_voter, silence_weaker_community])
def test_reweighing_beside_a_reference_rejects_a_missing_reference_and_negative_weights(reweigh):
    with pytest.raises(MetaInputError):
        reweigh([1.0, 1.0], reference=2)
    with pytest.raises(MetaInputError):
        reweigh([1.0, -1.0], reference=0)


def test_copies_of_a_weaker_model_do_not_outvote_a_better_one_when_they_speak_as_one():
    rng = np.random.default_rng(4)
    truth = np.where(rng.random(4000) < 0.4, 1, -1)
    better = votes(truth, 0.9, 0.9, rng)
    weaker = votes(truth, 0.7, 0.7, rng)
    decisions = np.column_stack([better, weaker, weaker, weaker])  # three peers sharing every error
    accuracies = anchored_balanced_accuracies(decisions, 0, 0.9)
    weights = np.array([accuracy_weight(float(a), truth.size) for a in accuracies])
    confidences = 0.8 * decisions

    def accuracy(w):
        return float(np.mean(np.sign(log_odds_mean(confidences, w)) == truth))

    assert accuracy(weights) == pytest.approx(0.7, abs=0.03)  # summed, the copies decide
    assert accuracy(community_as_one_voter(weights, 0)) == pytest.approx(0.9, abs=0.03)


def test_a_community_weighing_less_than_the_reference_gets_no_say():
    assert silence_weaker_community([2.0, 0.5, 1.0], reference=0).tolist() == [2.0, 0.0, 0.0]
    assert silence_weaker_community([0.5, 1.0, 2.0], reference=2).tolist() == [0.0, 0.0, 2.0]


def test_a_community_weighing_at_least_the_reference_keeps_its_weights():
    assert silence_weaker_community([2.0, 1.5, 0.5], reference=0).tolist() == [2.0, 1.5, 0.5]
    assert silence_weaker_community([1.0, 3.0], reference=0).tolist() == [1.0, 3.0]
    assert silence_weaker_community([0.0, 0.0, 0.0], reference=1).tolist() == [0.0, 0.0, 0.0]


def test_a_weaker_community_sharing_the_references_mistakes_would_cost_filtering_accuracy():
    """The reference doubts its mistakes; the weaker community makes the same ones with confidence (and
    others the reference is sure of). Averaged in, the shared mistakes climb out of the dismissed fifth and
    right documents the reference doubted less go in their place; silenced, the community changes nothing."""
    rng = np.random.default_rng(5)
    truth = np.where(rng.random(5000) < 0.4, 1, -1)
    shared = rng.random(truth.size) < 0.1  # the region both are blind to
    own = ~shared & (rng.random(truth.size) < 0.05)  # the community's other mistakes
    reference = np.where(shared, -0.1, np.where(own, 0.9, rng.uniform(0.1, 0.9, truth.size))) * truth
    community = np.where(shared, -0.97, np.where(own, -0.8, 0.8)) * truth
    confidences = np.column_stack([reference, community, community])
    weights = community_as_one_voter(
        [
            accuracy_weight(0.9, truth.size),
            accuracy_weight(0.78, truth.size),
            accuracy_weight(0.78, truth.size),
        ],
        0,
    )

    def filtered_accuracy(scores):
        decisions = loss_targeted_decisions(scores, 0.2)
        kept = decisions != 0
        return float(np.mean(decisions[kept] == truth[kept]))

    alone = filtered_accuracy(reference)
    assert filtered_accuracy(log_odds_mean(confidences, weights)) < alone - 0.05
    assert filtered_accuracy(log_odds_mean(confidences, silence_weaker_community(weights, 0))) == alone
