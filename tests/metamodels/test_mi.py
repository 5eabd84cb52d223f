from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from metamodels.mi import (
    class_document_frequencies,
    mutual_information,
    mutual_information_from_counts,
    select_features,
    term_mutual_information,
)


def _presence(rows: list[list[int]]) -> sp.csr_matrix:
    return sp.csr_matrix(np.array(rows, dtype=float))


def test_expected_mi_matches_hand_computed_2x2_table():
    # 8 documents, 4 in the class. Term present in 3 class documents and 1 other document:
    # cells (present,in)=3, (present,out)=1, (absent,in)=1, (absent,out)=3.
    # MI = 2 * 3/8 ln(8*3/(4*4)) + 2 * 1/8 ln(8*1/(4*4)) = 0.75 ln 1.5 + 0.25 ln 0.5
    expected = 0.75 * math.log(1.5) + 0.25 * math.log(0.5)
    X = _presence([[1], [1], [1], [0], [1], [0], [0], [0]])
    y = np.array([1, 1, 1, 1, 0, 0, 0, 0])
    assert mutual_information(X, y)[0] == pytest.approx(expected)
    assert expected == pytest.approx(0.1308, abs=1e-4)


def test_pointwise_mi_is_thesis_equation_2_10():
    # P[w and D] = 3/8, P[w] = 4/8, P[D] = 4/8: 3/8 * ln((3/8) / (1/4)) = 3/8 ln 1.5
    X = _presence([[1], [1], [1], [0], [1], [0], [0], [0]])
    y = np.array([1, 1, 1, 1, 0, 0, 0, 0])
    assert mutual_information(X, y, kind="pointwise")[0] == pytest.approx(0.375 * math.log(1.5))


def test_perfect_indicator_has_mi_ln2_and_independent_term_zero():
    X = _presence([[1, 1], [1, 0], [0, 1], [0, 0]])
    y = np.array([1, 1, 0, 0])
    assert mutual_information(X, y) == pytest.approx([math.log(2), 0.0])


def test_contingency_counts_ignore_explicit_zeros():
    X = sp.csr_matrix((np.array([2.0, 0.0, -1.0]), np.array([0, 1, 1]), np.array([0, 2, 3])), shape=(2, 2))
    df_in, df_out, n_in, n_out = class_document_frequencies(X, np.array([1, 0]))
    assert df_in.tolist() == [1.0, 0.0]
    assert df_out.tolist() == [0.0, 1.0]
    assert (n_in, n_out) == (1, 1)


def test_select_features_takes_top_mi_among_frequent_class_terms():
    # column 0: perfect indicator; 1: weaker indicator; 2: independent; 3: only outside the class
    X = _presence([[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 1, 0], [0, 1, 0, 1], [0, 0, 1, 1], [0, 0, 0, 1]])
    y = np.array([1, 1, 1, 0, 0, 0])
    assert select_features(X, y, 2, min_df=1).tolist() == [0, 1]
    assert select_features(X, y, 10, min_df=1).tolist() == [0, 1, 2]
    assert select_features(X, y, 10, candidates=1, min_df=1).tolist() == [0]


def test_select_features_skips_rare_terms_below_min_df():
    X = _presence([[1, 1], [0, 1], [0, 0], [0, 0]])
    y = np.array([1, 1, 0, 0])
    assert select_features(X, y, 5, min_df=2).tolist() == [1]


def test_term_mutual_information_ranks_terms():
    scores = term_mutual_information(
        [["orbit", "the"], ["orbit", "moon", "the"], ["car", "the"], ["the"]], [1, 1, 0, 0]
    )
    assert scores["orbit"] == pytest.approx(math.log(2))
    assert scores["the"] == 0.0
    assert scores["orbit"] > scores["moon"] > 0


def test_unknown_mi_kind_is_refused():
    with pytest.raises(ValueError, match="MI kind"):
        mutual_information_from_counts(np.ones(1), np.ones(1), 2, 2, kind="gain")


def test_one_term_matrix_serves_every_class_as_separate_computations_would():
    from metamodels.mi import TermMatrix

    documents = [["sql", "join"], ["sql", "index"], ["matrix", "proof"], ["matrix", "sql"], ["proof"]]
    matrix = TermMatrix.of(documents)
    for y in ([1, 1, 0, 0, 0], [0, 0, 1, 1, 1], [1, 0, 1, 0, 1]):
        assert matrix.mutual_information(y, kind="pointwise") == term_mutual_information(
            documents, y, kind="pointwise"
        )
    assert matrix.terms == ("sql", "join", "index", "matrix", "proof") and matrix.X.shape == (5, 5)
