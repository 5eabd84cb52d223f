"""A two-class latent model of one or more base models' log-odds on unlabelled documents (beyond the thesis).

Platt scalers fitted on a node's labelled documents (bookmarks and archetypes, the most typical pages of a
topic) put the sign threshold where those separate, and the node's crawl is another distribution: on 16
devweb community nodes the local model accepted 0-33% of a topic's documents where 7-53% were on topic,
and a shifted threshold alone would have lifted its filtering accuracy at loss 0.2 from 0.89 to 0.97-1.0.
The labels cannot tell where the threshold lies on the crawl; the crawl can. Each document's calibrated
log-odds under k models are taken as k views, independent given the document's (unknown) class and
Gaussian per class: a two-component mixture with diagonal covariances (Dawid and Skene's latent class
model for continuous scores), fitted by EM on the node's own documents and kept only when BIC prefers two
classes to one. Its posterior log-odds are the score. The log-odds are the scalers' own, linear in the
score: capped, they piled a class's confident documents on one value whose variance then collapsed. On the
stored devweb runs the local model's one view lifted filtering from 0.90 to 0.945-0.96 (never lower on 68
nodes); with the community's views as well, to 0.96-0.97. The caller leaves out views not better than
chance; a view the fit finds inverted (on topic where the reference says off topic) is dropped, never
repaired, and a view that is a copy of another (within-class correlation above `MAX_CORRELATION`) counts
once. Where a crawl holds a third group between the topic and the rest (another of the node's topics, as
a small one on the fixture web), two classes are the wrong model and the fit can merge that group with
the topic (a Sysadmin filter at 0.20 where the Platt scaler alone had 1.00); neither more components
chosen by BIC (devweb 0.955 -> 0.896) nor bounding the topic's share by the crawler's own filing fixed it.
The node's filtering does, by weighing each topic's score against its rival topics' claims
(`metamodels.restrictive.rival_margins`): that filter rose to 0.83.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from metamodels.errors import MetaInputError, ModelFormatError

MIN_PRIOR = 0.01  # a positive class below this share of the documents is no class the fit can trust
MAX_CORRELATION = 0.99  # views whose log-odds correlate more within a class are one model sent twice
VARIANCE_FLOOR = 1e-3  # added to every variance of the fit (scikit-learn's reg_covar)
# Threads of a fit: the k-means seeding each one starts OpenMP threads whose start-up dwarfs a few thousand
# points (None: the libraries' own default). `python -m simnet.bench.latent_fit` measures both side by side.
FIT_THREADS: int | None = 1


@dataclass(frozen=True)
class LatentClass:
    """The fitted mixture: which columns of the responses it reads (`views`), the positive class's share,
    and per class (negative, positive) and view the mean and variance of the log-odds."""

    views: tuple[int, ...]
    prior: float
    means: tuple[tuple[float, ...], tuple[float, ...]]
    variances: tuple[tuple[float, ...], tuple[float, ...]]
    of_labels: bool = False  # not fitted to a crawl: a view's calibrated log-odds as they are (`labels_view`)

    def __post_init__(self) -> None:
        k = len(self.views)
        if k == 0 or len(set(self.views)) != k or any(v < 0 for v in self.views):
            raise MetaInputError(f"views must be distinct non-negative column indices, got {self.views}")
        if not MIN_PRIOR <= self.prior <= 1.0 - MIN_PRIOR:
            raise MetaInputError(f"prior must lie in [{MIN_PRIOR}, {1 - MIN_PRIOR}], got {self.prior}")
        for name, pair in (("means", self.means), ("variances", self.variances)):
            if len(pair) != 2 or any(len(row) != k for row in pair):
                raise MetaInputError(f"{name} need 2 rows of {k} values, one per view")
            if not all(math.isfinite(x) for row in pair for x in row):
                raise MetaInputError(f"{name} must be finite")
        if any(v <= 0 for row in self.variances for v in row):
            raise MetaInputError("variances must be positive")

    def log_odds(self, F: np.ndarray) -> np.ndarray:
        """Posterior log-odds of the positive class for each row of F (documents x views), monotone in
        every view: between a view's two class means it is the mixture's, beyond them it goes on
        linearly with the slope it has at the nearer mean. (With unequal variances the Gaussian posterior
        is quadratic and turns back in the tails: on a devweb node the wider positive class of
        Mathematics took database pages its model scored lowest of all for Mathematics.)"""
        F = np.asarray(F, dtype=float)
        if F.ndim != 2 or F.shape[1] != len(self.views):
            raise MetaInputError(f"need a (documents x {len(self.views)}) matrix, got shape {F.shape}")
        mean, var = np.asarray(self.means), np.asarray(self.variances)
        low, high = np.minimum(mean[0], mean[1]), np.maximum(mean[0], mean[1])
        inside = np.clip(F, low, high)

        def log_likelihood(c: int) -> np.ndarray:
            return -0.5 * np.sum(np.log(2 * np.pi * var[c]) + (inside - mean[c]) ** 2 / var[c], axis=1)

        at_negative, at_positive = (mean[1] - mean[0]) / var[1], (mean[1] - mean[0]) / var[0]  # slopes
        ordered = mean[0] <= mean[1]
        slope_below = np.where(ordered, at_negative, at_positive)
        slope_above = np.where(ordered, at_positive, at_negative)
        tails = np.minimum(F - low, 0) * slope_below + np.maximum(F - high, 0) * slope_above
        prior = math.log(self.prior / (1.0 - self.prior))
        return prior + log_likelihood(1) - log_likelihood(0) + tails.sum(axis=1)

    def separations(self) -> np.ndarray:
        """Per view: (positive mean - negative mean) / the classes' pooled standard deviation, how far the
        view tells the classes apart (negative: it ranks them the wrong way round)."""
        mean, var = np.asarray(self.means), np.asarray(self.variances)
        return (mean[1] - mean[0]) / np.sqrt(var.mean(axis=0))

    def to_dict(self) -> dict[str, Any]:
        data = {
            "views": list(self.views),
            "prior": float(self.prior),
            "means": [list(map(float, row)) for row in self.means],
            "variances": [list(map(float, row)) for row in self.variances],
        }
        return {**data, "of_labels": True} if self.of_labels else data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LatentClass:
        try:
            views = tuple(int(v) for v in data["views"])
            means = tuple(tuple(float(x) for x in row) for row in data["means"])
            variances = tuple(tuple(float(x) for x in row) for row in data["variances"])
            of_labels = data.get("of_labels", False)
            if not isinstance(of_labels, bool):
                raise TypeError(f"of_labels must be true or false, got {of_labels!r}")
            return cls(views, float(data["prior"]), means, variances, of_labels)  # type: ignore[arg-type]
        except (KeyError, TypeError, ValueError, MetaInputError) as exc:
            raise ModelFormatError(f"malformed latent class model: {exc}") from exc


def labels_view(view: int) -> LatentClass:
    """A voter that reads one view's calibrated log-odds as they are: two classes of equal share and
    variance 2 with means -1 and +1 have posterior log-odds x at x. It stands for the threshold a node's
    labels set where the crawl shows no two classes of its own model's view (`of_labels`)."""
    return LatentClass((view,), 0.5, ((-1.0,), (1.0,)), ((2.0,), (2.0,)), of_labels=True)


def fit_latent_class(
    F: np.ndarray, views: Sequence[int], reference: int, min_documents: int = 30, seed: int = 0
) -> LatentClass | None:
    """The two-class model of the log-odds F (documents x views, column j read from response column
    views[j]); the positive class is the component with the larger mean under the `reference` column.
    Views the fit finds inverted are dropped, and so is a view whose log-odds correlate above
    `MAX_CORRELATION` within a class with an earlier one's (the model takes its views as independent
    given the class, so a model sent twice, under a second name or retrained on the same documents, would
    count twice); the rest are fitted again. None when there are fewer than `min_documents` documents,
    when one class explains them as well (BIC), or when the fit is degenerate (no convergence, a class
    under `MIN_PRIOR`, the reference itself not separating them)."""
    F = np.asarray(F, dtype=float)
    columns = list(range(F.shape[1])) if F.ndim == 2 else []
    if not columns or len(views) != len(columns) or F.shape[0] < min_documents:
        return None
    if not np.all(np.isfinite(F)) or not 0 <= reference < len(columns):
        raise MetaInputError("log-odds must be finite and the reference one of the columns")
    while columns:
        fitted = _fit(F[:, columns], columns.index(reference), seed)
        if fitted is None:
            return None
        two, positive = fitted
        order = [1 - positive, positive]
        model = LatentClass(
            views=tuple(views[c] for c in columns),
            prior=float(two.weights_[positive]),
            means=tuple(tuple(map(float, two.means_[c])) for c in order),  # type: ignore[arg-type]
            variances=tuple(tuple(map(float, two.covariances_[c])) for c in order),  # type: ignore[arg-type]
        )
        inverted = [c for c, s in zip(columns, model.separations(), strict=True) if s <= 0]
        copies = _copies(F[:, columns], two.predict_proba(F[:, columns]), columns.index(reference))
        dropped = set(inverted) | {columns[c] for c in copies}
        if not dropped:
            return model
        columns = [c for c in columns if c not in dropped]
    return None


def _fit(data: np.ndarray, reference: int, seed: int) -> tuple[Any, int] | None:
    """(the two-component mixture, its positive component), or None (see `fit_latent_class`)."""
    from sklearn.mixture import GaussianMixture
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=FIT_THREADS), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence is checked below
        options = {"covariance_type": "diag", "reg_covar": VARIANCE_FLOOR, "random_state": seed}
        two = GaussianMixture(2, n_init=3, **options).fit(data)
        one = GaussianMixture(1, **options).fit(data)
    if not two.converged_ or two.bic(data) >= one.bic(data):
        return None
    positive = int(np.argmax(two.means_[:, reference]))
    separated = two.means_[positive, reference] > two.means_[1 - positive, reference]
    if not separated or not MIN_PRIOR <= two.weights_[positive] <= 1.0 - MIN_PRIOR:
        return None
    return two, positive


def _copies(data: np.ndarray, responsibilities: np.ndarray, reference: int) -> list[int]:
    """Columns (never the reference) whose within-class correlation with an earlier kept column exceeds
    `MAX_CORRELATION` in either class."""
    correlations = [_weighted_correlation(data, responsibilities[:, c]) for c in range(2)]
    kept: list[int] = []
    copies = []
    for column in range(data.shape[1]):
        if column != reference and any(
            max(r[column, k] for r in correlations) > MAX_CORRELATION for k in kept
        ):
            copies.append(column)
        else:
            kept.append(column)
    return copies


def _weighted_correlation(data: np.ndarray, weights: np.ndarray) -> np.ndarray:
    total = weights.sum()
    if total <= 0:
        return np.zeros((data.shape[1], data.shape[1]))
    centred = data - (weights @ data) / total
    covariance = (centred * weights[:, None]).T @ centred / total
    scale = np.sqrt(np.clip(np.diag(covariance), 1e-12, None))
    return covariance / np.outer(scale, scale)
