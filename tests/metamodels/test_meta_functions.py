"""Meta functions (thesis 3.8/3.9, 3.12/3.13) on cases worked by hand."""

import numpy as np
import pytest

from metamodels.errors import MetaInputError
from metamodels.meta_functions import (
    ABSTAIN_LABEL,
    class_shares,
    k_class_meta,
    k_class_unanimous,
    linear_meta,
    unanimous,
    voting,
    weighted_average,
    weighted_sum,
)

DECISIONS = [[1, 1, -1], [1, -1, -1], [-1, -1, -1]]


def test_linear_meta_with_zero_thresholds_is_the_sign_of_the_sum():
    # sums: 1, -1, -3
    assert linear_meta(DECISIONS).tolist() == [1, -1, -1]


def test_linear_meta_abstains_between_the_thresholds():
    # sums 1, -1, -3 against t1 = 1, t2 = -1: only -3 is outside
    assert linear_meta(DECISIONS, t1=1.0, t2=-1.0).tolist() == [0, 0, -1]


def test_weighted_sum_multiplies_each_method_by_its_weight():
    # row [1, -1, -1] with weights 0.5, 0.3, 0.2 -> 0.5 - 0.3 - 0.2 = 0
    assert weighted_sum([[1, -1, -1], [1, 1, -1]], [0.5, 0.3, 0.2]) == pytest.approx([0.0, 0.6])


def test_weighted_average_normalises_weights_so_thresholds_are_on_one_methods_scale():
    # weights 5, 3, 2 -> 0.5, 0.3, 0.2; sums 0.0 and 0.6; t1 = 0.5 keeps only the second
    assert weighted_average([[1, -1, -1], [1, 1, -1]], [5, 3, 2], t1=0.5, t2=-0.5).tolist() == [0, 1]


def test_voting_counts_signs_not_magnitudes():
    # one confident yes against two weak noes: the vote says no, the confidence sum says yes
    confidences = [[0.9, -0.1, -0.2]]
    assert voting(confidences).tolist() == [-1]
    assert linear_meta(confidences).tolist() == [1]


def test_voting_tie_abstains():
    assert voting([[1, -1]]).tolist() == [0]


def test_unanimous_decides_only_when_all_agree_and_none_abstains():
    assert unanimous([[1, 1], [1, -1], [-1, -1], [0, 0]]).tolist() == [1, 0, -1, 0]


def test_k_class_plurality_abstains_on_ties():
    labels = np.array([[0, 0, 1], [0, 1, 2], [2, 2, 2], [ABSTAIN_LABEL, 1, 1]])
    assert k_class_meta(labels, 3).tolist() == [0, ABSTAIN_LABEL, 2, 1]


def test_k_class_weights_break_ties_and_min_share_is_the_threshold():
    labels = np.array([[0, 1, 2]])
    assert k_class_meta(labels, 3, weights=[3, 1, 1]).tolist() == [0]  # share 0.6
    assert k_class_meta(labels, 3, weights=[3, 1, 1], min_share=0.6).tolist() == [ABSTAIN_LABEL]


def test_class_shares_ignore_abstaining_methods():
    assert class_shares(np.array([[ABSTAIN_LABEL, 1]]), 2).tolist() == [[0.0, 0.5]]


def test_k_class_unanimous():
    labels = np.array([[0, 0, 1], [2, 2, 2], [ABSTAIN_LABEL, ABSTAIN_LABEL, ABSTAIN_LABEL]])
    assert k_class_unanimous(labels, 3).tolist() == [ABSTAIN_LABEL, 2, ABSTAIN_LABEL]


def test_wrong_number_of_weights_is_refused():
    with pytest.raises(MetaInputError, match="weights"):
        linear_meta(DECISIONS, weights=[1, 1])


def test_thresholds_in_the_wrong_order_are_refused():
    with pytest.raises(MetaInputError, match="t1 >= t2"):
        linear_meta(DECISIONS, t1=-1.0, t2=1.0)


def test_labels_outside_the_classes_are_refused():
    with pytest.raises(MetaInputError, match="labels"):
        k_class_meta(np.array([[0, 3]]), 3)
