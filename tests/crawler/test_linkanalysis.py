import numpy as np
import pytest

from crawler.linkanalysis import (
    LinkGraph,
    bharat_henzinger_weights,
    hits,
    pagerank,
    select_archetypes,
)


def graph(hosts, edges):
    return LinkGraph.build(dict(enumerate(hosts)), edges)


def test_build_drops_self_links_repeats_and_unknown_nodes():
    g = graph(["a", "b"], [(0, 1), (0, 1), (1, 1), (0, 7)])
    assert g.sources.tolist() == [0] and g.targets.tolist() == [1]


def test_bharat_henzinger_weights_by_hand():
    # hosts: x has pages 0, 1; y has pages 2, 3; z has page 4
    g = graph(["x", "x", "y", "y", "z"], [(0, 2), (1, 2), (0, 3), (4, 2), (0, 1)])
    auth, hub = bharat_henzinger_weights(g)
    weights = {(int(s), int(t)): (a, h) for s, t, a, h in zip(g.sources, g.targets, auth, hub, strict=True)}
    assert weights[(0, 1)] == (0.0, 0.0)  # same host
    assert weights[(0, 2)] == (0.5, 0.5)  # host x sends 2 links to page 2; page 0 sends 2 links to host y
    assert weights[(1, 2)] == (0.5, 1.0)
    assert weights[(0, 3)] == (1.0, 0.5)
    assert weights[(4, 2)] == (1.0, 1.0)


def test_hits_on_a_star_with_hand_computed_scores():
    # three hubs on their own hosts all point to authorities 3 and 4; hub 0 also to 5
    g = graph(["h0", "h1", "h2", "a", "b", "c"], [(0, 3), (1, 3), (2, 3), (0, 4), (1, 4), (2, 4), (0, 5)])
    scores = hits(g, iterations=50)
    a, h = scores.authority, scores.hub
    # the principal eigenvectors of the hand-made 3x3 system: authorities 3, 4 equal and above 5
    assert a[3] == pytest.approx(a[4])
    assert a[3] > a[5] > 0
    assert h[0] > h[1] == pytest.approx(h[2])
    assert a[:3].tolist() == [0.0, 0.0, 0.0] and h[3:].tolist() == [0.0, 0.0, 0.0]
    assert np.linalg.norm(a) == pytest.approx(1.0)
    m = np.zeros((6, 6))
    m[[0, 1, 2, 0, 1, 2, 0], [3, 3, 3, 4, 4, 4, 5]] = 1.0
    _values, vectors = np.linalg.eigh(m.T @ m)
    expected = np.abs(vectors[:, -1])
    assert a == pytest.approx(expected, abs=1e-6)


def test_hits_ignores_links_within_a_host():
    g = graph(["x", "x", "y"], [(0, 1), (2, 1)])
    a = hits(g).authority
    assert a[1] == pytest.approx(1.0) and a[0] == 0.0


def test_pagerank_of_a_cycle_is_uniform_and_sums_to_one():
    p = pagerank(graph(["a", "b", "c"], [(0, 1), (1, 2), (2, 0)]))
    assert p == pytest.approx([1 / 3] * 3)


def test_pagerank_by_hand_with_a_dead_end():
    # 0 -> 1, 0 -> 2, 1 -> 2; 2 is a dead end and jumps uniformly
    d = 0.15
    p = pagerank(graph(["a", "b", "c"], [(0, 1), (0, 2), (1, 2)]), damping=d, iterations=200)
    # solve p = (1-d) L^T p + (d * live + dead) / 3 exactly
    L = np.array([[0, 0.5, 0.5], [0, 0, 1.0], [0, 0, 0]])
    n = 3
    m = np.eye(n) - (1 - d) * L.T - np.outer(np.ones(n), np.array([d, d, 1.0])) / n
    m[-1] = 1.0
    expected = np.linalg.solve(m, np.array([0, 0, 1.0]))
    assert p == pytest.approx(expected, abs=1e-9)


def test_confidence_weighted_pagerank_follows_relevant_targets():
    g = graph(["a", "b", "c"], [(0, 1), (0, 2), (1, 0), (2, 0)])
    plain = pagerank(g)
    weighted = pagerank(g, confidence=np.array([1.0, 3.0, 1.0]))
    assert plain[1] == pytest.approx(plain[2])
    assert weighted[1] > weighted[2]
    # negative confidence counts as zero: all of 0's weight goes to 1
    only = pagerank(g, confidence=np.array([1.0, 1.0, -2.0]), damping=0.0, iterations=400)
    assert only[2] == pytest.approx(0.0, abs=1e-9)


def test_archetypes_follow_the_relaxed_rule():
    authority = np.array([0.9, 0.8, 0.1, 0.05, 0.0])
    confidence = np.array([0.2, 1.5, 2.0, 1.8, 3.0])
    hub = np.array([0.0, 0.3, 0.9, 0.0, 0.1])
    candidates = np.array([0, 1, 2, 3])  # node 4 is not an accepted page of the topic
    chosen = select_archetypes(
        authority,
        hub,
        confidence,
        candidates,
        mean_training_confidence=1.0,
        mean_training_authority=0.07,
        n_auth=2,
        n_conf=2,
        n_hub=1,
    )
    assert chosen.by_authority == (1,)  # 0 has a low confidence
    assert chosen.by_confidence == (2,)  # 3 has authority below the training mean
    assert chosen.chosen == (1, 2)
    assert chosen.hubs == (2,)


def test_no_candidates_no_archetypes():
    empty = select_archetypes(np.zeros(2), np.zeros(2), np.zeros(2), np.array([]), 0, 0, 3, 3, 3)
    assert empty.chosen == () and empty.hubs == ()
