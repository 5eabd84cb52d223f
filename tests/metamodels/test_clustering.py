"""Clustering bases: k-means with preclustering, iterative feature selection, SVD + k-means, restrictive
clustering, clustering accuracy (eq. 3.20), MI cluster labels, and the travelling clustering model."""

from __future__ import annotations

import math

import msgpack
import numpy as np
import pytest
import scipy.sparse as sp

from metamodels.clustering import (
    Clustering,
    ClusteringModel,
    cluster_means,
    clustering_accuracy,
    iterative_kmeans,
    kmeans,
    restrict,
    restrict_by_threshold,
    svd_kmeans,
    svd_rank,
    top_terms,
    with_term_labels,
)
from metamodels.errors import ClusteringError, FeatureSpaceMismatch, ModelFormatError
from metamodels.features import FeatureConfig, l2_normalize_rows
from metamodels.meta_functions import ABSTAIN_LABEL

CONFIG = FeatureConfig(n_features=2**10)


def topic_documents(
    k: int, per_topic: int, *, seed: int, noise: float = 0.3
) -> tuple[sp.csr_matrix, np.ndarray]:
    """Documents of k topics: each draws 12 terms from its topic's 40-term block and, with probability
    `noise` per term, from a shared 200-term block instead."""
    rng = np.random.default_rng(seed)
    rows, cols = [], []
    truth = np.repeat(np.arange(k), per_topic)
    for doc, topic in enumerate(truth):
        for _ in range(12):
            column = 600 + rng.integers(200) if rng.random() < noise else topic * 40 + rng.integers(40)
            rows.append(doc)
            cols.append(column)
    counts = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(truth.size, CONFIG.n_features))
    return l2_normalize_rows(counts), truth


@pytest.mark.parametrize("method", [kmeans, iterative_kmeans, svd_kmeans])
def test_base_method_recovers_well_separated_topics(method):
    X, truth = topic_documents(3, 60, seed=1)
    options = {iterative_kmeans: {"df_top": 300, "mi_top": 60}}.get(method, {})
    fit = method(X, 3, CONFIG, seed=7, **options)
    assert fit.clustering.labels.shape == truth.shape
    assert clustering_accuracy(truth, fit.clustering.labels) >= 0.95


def test_svd_rank_is_the_thesis_two_for_two_clusters_and_k_above():
    assert [svd_rank(k) for k in (1, 2, 3, 5, 8)] == [2, 2, 3, 5, 8]
    assert svd_rank(3, minimum=4) == 4


def test_svd_default_rank_separates_five_topics_that_rank_two_merges():
    X, truth = topic_documents(5, 40, seed=5)
    # five symmetric topics: their centroids span five dimensions, a rank-2 projection squeezes them together
    two = svd_kmeans(X, 5, CONFIG, seed=3, rank=2).clustering
    default = svd_kmeans(X, 5, CONFIG, seed=3)
    assert default.model.projection is not None and default.model.projection.shape[0] == 5
    assert clustering_accuracy(truth, default.clustering.labels) >= 0.95
    assert clustering_accuracy(truth, two.labels) < 0.9


@pytest.mark.parametrize("method", [kmeans, iterative_kmeans, svd_kmeans])
def test_base_method_is_deterministic_for_a_seed(method):
    X, _ = topic_documents(3, 40, seed=2, noise=0.7)
    first = method(X, 3, CONFIG, seed=11).clustering
    second = method(X, 3, CONFIG, seed=11).clustering
    assert np.array_equal(first.labels, second.labels)
    assert np.array_equal(first.confidence, second.confidence)


@pytest.mark.parametrize("method", [kmeans, iterative_kmeans, svd_kmeans])
def test_confidence_is_full_space_cosine_to_the_assigned_centroid(method):
    X, _ = topic_documents(3, 30, seed=3, noise=0.6)
    fit = method(
        X, 3, CONFIG, seed=0, **({"df_top": 300, "mi_top": 60} if method is iterative_kmeans else {})
    )
    model = fit.model
    in_space = model.centroids if model.projection is None else model.centroids @ model.projection
    centroids = np.zeros((3, CONFIG.n_features))
    centroids[:, model.feature_indices] = in_space
    similarity = (X @ centroids.T) / np.linalg.norm(centroids, axis=1)
    labels = fit.clustering.labels
    assert np.allclose(fit.clustering.confidence, similarity[np.arange(labels.size), labels], atol=1e-5)
    if model.projection is None:  # SVD takes labels in V^T coordinates, the others by this very cosine
        assert np.array_equal(labels, similarity.argmax(axis=1))


def test_centroids_are_member_means():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    means = cluster_means(X, np.array([0, 0, 1]), 3)
    assert np.allclose(means, [[0.5, 0.5], [1.0, 1.0], [0.0, 0.0]])


def test_too_few_documents_for_k_is_refused():
    X, _ = topic_documents(2, 1, seed=0)
    with pytest.raises(ClusteringError, match="cannot form 3 clusters"):
        kmeans(X, 3, CONFIG, seed=0)


def test_restrict_dismisses_the_least_confident_share():
    clustering = Clustering(
        labels=np.array([0, 1, 0, 1, 2]), confidence=np.array([0.9, 0.1, 0.5, 0.3, 0.7]), k=3
    )
    restricted = restrict(clustering, 0.4)
    assert restricted.labels.tolist() == [0, ABSTAIN_LABEL, 0, ABSTAIN_LABEL, 2]
    assert restricted.loss == pytest.approx(0.4)
    assert restrict(clustering, 0.0).labels.tolist() == clustering.labels.tolist()


def test_threshold_restriction_keeps_documents_inside_the_radius():
    clustering = Clustering(labels=np.array([0, 1, 1]), confidence=np.array([0.9, 0.2, 0.6]), k=2)
    assert restrict_by_threshold(clustering, 0.5).labels.tolist() == [0, ABSTAIN_LABEL, 1]


def test_restriction_lowers_error_on_noisy_topics():
    X, truth = topic_documents(3, 80, seed=4, noise=0.75)
    clustering = kmeans(X, 3, CONFIG, seed=1).clustering
    plain = 1 - clustering_accuracy(truth, clustering.labels)
    restricted = 1 - clustering_accuracy(truth, restrict(clustering, 0.5).labels)
    assert restricted < plain


def test_accuracy_takes_best_permutation_and_ignores_dismissed():
    truth = np.array([0, 0, 0, 1, 1, 2, 2])
    labels = np.array([2, 2, 1, 0, 0, 1, ABSTAIN_LABEL])
    # best match: class 0 -> cluster 2 (2 docs), class 1 -> cluster 0 (2), class 2 -> cluster 1 (1): 5 of 6
    assert clustering_accuracy(truth, labels) == pytest.approx(5 / 6)
    assert math.isnan(clustering_accuracy(truth, np.full(7, ABSTAIN_LABEL)))


def test_top_terms_name_each_cluster_by_its_own_vocabulary():
    docs = [
        ["ball", "goal", "the"],
        ["goal", "team", "the"],
        ["atom", "quark", "the"],
        ["quark", "lab", "the"],
    ]
    terms = top_terms(docs, np.array([0, 0, 1, 1]), 2, count=2)
    assert terms == (("goal", "ball"), ("quark", "atom"))


@pytest.mark.parametrize("method", [kmeans, iterative_kmeans, svd_kmeans])
def test_model_round_trip_is_exact_and_reproduces_labels(method):
    X, _ = topic_documents(3, 30, seed=5)
    fit = method(
        X, 3, CONFIG, seed=3, **({"df_top": 300, "mi_top": 60} if method is iterative_kmeans else {})
    )
    wire = msgpack.packb(fit.model.to_dict())
    loaded = ClusteringModel.from_dict(msgpack.unpackb(wire))
    assert loaded.to_dict() == fit.model.to_dict()
    assert loaded.centroids.dtype == np.float32
    again = loaded.assign(X)
    assert np.array_equal(again.labels, fit.clustering.labels)
    assert np.array_equal(again.confidence, fit.clustering.confidence)


def test_model_with_non_finite_centroids_is_refused_on_load():
    X, _ = topic_documents(2, 20, seed=6)
    data = kmeans(X, 2, CONFIG, seed=0).model.to_dict()
    centroids = np.frombuffer(data["centroids"]["data"], dtype="<f4").copy()
    centroids[0] = np.nan
    data["centroids"]["data"] = centroids.tobytes()
    with pytest.raises(ModelFormatError, match="NaN"):
        ClusteringModel.from_dict(data)


def test_model_with_mismatched_dimensions_is_refused_on_load():
    X, _ = topic_documents(2, 20, seed=6)
    data = kmeans(X, 2, CONFIG, seed=0).model.to_dict()
    data["feature_indices"] = data["feature_indices"][:-8]
    with pytest.raises(ModelFormatError, match="dimensions"):
        ClusteringModel.from_dict(data)


def test_model_with_missing_field_is_refused_on_load():
    X, _ = topic_documents(2, 20, seed=6)
    data = kmeans(X, 2, CONFIG, seed=0).model.to_dict()
    del data["centroids"]
    with pytest.raises(ModelFormatError, match="malformed"):
        ClusteringModel.from_dict(data)


def test_model_refuses_documents_from_another_feature_space():
    X, _ = topic_documents(2, 20, seed=6)
    model = kmeans(X, 2, CONFIG, seed=0).model
    with pytest.raises(FeatureSpaceMismatch):
        model.assign(sp.csr_matrix((3, 2**11)))


def test_model_named_by_top_terms_keeps_them_through_the_round_trip():
    X, _ = topic_documents(2, 20, seed=6)
    fit = kmeans(X, 2, CONFIG, seed=0)
    terms = [[f"word{label}", "shared"] for label in fit.clustering.labels]
    named = with_term_labels(fit.model, terms, fit.clustering.labels, count=3)
    assert named.top_terms == (("word0",), ("word1",))
    assert named.names == ("word0", "word1")
    assert ClusteringModel.from_dict(named.to_dict()).top_terms == named.top_terms
