"""Smoke tests of the meta_cluster and collab_cluster experiments on a small synthetic corpus."""

from __future__ import annotations

import numpy as np
import pytest

from metamodels.clustering import Clustering
from simnet.corpora import Document
from simnet.experiments import collab_cluster, meta_cluster
from simnet.experiments.collab_classify import Tally


def synthetic_documents(n_topics: int, per_topic: int, seed: int) -> list[Document]:
    """Each topic writes 15 words from its own 30-word vocabulary, mixed with 40% shared words."""
    rng = np.random.default_rng(seed)
    docs = []
    for topic in range(n_topics):
        for i in range(per_topic):
            words = [
                f"common{rng.integers(60)}" if rng.random() < 0.4 else f"topic{topic}word{rng.integers(30)}"
                for _ in range(15)
            ]
            docs.append(Document(f"t{topic}-{i}", " ".join(words), (f"topic{topic}",), "train"))
    docs.append(Document("multi", "topic0word1 topic1word1", ("topic0", "topic1"), "train"))  # left out
    return docs


@pytest.fixture(scope="module")
def collection() -> meta_cluster.TopicCollection:
    return meta_cluster.topic_collection(synthetic_documents(4, 40, seed=0), min_docs=20)


def test_collection_keeps_single_label_topics(collection):
    assert collection.topics == ("topic0", "topic1", "topic2", "topic3")
    assert collection.X.shape[0] == 160


def test_meta_cluster_reports_every_table_and_figure(collection, capsys):
    args = meta_cluster.parse_args(["--k", "3", "--tuples", "2"])
    summary, n_tuples = meta_cluster.run_experiment(collection, args)
    meta_cluster.print_tables("synthetic", 3, summary, n_tuples)
    printed = capsys.readouterr().out
    assert "Table 3.1" in printed and "Table 3.2" in printed and "Table 3.3" in printed
    assert n_tuples == 2
    variants = {"voting", "unanimous", "weighted", "unanimous_trimmed", "unanimous_purity"}
    assert set(summary["meta"]) == variants
    unanimous = summary["meta"]["unanimous"]
    assert 0.0 <= unanimous["loss"] < 1.0
    assert unanimous["loss"] >= summary["meta"]["voting"]["loss"]  # every tie is a disagreement
    assert summary["meta"]["unanimous_trimmed"]["loss"] <= unanimous["loss"]  # fewer methods to agree
    assert 0.0 <= unanimous["zero_loss_svm"] <= 1.0
    assert unanimous["zero_loss_goal_met"] == all(
        unanimous["zero_loss_svm"] < summary["base"][name] for name in meta_cluster.BASE_NAMES
    )
    assert summary["goal_met"] == unanimous["goal_met"]
    assert set(summary["table_3_2"]["kmeans"]) == {str(loss) for loss in meta_cluster.LOSSES}


def test_collab_cluster_reports_accuracy_by_peers_and_loss(collection, capsys):
    args = collab_cluster.parse_args(["--k", "2", "--tuples", "1", "--peers", "4"])
    result = collab_cluster.run_experiment(collection, args)
    assert "Collaborative clustering" in capsys.readouterr().out
    assert set(result["accuracy"]) == {"1", "2", "4", "centralised"}
    for row in result["accuracy"].values():
        assert all(0.0 <= value <= 1.0 for value in row.values())
    assert result["error"]["4"]["0.0"] == pytest.approx(1 - result["accuracy"]["4"]["0.0"], abs=1e-4)
    assert 0.0 < result["shared_fraction"] < 0.5
    assert result["median_model_bytes"] > 0
    accuracy = result["accuracy"]
    gain = result["goals"]["gain_at_loss_0_by_peers"]["4"]
    assert gain == pytest.approx(accuracy["4"]["0.0"] - accuracy["1"]["0.0"], abs=2e-4)


def test_tally_restricted_counts_decided_documents_at_each_loss():
    tally = Tally()
    clustering = Clustering(labels=np.array([0, 0, 1, 0]), confidence=np.array([0.9, 0.8, 0.7, 0.1]), k=2)
    collab_cluster.tally_restricted(tally, "x", [(np.array([0, 0, 1, 1]), clustering)])
    assert tally.accuracy("x", 0.0) == pytest.approx(3 / 4)
    assert tally.accuracy("x", 0.3) == 1.0  # round(0.3 * 4) = 1 dismissed: the least confident, wrong one
    assert tally.decided[("x", 0.5)] == 2
