"""Smoke tests of the collaborative classification experiments on a small synthetic corpus."""

import numpy as np
import pytest

from metamodels.robust import RobustSettings, robust_combine
from simnet.corpora import Document
from simnet.experiments.collab_classify import (
    Setup,
    Tally,
    goals,
    group_sizes,
    pair_splits,
    prepare_corpus,
    result_json,
    run_pair,
    train_peer_models,
)
from simnet.experiments.estimators import pair_estimates
from simnet.experiments.peersplit import TopicPairSplit
from simnet.experiments.poisoning import hostile_model, robust_confidences


def synthetic_documents(per_topic: int = 150, seed: int = 0) -> list[Document]:
    """Three topics with their own words plus shared noise words."""
    rng = np.random.default_rng(seed)
    vocab = {t: [f"{t}word{i}" for i in range(30)] for t in ("alpha", "beta", "gamma")}
    noise = [f"common{i}" for i in range(60)]
    docs = []
    for topic, words in vocab.items():
        for i in range(per_topic):
            text = " ".join(list(rng.choice(words, 6)) + list(rng.choice(noise, 20)))
            docs.append(Document(f"{topic}/{i}", text, (topic,), "train"))
    return docs


SETUP = Setup(n_peers=4, train_per_class=60, validation_per_class=40, min_validation=20, min_topic_docs=100)


@pytest.mark.slow
def test_collab_classify_runs_and_cooperation_is_above_chance():
    corpus = prepare_corpus(synthetic_documents())
    tally = Tally()
    splits = list(pair_splits(corpus, SETUP, n_pairs=2, repeats=1, seed=0))
    assert len(splits) == 2
    for split in splits:
        run_pair(corpus, split, SETUP, np.random.default_rng(0), tally)
    result = result_json(tally)
    assert group_sizes(SETUP) == (1, 2, 4)
    assert result["accuracy"]["4"]["0.0"] > 0.7
    assert result["centralised"]["0.0"] > 0.7


def test_pair_estimates_exclude_a_models_own_documents():
    # 2 models, 4 training documents: model 0 holds 0-1, model 1 holds 2-3
    split = TopicPairSplit(
        ("a", "b"),
        train_rows=np.arange(4),
        train_truth=np.array([1, 1, -1, -1]),
        validation_rows=np.arange(0),
        validation_truth=np.arange(0),
        peer_positions=[np.array([0, 1]), np.array([2, 3])],
    )
    # model 0 is right on 2 but wrong on 3; model 1 right on 0 and 1
    decisions = np.array([[1, 1], [1, 1], [-1, 1], [1, 1]])
    accuracies, covariance = pair_estimates(split, decisions)
    assert accuracies.tolist() == [0.5, 1.0]
    assert covariance == 0.0  # no document is held by neither model


@pytest.mark.slow
def test_robust_combination_silences_an_amplified_flipped_model():
    corpus = prepare_corpus(synthetic_documents(seed=1))
    split = next(iter(pair_splits(corpus, SETUP, n_pairs=1, repeats=1, seed=1)))
    rng = np.random.default_rng(0)
    honest = train_peer_models(corpus, split, 1.0)
    models = [*honest[:3], hostile_model("flipped_amplified", corpus, split, 3, 1.0, rng)]
    validation = corpus.features[split.validation_rows]
    calibrated, weights = robust_confidences(models, corpus, split, validation)
    assert weights[3] == 0.0 and np.all(weights[:3] > 0)
    truth = split.validation_truth.astype(int)
    plain = np.column_stack([m.confidence(validation) for m in models]).sum(axis=1)
    robust = robust_combine(calibrated, weights, RobustSettings())
    assert np.mean(np.where(robust > 0, 1, -1) == truth) > np.mean(np.where(plain > 0, 1, -1) == truth)


def test_goals_report_the_share_of_headroom_sixteen_peers_recover():
    # one peer 0.96, sixteen 0.98, centralised 0.99: gain 0.02 of a 0.03 headroom; at loss 0.5 tied at 1.0
    result = {
        "accuracy": {"1": {"0.0": 0.96, "0.5": 1.0}, "16": {"0.0": 0.98, "0.5": 1.0}},
        "centralised": {"0.0": 0.99, "0.5": 1.0},
    }
    summary = goals(result)
    assert summary["headroom_at_loss_0"] == pytest.approx(0.03)
    assert summary["share_of_headroom_recovered"] == pytest.approx(2 / 3, abs=1e-3)
    assert summary["gain_at_loss_0"] == pytest.approx(0.02)
    assert summary["ratio_to_centralised_at_loss_0"] == pytest.approx(0.98 / 0.99, abs=1e-4)
    assert not summary["beats_one_peer_at_every_loss"] and summary["losses_tied_at_1.0"] == ["0.5"]
