"""User profiles as plain data, their similarity and clustering, and ranking with aggregated profiles
(thesis 4.1.2-4.1.3).

A profile is a user's fitted ranking weights with their queries and marked documents (eq. 4.4-4.7),
identified by URL so peers can share and aggregate profiles. A community clusters profiles by PFsim
(eq. 4.9) with k-means (k = 4 in the thesis): each cluster's weights are its centroid (4.10), its documents
the union of its members' marks with conflicting documents dropped (4.12, 4.13). For a new query the
global profile whose documents best match the first results (4.15) lends its weights; none matching (all
sim <= 0) means the default weights.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from crawler.errors import CrawlerError
from crawler.feedback import IRRELEVANT, feedback_of, latest_marks, personal_weights
from crawler.query import DEFAULT_USER, SIGNALS
from crawler.ranking import RankingWeights
from crawler.repository import Repository

PROFILE_VERSION = 1
PROFILE_CLUSTERS = 4  # the thesis's k
KMEANS_ITERATIONS = 50
MAX_PROFILE_URLS = 10_000  # bound on a shared profile's document lists (plain data from peers)


class ProfileError(CrawlerError, ValueError):
    """A profile in plain-data form that does not have the expected shape."""


@dataclass(frozen=True)
class Profile:
    """P = <w, Q, D+, D-> (eq. 4.11); a single user's profile or a cluster's global profile."""

    name: str
    weights: RankingWeights
    queries: tuple[str, ...] = ()
    positives: tuple[str, ...] = ()  # URLs
    negatives: tuple[str, ...] = ()
    members: tuple[str, ...] = ()  # the profiles aggregated into a global profile

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": PROFILE_VERSION,
            "name": self.name,
            "weights": self.weights.to_dict(),
            "queries": list(self.queries),
            "positives": list(self.positives),
            "negatives": list(self.negatives),
            "members": list(self.members),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Profile:
        """A profile received from a peer: validated, never trusted beyond its shape."""
        if not isinstance(data, Mapping) or data.get("version") != PROFILE_VERSION:
            raise ProfileError(f"a profile must be a mapping with version {PROFILE_VERSION}")
        try:
            weights = RankingWeights.from_dict(data["weights"])
            lists = {
                key: tuple(str(v) for v in data.get(key, ()))
                for key in ("queries", "positives", "negatives", "members")
            }
            name = str(data["name"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ProfileError(f"malformed profile: {exc}") from exc
        if any(len(v) > MAX_PROFILE_URLS for v in lists.values()):
            raise ProfileError(f"a profile may list at most {MAX_PROFILE_URLS} queries or documents")
        if not np.all(np.isfinite(weights.as_array())) or np.any(np.abs(weights.as_array()) > 1.0):
            raise ProfileError("profile weights must be finite numbers in [-1, 1]")
        return cls(name, weights, **lists)


def build_profile(repo: Repository, user: str = DEFAULT_USER) -> Profile:
    """The user's profile from their marks: fitted weights (default when nothing to fit), queries, D+, D-."""
    marks = latest_marks(feedback_of(repo, user))
    weights = personal_weights(repo, user) or RankingWeights()
    queries = tuple(dict.fromkeys(m.query for m in marks if m.query))
    positives = tuple(dict.fromkeys(m.url for m in marks if m.kind != IRRELEVANT))
    negatives = tuple(dict.fromkeys(m.url for m in marks if m.kind == IRRELEVANT))
    return Profile(user, weights, queries, positives, negatives)


def profile_similarity(a: Profile | RankingWeights, b: Profile | RankingWeights) -> float:
    """PFsim (eq. 4.9): 1 - sum_k |w_k^a - w_k^b| / (2 N_f); 1 for equal weights, 0 for opposite ones."""
    wa = (a.weights if isinstance(a, Profile) else a).as_array()
    wb = (b.weights if isinstance(b, Profile) else b).as_array()
    return 1.0 - float(np.abs(wa - wb).sum()) / (2 * len(SIGNALS))


def cluster_profiles(profiles: Sequence[Profile], k: int = PROFILE_CLUSTERS) -> list[Profile]:
    """k-means over the profiles' weights with PFsim as the similarity (assignment by L1 distance,
    centroids as means, eq. 4.10), farthest-first initialisation from the first profile (deterministic).
    Returns the non-empty clusters' global profiles."""
    if not profiles:
        return []
    W = np.array([p.weights.as_array() for p in profiles])
    k = min(k, len({tuple(row) for row in W}))
    centroids = _farthest_first(W, k)
    labels = np.full(len(W), -1)
    for _ in range(KMEANS_ITERATIONS):
        new = np.abs(W[:, None, :] - centroids[None, :, :]).sum(axis=2).argmin(axis=1)
        if np.array_equal(new, labels):
            break
        labels = new
        centroids = np.array(
            [W[labels == c].mean(axis=0) if np.any(labels == c) else centroids[c] for c in range(k)]
        )
    return [
        global_profile(
            f"profile-{c + 1}", [p for p, label in zip(profiles, labels, strict=True) if label == c]
        )
        for c in range(k)
        if np.any(labels == c)
    ]


def _farthest_first(W: np.ndarray, k: int) -> np.ndarray:
    chosen = [0]
    while len(chosen) < k:
        distance = np.abs(W[:, None, :] - W[chosen][None, :, :]).sum(axis=2).min(axis=1)
        chosen.append(int(distance.argmax()))
    return W[chosen].astype(np.float64)


def global_profile(name: str, members: Sequence[Profile]) -> Profile:
    """A cluster's profile: centroid weights (4.10); D+ and D- as unions minus the other side (4.12, 4.13)."""
    weights = RankingWeights.from_array(np.mean([m.weights.as_array() for m in members], axis=0))
    positives = dict.fromkeys(u for m in members for u in m.positives)
    negatives = dict.fromkeys(u for m in members for u in m.negatives)
    return Profile(
        name=name,
        weights=weights,
        queries=tuple(dict.fromkeys(q for m in members for q in m.queries)),
        positives=tuple(u for u in positives if u not in negatives),
        negatives=tuple(u for u in negatives if u not in positives),
        members=tuple(m.name for m in members),
    )


def profile_match(top_urls: Sequence[str], profile: Profile) -> float:
    """sim(q, P) of eq. 4.15: position-weighted (TopK - l + 1)/(TopK/2) count of the first results in D+
    minus those in D-, each normalised by its set's size (the thesis's literal formula)."""
    top_k = len(top_urls)
    if top_k == 0:
        return 0.0
    positives, negatives = set(profile.positives), set(profile.negatives)
    total = 0.0
    for position, url in enumerate(top_urls, start=1):
        weight = (top_k - position + 1) / (top_k / 2)
        plus = (url in positives) / len(positives) if positives else 0.0
        minus = (url in negatives) / len(negatives) if negatives else 0.0
        total += weight * (plus - minus)
    return total


def choose_profile(top_urls: Sequence[str], profiles: Sequence[Profile]) -> Profile | None:
    """The profile with the highest positive match for these first results, or None (use the default)."""
    best, best_sim = None, 0.0
    for profile in profiles:
        sim = profile_match(top_urls, profile)
        if sim > best_sim:
            best, best_sim = profile, sim
    return best
