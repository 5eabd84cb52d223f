"""The latent class model of several models' log-odds: a threshold found on unlabelled documents."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from metamodels.calibration import PlattScaler
from metamodels.errors import ModelFormatError
from metamodels.latent_class import LatentClass, fit_latent_class, labels_view
from metamodels.linear import train_linear_svm
from metamodels.meta_classifier import MetaClassifier
from metamodels.meta_functions import unanimous_confidence
from metamodels.restrictive import accuracy, loss_targeted_decisions


def views_of(truth: np.ndarray, k: int, seed: int, offset: float = -2.0) -> np.ndarray:
    """k views independent given the class, every one calibrated elsewhere: its sign threshold lies
    `offset` too high, so on these documents it rejects most of the positives."""
    rng = np.random.default_rng(seed)
    return np.column_stack(
        [np.where(truth, 1.5, -1.5) + offset + rng.normal(0, 1.0, truth.size) for _ in range(k)]
    )


def filtering_accuracy(scores: np.ndarray, truth: np.ndarray) -> float:
    return accuracy(loss_targeted_decisions(scores, 0.2), np.where(truth, 1, -1))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_three_miscalibrated_views_filter_better_together_than_any_alone(seed):
    truth = np.random.default_rng(seed + 10).random(400) < 0.35
    F = views_of(truth, 3, seed)
    model = fit_latent_class(F, [0, 1, 2], 0)
    assert model is not None and model.views == (0, 1, 2)
    assert model.prior == pytest.approx(truth.mean(), abs=0.06)
    together = filtering_accuracy(model.log_odds(F), truth)
    assert together > 0.95
    assert all(together > filtering_accuracy(F[:, j], truth) + 0.05 for j in range(3))


@pytest.mark.parametrize("means", [((-3.0,), (0.0,)), ((0.0,), (-3.0,))], ids=["ordered", "inverted"])
def test_log_odds_are_monotone_in_a_view_and_the_mixtures_own_between_the_class_means(means):
    # the positive class is the wider one: a Gaussian posterior would call the lowest scores positive
    model = LatentClass(views=(0,), prior=0.4, means=means, variances=((0.2,), (2.0,)))
    grid = np.linspace(-12.0, 12.0, 481).reshape(-1, 1)
    steps = np.diff(model.log_odds(grid))
    assert np.all(steps >= 0) if means[1][0] > means[0][0] else np.all(steps <= 0)
    x = np.linspace(min(means)[0], max(means)[0], 7).reshape(-1, 1)
    (m0,), (m1,) = means
    gaussian = np.log(0.4 / 0.6) - 0.5 * (np.log(2.0 / 0.2) + (x - m1) ** 2 / 2.0 - (x - m0) ** 2 / 0.2)
    assert np.allclose(model.log_odds(x), gaussian[:, 0])


def test_no_model_without_two_classes_or_with_too_few_documents():
    truth = np.zeros(300, dtype=bool)
    assert fit_latent_class(views_of(truth, 3, 0), [0, 1, 2], 0) is None  # one class: BIC prefers one
    few = np.random.default_rng(1).random(20) < 0.5
    assert fit_latent_class(views_of(few, 3, 1), [0, 1, 2], 0, min_documents=30) is None


def test_an_inverted_view_is_dropped_not_repaired_and_a_copy_counts_once():
    truth = np.random.default_rng(5).random(400) < 0.4
    F = views_of(truth, 3, 5)
    with_inverted = np.column_stack([F, -F[:, 1] + np.random.default_rng(6).normal(0, 0.3, truth.size)])
    model = fit_latent_class(with_inverted, [0, 1, 2, 7], 0)
    assert model is not None and model.views == (0, 1, 2)
    with_copy = np.column_stack([F[:, :2], F[:, 1], F[:, 2]])
    model = fit_latent_class(with_copy, [0, 1, 2, 3], 0)
    assert model is not None and model.views == (0, 1, 3)


def test_the_reference_view_decides_which_class_is_positive():
    truth = np.random.default_rng(7).random(300) < 0.3
    F = views_of(truth, 3, 7)
    model = fit_latent_class(F, [0, 1, 2], 0)
    assert model is not None and np.all(model.separations() > 0)
    assert np.mean((model.log_odds(F) > 0) == truth) > 0.9
    assert fit_latent_class(-F, [0, 1, 2], 0) is not None  # all views flipped: still the reference's sense
    assert np.mean((fit_latent_class(-F, [0, 1, 2], 0).log_odds(-F) > 0) == ~truth) > 0.9


def good_dict() -> dict:
    return {
        "views": [0, 1],
        "prior": 0.3,
        "means": [[-1.0, -1.0], [1.0, 2.0]],
        "variances": [[1.0, 1.0], [1.0, 0.5]],
    }


@pytest.mark.parametrize(
    "change",
    [
        {"variances": [[1.0, -1.0], [1.0, 0.5]]},
        {"variances": [[1.0, 0.0], [1.0, 0.5]]},
        {"means": [[-1.0], [1.0, 2.0]]},
        {"means": [[-1.0, float("nan")], [1.0, 2.0]]},
        {"prior": 1.0},
        {"prior": "much"},
        {"views": [0, 0]},
        {"views": [0, -1]},
        {"views": None},
        {"of_labels": "yes"},
    ],
)
def test_a_malformed_latent_class_model_is_refused_with_a_clear_error(change):
    data = {**good_dict(), **change}
    with pytest.raises(ModelFormatError, match="latent class"):
        LatentClass.from_dict(data)


def test_a_meta_classifier_round_trips_its_latent_model_and_refuses_one_reading_a_missing_view():
    X = sp.csr_matrix(np.random.default_rng(0).random((40, 8)))
    y = (X.toarray()[:, 0] > 0.5).astype(np.int8)
    model = train_linear_svm(X, y, 1.0)
    scalers = (PlattScaler(a=-2.0, b=0.1), PlattScaler(a=-1.0, b=0.0))
    latent = LatentClass.from_dict(good_dict())
    meta = MetaClassifier(models=(model, model), weights=(1.0, 1.0), scalers=scalers, latent=(latent,))
    back = MetaClassifier.from_dict(meta.to_dict())
    assert back.latent == meta.latent
    assert np.allclose(back.view_log_odds(X, latent), meta.view_log_odds(X, latent))
    assert np.allclose(meta.view_log_odds(X, latent)[:, 0], -(-2.0 * model.confidence(X) + 0.1))
    broken = meta.to_dict() | {"latent": [{**good_dict(), "views": [0, 2]}]}
    with pytest.raises(ModelFormatError, match="reads views"):
        MetaClassifier.from_dict(broken)
    with pytest.raises(ModelFormatError, match="needs a Platt scaler"):
        MetaClassifier.from_dict(meta.to_dict() | {"scalers": [scalers[0].to_dict(), None]})
    for malformed in ([1, 2], good_dict(), "latent"):
        with pytest.raises(ModelFormatError, match="list of latent class models"):
            MetaClassifier.from_dict(meta.to_dict() | {"latent": malformed})
    older = {k: v for k, v in meta.to_dict().items() if k != "latent"}  # written before it existed
    assert MetaClassifier.from_dict(older).latent == ()


def test_the_labels_view_reads_a_views_calibrated_log_odds_as_they_are_and_round_trips():
    voter = labels_view(2)
    x = np.linspace(-6.0, 6.0, 25).reshape(-1, 1)
    assert np.allclose(voter.log_odds(x), x.ravel())
    assert voter.views == (2,) and voter.of_labels
    assert LatentClass.from_dict(voter.to_dict()) == voter
    assert "of_labels" not in LatentClass.from_dict(good_dict()).to_dict()  # fitted ones stay as they were


def test_unanimous_confidence_is_the_weaker_common_vote_and_zero_on_disagreement():
    votes = np.array([[2.0, 0.5], [-1.0, -3.0], [1.0, -1.0], [0.0, 2.0]])
    assert unanimous_confidence(votes).tolist() == [0.5, -1.0, 0.0, 0.0]
    assert unanimous_confidence(votes[:, :1]).tolist() == [2.0, -1.0, 1.0, 0.0]


def test_a_fit_on_one_thread_is_the_fit_on_the_libraries_threads(monkeypatch):
    from metamodels import latent_class

    truth = np.random.default_rng(7).random(600) < 0.35
    F = views_of(truth, 3, 7)
    fits = {}
    for threads in (None, 1):
        monkeypatch.setattr(latent_class, "FIT_THREADS", threads)
        fits[threads] = fit_latent_class(F, [0, 1, 2], 0)
    assert fits[1] is not None and fits[None] is not None
    assert fits[1].prior == pytest.approx(fits[None].prior, abs=1e-6)
    assert np.allclose(fits[1].means, fits[None].means, atol=1e-6)
