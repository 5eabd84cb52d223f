"""Meta clustering: purity (eq. 3.7, Figure 3.2), purity meta mapping (exact and greedy), meta functions on
mapped labels, the confidence vote, the zero-loss variant and models applied across peers."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from metamodels.clustering import clustering_accuracy, kmeans
from metamodels.errors import ClusteringError
from metamodels.features import FeatureConfig, l2_normalize_rows
from metamodels.meta_clustering import (
    MetaMapping,
    agreement_weights,
    apply_models,
    average_nmi,
    classify_dismissed,
    cluster_jaccard,
    cluster_sizes,
    combine,
    confidence_vote,
    consensus,
    hungarian_onto,
    map_by_similarity,
    map_exact,
    map_incremental,
    map_pairwise,
    meta_mapping,
    method_agreement,
    overlap_counts,
    pair_agreement,
    purity,
    ranking_weights,
    without_weakest,
)
from metamodels.meta_functions import ABSTAIN_LABEL, k_class_meta

STRATEGIES = [map_by_similarity, map_exact, map_incremental, map_pairwise]


def test_purity_of_figure_3_2_divides_the_variance_by_the_cluster_size():
    # C11 has 12 documents, overlapping C21 in 4 and C22 in 9: population variance 6.25, printed purity 0.52
    assert purity([4, 9], 12) == pytest.approx(6.25 / 12)
    assert round(purity([4, 9], 12), 2) == 0.52


def test_purity_is_zero_for_an_evenly_split_or_empty_cluster():
    assert purity([5, 5, 5], 15) == 0.0
    assert purity([0, 0], 0) == 0.0


def test_overlap_counts_and_sizes_skip_dismissed_documents():
    labelings = np.array([[0, 1], [0, 1], [1, 0], [1, ABSTAIN_LABEL]])
    assert overlap_counts(labelings, 2).tolist() == [[0, 2], [1, 0]]
    assert cluster_sizes(labelings, 2).tolist() == [[2, 2], [1, 2]]


def figure_like_pair() -> np.ndarray:
    """C1: cluster 0 = docs 0-12, cluster 1 = docs 13-19. C2: cluster 0 = docs 0-3 and 13-19, cluster 1 =
    docs 4-12. Overlaps: C11&C21 = 4, C11&C22 = 9, C12&C21 = 7, C12&C22 = 0."""
    first = np.array([0] * 13 + [1] * 7)
    second = np.array([0] * 4 + [1] * 9 + [0] * 7)
    return np.stack([first, second], axis=1)


def test_exact_mapping_of_two_methods_worked_by_hand():
    # purities: C11 6.25/13 = 0.481, C12 12.25/7 = 1.75, C21 2.25/11 = 0.205, C22 20.25/9 = 2.25.
    # C22 is purest; its largest overlap is with C11, so C11 and C22 get meta label 0, C12 and C21 label 1.
    mapping = map_exact(figure_like_pair(), 2)
    assert mapping.maps.tolist() == [[0, 1], [1, 0]]
    assert mapping.cluster_purity[0, 0] == pytest.approx(6.25 / 13)
    assert mapping.cluster_purity[1, 1] == pytest.approx(20.25 / 9)
    assert mapping.cluster_purity[0, 1] == 0.0  # the last step has a single combination: no variance
    assert mapping.ranking == (1, 0)


def permuted_methods() -> tuple[np.ndarray, np.ndarray]:
    """Three clusterings of 9 documents of 3 themes: A is the truth, B and C permute the labels
    (B: 0->2, 1->0, 2->1; C: 0->1, 1->2, 2->0) and each misplaces one document (B doc 0, C doc 8)."""
    truth = np.repeat(np.arange(3), 3)
    b = np.array([2, 0, 1])[truth]
    b[0] = 0
    c = np.array([1, 2, 0])[truth]
    c[8] = 1
    return truth, np.stack([truth, b, c], axis=1)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_mapping_undoes_the_label_permutations(strategy):
    _, labelings = permuted_methods()
    mapping = strategy(labelings, 3)
    for method, permutation in ((1, [2, 0, 1]), (2, [1, 2, 0])):
        for theme in range(3):
            assert mapping.maps[method, permutation[theme]] == mapping.maps[0, theme]
    mapped = mapping.apply(labelings)
    agree = np.ones(9, dtype=bool)
    agree[[0, 8]] = False
    assert np.all(mapped[agree] == mapped[agree, :1])


def test_unanimous_meta_abstains_exactly_where_a_method_disagrees():
    truth, labelings = permuted_methods()
    mapped = map_exact(labelings, 3).apply(labelings)
    meta = combine(mapped, 3, "unanimous")
    assert np.flatnonzero(meta == ABSTAIN_LABEL).tolist() == [0, 8]
    assert clustering_accuracy(truth, meta) == 1.0


def test_voting_meta_decides_every_document_by_majority():
    truth, labelings = permuted_methods()
    mapped = map_exact(labelings, 3).apply(labelings)
    meta = combine(mapped, 3, "voting")
    assert np.all(meta != ABSTAIN_LABEL)
    assert clustering_accuracy(truth, meta) == 1.0


def test_weighted_meta_follows_the_heavier_method_and_abstains_on_a_tie():
    mapped = np.array([[0, 1, 1], [0, 0, 1], [1, 0, 2]])
    meta = combine(mapped, 3, "weighted", weights=np.array([0.5, 0.3, 0.2]))
    assert meta.tolist() == [ABSTAIN_LABEL, 0, 1]
    with pytest.raises(ClusteringError, match="needs weights"):
        combine(mapped, 3, "weighted")


def test_ranking_weights_follow_the_purity_ranking():
    purities = np.array([[1.0, 3.0], [2.0, 0.0], [5.0, 5.0]])  # mean purity 2, 1, 5: ranking 2, 0, 1
    mapping = MetaMapping(maps=np.tile(np.arange(2), (3, 1)), cluster_purity=purities)
    assert mapping.ranking == (2, 0, 1)
    assert ranking_weights(mapping).tolist() == pytest.approx([2 / 6, 1 / 6, 3 / 6])


def test_rank_weighted_meta_abstains_when_the_two_lesser_methods_outvote_the_purest():
    mapping = MetaMapping(
        maps=np.tile(np.arange(2), (3, 1)), cluster_purity=np.array([[3.0] * 2, [2.0] * 2, [1.0] * 2])
    )
    mapped = np.array([[0, 1, 1], [0, 0, 1], [0, 1, 2]])
    meta = combine(mapped, 3, "weighted", weights=ranking_weights(mapping))
    assert meta.tolist() == [ABSTAIN_LABEL, 0, 0]


# m0 and m1 are the same clustering under swapped labels; m2 crosses them: its best match with either
# keeps 2 + 2 of the 6 documents
AGREEMENT_CASE = np.array([[0, 1, 0], [0, 1, 1], [0, 1, 0], [1, 0, 1], [1, 0, 0], [1, 0, 1]])


def test_pair_agreement_takes_the_best_match_over_documents_both_decided():
    first, second, third = AGREEMENT_CASE.T
    assert pair_agreement(first, second, 2) == pytest.approx(1.0)
    assert pair_agreement(first, third, 2) == pytest.approx(4 / 6)
    assert pair_agreement(third, first, 2) == pytest.approx(4 / 6)
    # dismissing documents 1 and 4 from the third leaves 4 shared ones, all matched (0->0, 1->1)
    third_restricted = np.where(np.isin(np.arange(6), [1, 4]), ABSTAIN_LABEL, third)
    assert pair_agreement(first, third_restricted, 2) == pytest.approx(1.0)
    assert np.isnan(pair_agreement(np.full(3, ABSTAIN_LABEL), np.array([0, 1, 0]), 2))


def test_method_agreement_is_the_mean_over_the_other_methods_and_finds_the_crossing_one():
    agreement = method_agreement(AGREEMENT_CASE, 2)
    assert agreement.tolist() == pytest.approx([(1 + 4 / 6) / 2, (1 + 4 / 6) / 2, 4 / 6])
    assert without_weakest(agreement).tolist() == [0, 1]


def test_without_weakest_keeps_at_least_two_methods():
    assert without_weakest(np.array([0.9, 0.2])).tolist() == [0, 1]
    assert without_weakest(np.array([0.7, 0.5, 0.5, 0.8])).tolist() == [0, 2, 3]  # first of a tie goes


def test_agreement_weights_count_agreement_above_chance():
    # agreement 5/6, 5/6, 4/6 with k = 2: above chance (1/2) 1/3, 1/3, 1/6
    weights = agreement_weights(method_agreement(AGREEMENT_CASE, 2), 2)
    assert weights.tolist() == pytest.approx([0.4, 0.4, 0.2])
    assert agreement_weights(np.array([0.2, 0.3]), 3).tolist() == pytest.approx([0.5, 0.5])  # none above 1/3


def test_agreement_weighted_meta_follows_the_agreeing_pair():
    mapped = np.array([[0, 0, 1], [1, 1, 0], [0, 1, 1]])
    meta = combine(mapped, 2, "weighted", weights=np.array([0.4, 0.4, 0.2]))
    assert meta.tolist() == [0, 1, 1]


def test_mapping_keeps_dismissed_documents_dismissed():
    labelings = np.array([[0, 1], [1, 0], [ABSTAIN_LABEL, 0], [0, ABSTAIN_LABEL]])
    mapped = map_exact(labelings, 2).apply(labelings)
    assert mapped[2, 0] == ABSTAIN_LABEL and mapped[3, 1] == ABSTAIN_LABEL
    assert mapped[0, 0] == mapped[0, 1]


def test_exact_mapping_refuses_a_combinatorial_explosion_and_auto_maps_many_methods():
    labelings = np.zeros((5, 13), dtype=np.int64)
    with pytest.raises(ClusteringError, match="incremental"):
        map_exact(labelings, 3)
    assert meta_mapping(labelings, 3).maps.shape == (13, 3)


def test_hungarian_onto_keeps_the_most_shared_documents():
    reference = np.array([0, 0, 1, 1, 2, 2, 2])
    other = np.array([2, 2, 0, 0, 1, 1, 0])  # doc 6 is the one disagreement
    assert hungarian_onto(reference, other, 3).tolist() == [1, 2, 0]


def test_cluster_jaccard_worked_by_hand():
    # method 0: cluster 0 = {0, 1}, cluster 1 = {2, 3}; method 1: cluster 0 = {0}, cluster 1 = {1, 2}
    labelings = np.array([[0, 0], [0, 1], [1, 1], [1, ABSTAIN_LABEL]])
    expected = [
        [1, 0, 1 / 2, 1 / 3],
        [0, 1, 0, 1 / 3],
        [1 / 2, 0, 1, 0],
        [1 / 3, 1 / 3, 0, 1],
    ]
    assert cluster_jaccard(labelings, 2) == pytest.approx(np.array(expected))


def split_topic_methods() -> np.ndarray:
    """24 documents of topics A (0-11), B (12-17), C (18-23). Method 0 is right, method 1 is right with
    permuted labels, method 2 splits A into {0-5} and {6-11} and lumps B and C into one cluster."""
    topic = np.repeat([0, 1, 2], [12, 6, 6])
    method2 = np.where(topic == 0, (np.arange(24) >= 6).astype(np.int64), 2)
    return np.stack([topic, np.array([2, 0, 1])[topic], method2], axis=1)


def test_similarity_mapping_gives_both_pieces_of_a_split_topic_its_label():
    # Jaccard: each piece of A against A 6/12 = 0.5, the lump against B or C 6/12 = 0.5, the pieces against
    # each other 0. Average linkage joins A, B, C of methods 0 and 1 (distance 0), the lump to B or C and a
    # piece to A (0.5), then the other piece to A (mean of 0.5, 0.5 and 1 = 0.67, below B-C's 0.83).
    labelings = split_topic_methods()
    mapping = map_by_similarity(labelings, 3)
    assert mapping.maps[2, 0] == mapping.maps[2, 1] == mapping.maps[0, 0]
    meta = combine(mapping.apply(labelings), 3, "unanimous")
    assert np.all(meta[:12] == meta[0])  # A kept whole
    assert np.sum(meta[12:] >= 0) == 6  # the lump agrees with B or C, not both
    assert clustering_accuracy(np.repeat([0, 1, 2], [12, 6, 6]), meta) == 1.0


def test_one_to_one_purity_mapping_loses_half_of_a_split_topic():
    labelings = split_topic_methods()
    meta = combine(map_exact(labelings, 3).apply(labelings), 3, "unanimous")
    assert np.sum(meta[:12] >= 0) == 6  # one piece of A had to take another topic's label


def test_similarity_mapping_falls_back_to_one_to_one_when_a_bridging_cluster_joins_the_topics():
    # methods 0 and 1 split 10 + 10 documents right; method 2 puts all but document 0 into one cluster,
    # which bridges both topics, so average linkage joins them and methods 0 and 1 keep a single label
    topic = np.repeat([0, 1], 10)
    bridging = np.zeros(20, dtype=np.int64)
    bridging[0] = 1
    labelings = np.stack([topic, 1 - topic, bridging], axis=1)
    mapping = map_by_similarity(labelings, 2)
    assert all(np.unique(row).size == 2 for row in mapping.maps)
    mapped = mapping.apply(labelings)
    assert np.array_equal(mapped[:, 0], mapped[:, 1])


def test_similarity_mapping_of_one_method_or_one_cluster_is_the_identity():
    assert map_by_similarity(np.array([[1], [0], [2]]), 3).maps.tolist() == [[0, 1, 2]]
    assert map_by_similarity(np.zeros((4, 2), dtype=np.int64), 1).maps.tolist() == [[0], [0]]


def test_incremental_mapping_aligns_many_noisy_methods():
    rng = np.random.default_rng(0)
    truth = rng.integers(4, size=400)
    columns = []
    for _ in range(12):
        noisy = np.where(rng.random(400) < 0.25, rng.integers(4, size=400), truth)
        columns.append(rng.permutation(4)[noisy])
    labelings = np.stack(columns, axis=1)
    for strategy in (map_incremental, map_pairwise):
        meta = combine(strategy(labelings, 4).apply(labelings), 4, "voting")
        assert clustering_accuracy(truth, meta) > 0.95


def test_confidence_vote_sums_confidences_per_label():
    mapped = np.array([[0, 0, 1], [1, 0, ABSTAIN_LABEL]])
    conf = np.array([[0.5, 0.2, 0.9], [0.6, 0.3, 0.8]])
    result = confidence_vote(mapped, conf, 2)
    # doc 0: label 0 has 0.7, label 1 has 0.9 -> 1, lead 0.2 / 3; doc 1: label 1 has 0.6, label 0 0.3
    assert result.labels.tolist() == [1, 1]
    assert result.confidence == pytest.approx([0.2 / 3, 0.3 / 3])


CONFIG = FeatureConfig(n_features=2**10)


def two_topics(per_topic: int, seed: int) -> tuple[sp.csr_matrix, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = np.repeat([0, 1], per_topic)
    rows = np.repeat(np.arange(truth.size), 10)
    cols = np.where(rng.random(rows.size) < 0.4, 500 + rng.integers(100, size=rows.size), 0)
    cols = np.where(cols == 0, truth[rows] * 50 + rng.integers(50, size=rows.size), cols)
    X = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(truth.size, CONFIG.n_features))
    return l2_normalize_rows(X), truth


def test_zero_loss_variant_labels_every_dismissed_document():
    X, truth = two_topics(60, seed=1)
    meta = truth.copy()
    dismissed = np.arange(0, truth.size, 3)
    meta[dismissed] = ABSTAIN_LABEL
    full = classify_dismissed(X, meta, 2)
    assert np.all(full >= 0)
    assert np.array_equal(full[meta >= 0], truth[meta >= 0])
    assert clustering_accuracy(truth, full) > 0.9


def test_zero_loss_variant_needs_two_kept_clusters():
    X, _ = two_topics(5, seed=1)
    with pytest.raises(ClusteringError, match="fewer than two"):
        classify_dismissed(X, np.array([0] * 3 + [ABSTAIN_LABEL] * 7), 2)


def test_models_from_other_peers_meta_cluster_a_peers_own_documents():
    X, truth = two_topics(80, seed=2)
    peers = [np.arange(p, truth.size, 4) for p in range(4)]
    models = [kmeans(X[docs], 2, CONFIG, seed=p).model for p, docs in enumerate(peers)]
    labels, confidences = apply_models(models, X[peers[0]])
    assert labels.shape == confidences.shape == (peers[0].size, 4)
    mapped = meta_mapping(labels, 2).apply(labels)
    meta = confidence_vote(mapped, confidences, 2)
    assert clustering_accuracy(truth[peers[0]], meta.labels) > 0.9


def test_purity_strategy_is_exact_for_few_methods_and_incremental_for_many():
    labelings = split_topic_methods()
    assert meta_mapping(labelings, 3, "purity").maps.tolist() == map_exact(labelings, 3).maps.tolist()
    rng = np.random.default_rng(1)
    many = rng.integers(3, size=(30, 13))
    assert meta_mapping(many, 3, "purity").maps.tolist() == map_incremental(many, 3).maps.tolist()


def test_similarity_mapping_ranks_methods_by_pairwise_purity_worked_by_hand():
    # method 0's clusters overlap method 1's in [4, 9] (13 docs) and [7, 0] (7 docs); method 1's overlap
    # method 0's in [4, 7] (11 docs) and [9, 0] (9 docs): population variance over the cluster's size
    mapping = map_by_similarity(figure_like_pair(), 2)
    expected = [[6.25 / 13, 12.25 / 7], [2.25 / 11, 20.25 / 9]]
    assert mapping.cluster_purity == pytest.approx(np.array(expected))
    assert mapping.ranking == (1, 0)


def test_auto_mapping_is_the_purity_mapping():
    labelings = split_topic_methods()
    assert meta_mapping(labelings, 3).maps.tolist() == map_exact(labelings, 3).maps.tolist()


def test_average_nmi_is_one_for_relabelled_copies_and_zero_for_an_independent_split():
    consensus_labels = np.array([0, 0, 1, 1, ABSTAIN_LABEL])
    copies = np.array([[1, 0], [1, 0], [0, 1], [0, 1], [1, 1]])  # the abstained row does not count
    assert average_nmi(consensus_labels, copies) == pytest.approx(1.0)
    independent = np.array([[0], [1], [0], [1], [0]])
    assert average_nmi(consensus_labels, independent) == pytest.approx(0.0, abs=1e-12)
    assert average_nmi(np.full(5, ABSTAIN_LABEL), copies) == -1.0


def stray_cluster_methods() -> np.ndarray:
    """30 documents of topics A, B, C (10 each): methods 0-2 are right with permuted labels; method 3
    lumps B and C and puts document 0 alone in its third cluster."""
    topic = np.repeat([0, 1, 2], 10)
    stray = np.where(topic == 2, 1, topic)
    stray[0] = 2
    return np.stack([topic, (topic + 1) % 3, (topic + 2) % 3, stray], axis=1)


def test_consensus_keeps_purity_when_a_stray_cluster_makes_the_similarity_mapping_merge_topics():
    labelings = stray_cluster_methods()
    # the stray one-document cluster takes a meta label alone, so B and C share one
    merged = k_class_meta(map_by_similarity(labelings, 3).apply(labelings), 3)
    assert np.unique(merged[10:]).size == 1
    result = consensus(labelings, np.ones(labelings.shape), 3)
    assert result.strategy == "purity"
    assert clustering_accuracy(np.repeat([0, 1, 2], 10), result.clustering.labels) == 1.0


def test_consensus_takes_the_similarity_mapping_when_a_method_splits_a_topic():
    labelings = split_topic_methods()
    result = consensus(labelings, np.ones(labelings.shape), 3)
    assert result.strategy == "similarity"
    assert np.all(result.clustering.labels[:12] == result.clustering.labels[0])
