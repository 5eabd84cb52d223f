"""Restrictive classification (thesis 3.2) on cases worked by hand."""

import math

import numpy as np
import pytest

from metamodels.errors import MetaInputError
from metamodels.restrictive import (
    MISCELLANEOUS,
    accuracy,
    confidence_threshold,
    correct_and_decided,
    dismissed_count,
    error,
    filter_topic_tree,
    loss,
    loss_targeted_decisions,
    rival_margins,
    threshold_accepts,
)


def test_loss_targeted_form_dismisses_the_lowest_absolute_confidences():
    scores = [0.9, -0.1, 0.5, -0.7, 0.05]
    decisions = loss_targeted_decisions(scores, 0.4)  # dismiss 2: |0.05| and |-0.1|
    assert decisions.tolist() == [1, 0, 1, -1, 0]
    assert loss(decisions) == pytest.approx(0.4)


def test_loss_zero_decides_everything_by_sign():
    assert loss_targeted_decisions([0.2, -0.3, 0.0], 0.0).tolist() == [1, -1, -1]


def test_dismissed_count_rounds_half_up():
    assert dismissed_count(10, 0.25) == 3
    assert dismissed_count(10, 0.3) == 3
    assert dismissed_count(7, 1.0) == 7


def test_loss_outside_unit_interval_is_refused():
    with pytest.raises(MetaInputError, match="loss"):
        loss_targeted_decisions([1.0], 1.5)


def test_threshold_form_keeps_documents_strictly_above_factor_times_training_mean():
    # training mean 2.0, factor 0.5 -> threshold 1.0
    assert confidence_threshold([1.0, 2.0, 3.0], 0.5) == pytest.approx(1.0)
    assert threshold_accepts([0.5, 1.0, 1.5], [1.0, 2.0, 3.0], 0.5).tolist() == [False, False, True]


def test_error_and_accuracy_count_only_decided_documents():
    decisions, truth = [1, 0, -1, 1], [1, 1, 1, 1]
    assert error(decisions, truth) == pytest.approx(1 / 3)
    assert accuracy(decisions, truth) == pytest.approx(2 / 3)
    assert correct_and_decided(decisions, truth) == (2, 3)
    assert loss(decisions) == pytest.approx(0.25)


def test_error_is_nan_when_everything_abstains():
    assert math.isnan(error([0, 0], [1, -1]))


PARENTS = {"Science": None, "Science/Math": "Science", "Science/Math/Stoch": "Science/Math", "Arts": None}


def test_tree_filtering_moves_rejected_documents_up_and_root_rejects_to_miscellaneous():
    placement = {"d1": "Science/Math/Stoch", "d2": "Science/Math/Stoch", "d3": "Science/Math", "d4": "Arts"}
    keeps = {("Science/Math/Stoch", "d1"), ("Science/Math", "d2")}
    calls = []

    def accepts(topic, docs):
        calls.append((topic, sorted(docs)))
        return [(topic, d) in keeps for d in docs]

    result = filter_topic_tree(placement, PARENTS, accepts)
    assert result == {
        "d1": "Science/Math/Stoch",
        "d2": "Science/Math",
        "d3": MISCELLANEOUS,
        "d4": MISCELLANEOUS,
    }
    # bottom-up: a child is judged before its parent, and the parent sees what the child rejected
    assert calls.index(("Science/Math/Stoch", ["d1", "d2"])) < calls.index(("Science/Math", ["d2", "d3"]))
    assert ("Science", ["d3"]) in calls


def test_tree_filtering_refuses_documents_in_unknown_topics():
    with pytest.raises(MetaInputError, match="unknown topic"):
        filter_topic_tree({"d1": "Nowhere"}, PARENTS, lambda topic, docs: [True] * len(docs))


def test_tree_filtering_refuses_cycles():
    with pytest.raises(MetaInputError, match="cycle"):
        filter_topic_tree({"d1": "A"}, {"A": "B", "B": "A"}, lambda topic, docs: [True] * len(docs))


def test_a_rivals_stronger_claim_rejects_a_weaker_one_lowers_confidence_and_a_rejection_is_no_claim():
    own = [0.8, 0.8, 0.8, -0.5]
    rivals = [np.array([0.9, 0.3, -0.9, 0.2]), np.array([0.1, -0.4, -0.2, 0.6])]
    assert rival_margins(own, rivals).tolist() == pytest.approx([-0.1, 0.5, 0.8, -1.1])
    assert rival_margins(own, []).tolist() == own


def test_rival_margins_refuse_scores_that_do_not_line_up_or_are_not_finite():
    with pytest.raises(MetaInputError, match="2 rival scores for 3 documents"):
        rival_margins([0.1, 0.2, 0.3], [np.array([0.1, 0.2])])
    with pytest.raises(MetaInputError, match="NaN"):
        rival_margins([0.1, 0.2], [np.array([0.1, np.nan])])
