"""The meta-classifier of eq. 3.13 and its transferable form 3.14 on cases worked by hand."""

from dataclasses import dataclass

import msgpack
import numpy as np
import pytest
import scipy.sparse as sp

from metamodels.calibration import PlattScaler
from metamodels.errors import MetaInputError, ModelFormatError
from metamodels.meta_classifier import MetaClassifier


@dataclass(frozen=True)
class DotModel:
    """A stand-in base model: confidence = X @ w."""

    w: tuple[float, ...]

    def confidence(self, X):
        return np.asarray(X @ np.asarray(self.w)).reshape(-1)

    def to_dict(self):
        return {"w": list(self.w)}

    @classmethod
    def from_dict(cls, data):
        return cls(tuple(data["w"]))


X = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
A, B = DotModel((1.0, -1.0)), DotModel((0.5, 0.5))  # confidences [1, -1, 0] and [0.5, 0.5, 1]


def test_combined_confidence_is_the_weighted_sum():
    assert MetaClassifier.equal_weights([A, B]).combined(X) == pytest.approx([1.5, -0.5, 1.0])
    assert MetaClassifier((A, B), (2.0, 0.0)).combined(X) == pytest.approx([2.0, -2.0, 0.0])


def test_thresholds_make_it_abstain_between_t2_and_t1():
    assert MetaClassifier.equal_weights([A, B]).decide(X).tolist() == [1, -1, 1]
    assert MetaClassifier.equal_weights([A, B], t1=1.0, t2=-1.0).decide(X).tolist() == [1, 0, 0]


def test_loss_targeted_filter_dismisses_the_least_confident_share():
    # |combined| = 1.5, 0.5, 1.0: a third dismissed -> the second document
    assert MetaClassifier.equal_weights([A, B]).decide_with_loss(X, 1 / 3).tolist() == [1, 0, 1]


def test_decision_response_uses_signs_and_zero_counts_as_reject():
    # signs: A [1, -1, -1], B [1, 1, 1] -> sums 2, 0, 0
    meta = MetaClassifier.equal_weights([A, B], response="decision")
    assert meta.combined(X).tolist() == [2.0, 0.0, 0.0]
    assert meta.decide(X).tolist() == [1, 0, 0]


def test_scalers_calibrate_each_model_before_combining():
    flip = PlattScaler(a=1.0, b=0.0)  # maps higher raw scores to lower probability
    meta = MetaClassifier.equal_weights([A], scalers=(flip,))
    assert meta.combined(X)[0] < 0 < meta.combined(X)[1]


def test_transferable_form_round_trips_through_msgpack():
    meta = MetaClassifier((A, B), (0.7, 0.3), t1=0.2, t2=-0.1, scalers=(PlattScaler(-2.0, 0.1), None))
    wire = msgpack.unpackb(msgpack.packb(meta.to_dict()))
    again = MetaClassifier.from_dict(wire, model_from_dict=DotModel.from_dict)
    assert again == meta
    assert again.decide(X).tolist() == meta.decide(X).tolist()


def test_inconsistent_transferable_form_is_refused():
    data = MetaClassifier.equal_weights([A, B]).to_dict()
    data["weights"] = [1.0]
    with pytest.raises(ModelFormatError, match="weights"):
        MetaClassifier.from_dict(data, model_from_dict=DotModel.from_dict)
    with pytest.raises(ModelFormatError, match="version"):
        MetaClassifier.from_dict({**data, "version": 99}, model_from_dict=DotModel.from_dict)


def test_thresholds_in_wrong_order_are_refused():
    with pytest.raises(MetaInputError, match="t1 >= t2"):
        MetaClassifier.equal_weights([A], t1=-1.0, t2=1.0)


def test_meta_classifier_of_linear_svms_travels_as_plain_data():
    from metamodels.features import FeatureConfig
    from metamodels.linear import LinearModel, train_linear_svm

    rng = np.random.default_rng(0)
    y = np.array([1, 0] * 20)
    dense = (
        rng.random((40, 8))
        + np.outer(y, [1, 1, 0, 0, 0, 0, 0, 0])
        + np.outer(1 - y, [0, 0, 1, 1, 0, 0, 0, 0])
    )
    Xs = sp.csr_matrix(dense)
    config = FeatureConfig(n_features=8)
    models = [
        train_linear_svm(
            Xs[20 * i : 20 * i + 20], y[20 * i : 20 * i + 20], config=config, training_ids=[f"d{i}"]
        )
        for i in range(2)
    ]
    meta = MetaClassifier.equal_weights(models, t1=0.1, t2=-0.1)
    again = MetaClassifier.from_dict(msgpack.unpackb(msgpack.packb(meta.to_dict())))
    assert all(isinstance(m, LinearModel) for m in again.models)
    assert again.combined(Xs) == pytest.approx(meta.combined(Xs))
    assert np.mean(meta.decide_with_loss(Xs, 0.0) == np.where(y == 1, 1, -1)) > 0.9


def test_aggregation_travels_with_the_meta_classifier_and_older_forms_still_load():
    meta = MetaClassifier((A, B), (0.7, 0.3), aggregation="log_odds_mean")
    wire = msgpack.unpackb(msgpack.packb(meta.to_dict()))
    assert MetaClassifier.from_dict(wire, model_from_dict=DotModel.from_dict) == meta
    older = {k: v for k, v in meta.to_dict().items() if k != "aggregation"}
    assert MetaClassifier.from_dict(older, model_from_dict=DotModel.from_dict).aggregation is None
    with pytest.raises(ModelFormatError, match="aggregation"):
        MetaClassifier.from_dict({**wire, "aggregation": "vote"}, model_from_dict=DotModel.from_dict)
