"""Peer splits of the collaborative experiments (thesis 3.4.4)."""

import numpy as np
import pytest

from simnet.experiments.peersplit import (
    peer_groups,
    shared_fraction,
    split_with_overlap,
    stratified_split_with_overlap,
)


def test_sixteen_peers_get_equal_subsets_with_about_fifteen_percent_shared():
    rng = np.random.default_rng(1)
    subsets = stratified_split_with_overlap([range(0, 200), range(200, 400)], 16, 0.15, rng)
    sizes = {len(s) for s in subsets}
    assert max(sizes) - min(sizes) <= 2
    assert 0.10 <= shared_fraction(subsets) <= 0.20
    assert set().union(*map(set, subsets)) == set(range(400))
    assert all(len(set(s)) == len(s) for s in subsets)


def test_ring_sharing_gives_two_b_over_c_plus_b():
    # chunk 40, b = round(40 * 0.3 / 1.7) = 7: shared 14 / 47
    subsets = split_with_overlap(list(range(160)), 4, 0.3, np.random.default_rng(0))
    assert all(len(s) == 47 for s in subsets)
    assert shared_fraction(subsets) == pytest.approx(14 / 47)


def test_without_overlap_the_subsets_partition_the_items():
    subsets = split_with_overlap(list(range(10)), 3, 0.0, np.random.default_rng(0))
    assert sorted(x for s in subsets for x in s) == list(range(10))
    assert shared_fraction(subsets) == 0.0


def test_peer_groups_cover_every_peer_once():
    groups = peer_groups(16, 4, np.random.default_rng(0))
    assert len(groups) == 4 and sorted(p for g in groups for p in g) == list(range(16))
    with pytest.raises(ValueError):
        peer_groups(16, 3, np.random.default_rng(0))
