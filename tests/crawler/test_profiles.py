"""Profiles: PFsim (4.9), k-means clustering with centroid weights (4.10), global profile sets (4.12-4.13),
matching a query's first results (4.15), plain-data sharing."""

from __future__ import annotations

import pytest

from crawler.profiles import (
    Profile,
    ProfileError,
    choose_profile,
    cluster_profiles,
    global_profile,
    profile_match,
    profile_similarity,
)
from crawler.ranking import RankingWeights


def profile(name, weights, positives=(), negatives=()) -> Profile:
    return Profile(name, RankingWeights(*weights), ("q",), tuple(positives), tuple(negatives))


def test_similarity_is_one_for_equal_and_zero_for_opposite_weights():
    assert profile_similarity(profile("a", (1, 0, 0, 0)), profile("b", (1, 0, 0, 0))) == 1.0
    assert profile_similarity(RankingWeights(1, 1, 1, 1), RankingWeights(-1, -1, -1, -1)) == 0.0
    assert profile_similarity(RankingWeights(1, 0, 0, 0), RankingWeights(0, 0, 0, 0)) == 1 - 1 / 8


def test_profiles_cluster_into_groups_with_centroid_weights():
    members = [
        profile("t1", (1.0, 0, 0, 0)),
        profile("t2", (0.8, 0, 0, 0)),
        profile("c1", (0, 1.0, 0.2, 0)),
        profile("c2", (0, 0.6, 0.0, 0)),
    ]
    clusters = cluster_profiles(members, k=2)
    by_members = {c.members: c for c in clusters}
    assert set(by_members) == {("t1", "t2"), ("c1", "c2")}
    assert by_members[("t1", "t2")].weights == RankingWeights(0.9, 0.0, 0.0, 0.0)
    assert by_members[("c1", "c2")].weights.confidence == pytest.approx(0.8)


def test_cluster_count_never_exceeds_distinct_profiles():
    same = [profile(f"p{i}", (0.5, 0.5, 0, 0)) for i in range(3)]
    assert len(cluster_profiles(same, k=4)) == 1


def test_global_profile_drops_documents_marked_both_ways():
    merged = global_profile(
        "g", [profile("a", (1, 0, 0, 0), ["x", "y"], ["z"]), profile("b", (0, 0, 0, 0), ["z"], ["y", "w"])]
    )
    assert merged.positives == ("x",)
    assert merged.negatives == ("w",)


def test_match_weighs_positions_and_normalises_by_set_sizes():
    p = profile("p", (1, 0, 0, 0), positives=["a", "b"], negatives=["c"])
    # TopK = 4: position weights 2, 1.5, 1, 0.5
    assert profile_match(["a", "c", "x", "b"], p) == pytest.approx(2 * 0.5 - 1.5 * 1 + 0.5 * 0.5)


def test_best_matching_profile_is_chosen_else_none():
    science = profile("science", (1, 0, 0, 0), positives=["s1", "s2"])
    movies = profile("movies", (0, 1, 0, 0), positives=["m1"], negatives=["s1"])
    assert choose_profile(["m1", "x"], [science, movies]) is movies
    assert choose_profile(["s1", "s2"], [science, movies]) is science
    assert choose_profile(["x", "y"], [science, movies]) is None


def test_profiles_round_trip_as_plain_data_and_reject_bad_weights():
    p = profile("a", (0.5, -0.5, 0, 1), ["x"], ["y"])
    assert Profile.from_dict(p.to_dict()) == p
    bad = p.to_dict() | {"weights": {"text": 7.0}}
    with pytest.raises(ProfileError, match="in \\[-1, 1\\]"):
        Profile.from_dict(bad)
    with pytest.raises(ProfileError, match="version"):
        Profile.from_dict({"name": "x"})
