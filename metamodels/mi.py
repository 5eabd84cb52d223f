"""Mutual information between term presence and a class (thesis 1.3, eq. 2.10/2.11).

Works on any document-by-feature matrix (only whether an entry is non-zero counts), so the same code ranks
hashed features for the topic models' feature spaces and plain terms for previews and cluster labels.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from metamodels.errors import TrainingDataError

MI_KINDS = ("expected", "pointwise")


def class_document_frequencies(X: sp.spmatrix, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(df within the class, df outside it, class size, other size) per feature, counting non-zero entries."""
    X = sp.csr_matrix(X)
    y = np.asarray(y).astype(bool).ravel()
    if y.shape[0] != X.shape[0]:
        raise TrainingDataError(f"{X.shape[0]} documents but {y.shape[0]} labels")
    df_in = _document_frequency(X[y], X.shape[1])
    df_out = _document_frequency(X[~y], X.shape[1])
    return df_in, df_out, int(y.sum()), int((~y).sum())


def _document_frequency(X: sp.csr_matrix, n_features: int) -> np.ndarray:
    X = sp.csr_matrix(X)
    X.eliminate_zeros()
    return np.bincount(X.indices, minlength=n_features).astype(np.float64)


def mutual_information_from_counts(
    df_in: np.ndarray, df_out: np.ndarray, n_in: int, n_out: int, kind: str = "expected"
) -> np.ndarray:
    """MI of each feature with the class from its 2x2 contingency counts, in nats.

    "expected": the full mutual information of presence and class, summed over the four cells.
    "pointwise": thesis eq. 2.10, P[w and D] * log(P[w and D] / (P[w] P[D])), which only rewards terms
    that occur more often inside the class than outside.
    """
    if kind not in MI_KINDS:
        raise ValueError(f"MI kind must be one of {MI_KINDS}, got {kind!r}")
    n = float(n_in + n_out)
    if n == 0:
        return np.zeros_like(np.asarray(df_in, dtype=np.float64))
    a = np.asarray(df_in, dtype=np.float64)  # in class, term present
    b = np.asarray(df_out, dtype=np.float64)  # outside, present
    c = n_in - a  # in class, absent
    d = n_out - b  # outside, absent
    present, absent = a + b, c + d
    score = _cell(a, present, n_in, n)
    if kind == "expected":
        score = score + _cell(b, present, n_out, n) + _cell(c, absent, n_in, n) + _cell(d, absent, n_out, n)
    return score


def _cell(joint: np.ndarray, row: np.ndarray, column: float, n: float) -> np.ndarray:
    """joint/n * log(n * joint / (row * column)), with 0 log 0 = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        value = (joint / n) * np.log(n * joint / (row * column))
    return np.where(joint > 0, value, 0.0)


def mutual_information(X: sp.spmatrix, y: np.ndarray, kind: str = "expected") -> np.ndarray:
    """MI of every column's presence with the binary class y (1 = in class)."""
    return mutual_information_from_counts(*class_document_frequencies(X, y), kind=kind)


def select_features(
    X: sp.spmatrix,
    y: np.ndarray,
    k: int,
    *,
    candidates: int = 10_000,
    min_df: int = 2,
    kind: str = "expected",
) -> np.ndarray:
    """Sorted indices of the top-k columns by MI with class y (thesis eq. 2.34's bestFeatures).

    As in the thesis, MI is only evaluated for the `candidates` features with the highest df inside the
    class, which keeps rare terms (hapaxes) out; features with df < min_df overall are never chosen.
    """
    df_in, df_out, n_in, n_out = class_document_frequencies(X, y)
    eligible = np.flatnonzero((df_in > 0) & (df_in + df_out >= min_df))
    if eligible.size > candidates:
        order = np.lexsort((eligible, -df_in[eligible]))  # ties broken by index: deterministic
        eligible = eligible[order[:candidates]]
    scores = mutual_information_from_counts(df_in[eligible], df_out[eligible], n_in, n_out, kind=kind)
    order = np.lexsort((eligible, -scores))
    return np.sort(eligible[order[:k]])


def term_mutual_information(
    documents: Sequence[Iterable[str]], y: Sequence[int] | np.ndarray, kind: str = "expected"
) -> dict[str, float]:
    """MI of each term (from per-document term lists) with the binary class y, for previews and labels."""
    return TermMatrix.of(documents).mutual_information(y, kind)


@dataclass(frozen=True)
class TermMatrix:
    """Which terms each document holds, built once for the MI of many classes over the same documents
    (every topic of a taxonomy, every cluster): building it again for each class took a search's previews
    19 s at 150 topics."""

    terms: tuple[str, ...]
    X: sp.csr_matrix  # documents x terms, 1 where the document holds the term

    @classmethod
    def of(cls, documents: Sequence[Iterable[str]]) -> TermMatrix:
        vocabulary: dict[str, int] = {}
        indptr, indices = [0], []
        for terms in documents:
            row = {vocabulary.setdefault(term, len(vocabulary)) for term in terms}
            indices.extend(row)
            indptr.append(len(indices))
        data = np.ones(len(indices), dtype=np.float64)
        X = sp.csr_matrix((data, indices, indptr), shape=(len(indptr) - 1, len(vocabulary)))
        return cls(tuple(vocabulary), X)

    def mutual_information(self, y: Sequence[int] | np.ndarray, kind: str = "expected") -> dict[str, float]:
        """Each term's MI with the binary class y over the documents."""
        scores = mutual_information(self.X, np.asarray(y), kind=kind)
        return {term: float(score) for term, score in zip(self.terms, scores, strict=True)}
