"""Clustering bases of thesis 3.1.1-3.1.2: k-means, iterative k-means with feature selection, SVD + k-means.

All three are spherical k-means (cosine similarity on L2-normalised rows, centroids as means, eq. 3.1-3.2)
started from a preclustering of a small random sample (k * 20 documents), so a result depends only on the
data and the seed. Each returns a `ClusteringFit` whose `model` is the travelling form of 3.3.3: centroids
plus the encoding of their feature dimensions (hashed feature ids), which a peer applies to its own
documents. Restrictive clustering (3.1.2) uses the cosine similarity to the assigned centroid as the
confidence and dismisses the least confident documents.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment
from sklearn.decomposition import TruncatedSVD

from metamodels.errors import ClusteringError, ModelFormatError
from metamodels.features import FeatureConfig, check_feature_space, l2_normalize_rows
from metamodels.meta_functions import ABSTAIN_LABEL
from metamodels.mi import TermMatrix, mutual_information
from metamodels.restrictive import dismissed_count

MODEL_SCHEMA_VERSION = 1
METHODS = ("kmeans", "iterative_kmeans", "svd_kmeans")

Matrix = sp.csr_matrix | np.ndarray


@dataclass(frozen=True, eq=False)
class Clustering:
    """One method's answer on a document set: a cluster label per document (ABSTAIN_LABEL = dismissed) and
    the confidence behind it (cosine similarity to the assigned centroid)."""

    labels: np.ndarray
    confidence: np.ndarray
    k: int

    @property
    def loss(self) -> float:
        return float(np.mean(self.labels == ABSTAIN_LABEL)) if self.labels.size else 0.0


@dataclass(frozen=True, eq=False)
class ClusteringModel:
    """A clustering model as it travels between peers (thesis 3.3.3): plain arrays, no documents.

    Centroids live on `feature_indices` (the hashed ids of their dimensions; zero elsewhere). A document's
    label is the centroid of highest cosine similarity in the space the method clustered in, and its
    confidence is always the cosine similarity, in the full feature space, between the document and that
    centroid. For k-means and iterative k-means (whose indices are the selected features) the two coincide
    up to the document's norm, which does not change the label. For SVD + k-means the centroids are stored
    in the rank-r span of the orthonormal `projection` rows; labels are taken in V^T coordinates (divided by
    the singular values `scale`) and the confidence is the cosine to the centroid's back-projection into
    the feature space, so a document the span represents badly gets a low confidence.
    """

    method: str
    feature_config: FeatureConfig
    feature_indices: np.ndarray  # int64, sorted, unique
    projection: np.ndarray | None  # float32 (r x len(feature_indices)), orthonormal rows; or None
    scale: np.ndarray | None  # float32 (r,), the singular values, with a projection
    centroids: np.ndarray  # float32 (k x dim), rows unit length (or zero)
    names: tuple[str, ...]
    top_terms: tuple[tuple[str, ...], ...]

    @property
    def k(self) -> int:
        return int(self.centroids.shape[0])

    def __post_init__(self) -> None:
        _validate_model(self)

    def assign(self, X: sp.csr_matrix) -> Clustering:
        """Label and confidence of each document (rows of hashed features, L2-normalised)."""
        check_feature_space(self.feature_config, X)
        restricted = sp.csr_matrix(X)[:, self.feature_indices]
        centroids = self.centroids.astype(np.float64)
        if self.projection is None or self.scale is None:
            return assign_to_centroids(restricted, centroids)
        coordinates = np.asarray(restricted @ self.projection.T.astype(np.float64))
        scale = self.scale.astype(np.float64)
        labels = assign_to_centroids(normalize_rows(coordinates / scale), centroids / scale).labels
        confidence = np.einsum("ij,ij->i", coordinates, normalize_rows(centroids)[labels])
        return Clustering(labels=labels, confidence=confidence, k=self.k)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (numbers, strings, bytes) for msgpack; `from_dict` is its exact inverse."""
        return {
            "schema": "clustering_model",
            "version": MODEL_SCHEMA_VERSION,
            "method": self.method,
            "feature_config": self.feature_config.to_dict(),
            "feature_indices": self.feature_indices.astype("<i8").tobytes(),
            "projection": None if self.projection is None else _encode_matrix(self.projection),
            "scale": None if self.scale is None else self.scale.astype("<f4").tobytes(),
            "centroids": _encode_matrix(self.centroids),
            "names": list(self.names),
            "top_terms": [list(terms) for terms in self.top_terms],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClusteringModel:
        """Validated load: raises ModelFormatError (saying what is wrong) on any malformed field."""
        try:
            if data["schema"] != "clustering_model" or data["version"] != MODEL_SCHEMA_VERSION:
                raise ModelFormatError(
                    f"not a version-{MODEL_SCHEMA_VERSION} clustering model"
                    f" (schema={data['schema']!r}, version={data['version']!r}): ask the sender to upgrade"
                )
            indices = np.frombuffer(data["feature_indices"], dtype="<i8").astype(np.int64)
            projection, scale = data["projection"], data["scale"]
            return cls(
                method=str(data["method"]),
                feature_config=FeatureConfig.from_dict(data["feature_config"]),
                feature_indices=indices,
                projection=None if projection is None else _decode_matrix(projection),
                scale=None if scale is None else np.frombuffer(scale, dtype="<f4").astype(np.float32),
                centroids=_decode_matrix(data["centroids"]),
                names=tuple(str(name) for name in data["names"]),
                top_terms=tuple(tuple(str(t) for t in terms) for terms in data["top_terms"]),
            )
        except ModelFormatError:
            raise
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFormatError(f"malformed clustering model ({exc!r}): discard it") from exc


@dataclass(frozen=True)
class ClusteringFit:
    """A base method's result on the documents it was fitted on, and the model that reproduces it."""

    clustering: Clustering
    model: ClusteringModel


def _encode_matrix(matrix: np.ndarray) -> dict[str, Any]:
    array = np.ascontiguousarray(matrix, dtype="<f4")
    return {"shape": list(array.shape), "data": array.tobytes()}


def _decode_matrix(data: Mapping[str, Any]) -> np.ndarray:
    shape = tuple(int(n) for n in data["shape"])
    if len(shape) != 2:
        raise ModelFormatError(f"a model matrix must have 2 dimensions, got shape {shape}")
    raw = np.frombuffer(data["data"], dtype="<f4")
    if raw.size != shape[0] * shape[1]:
        raise ModelFormatError(f"matrix data holds {raw.size} values, shape {shape} needs {math.prod(shape)}")
    return raw.reshape(shape).astype(np.float32)


def _validate_model(model: ClusteringModel) -> None:
    if model.method not in METHODS:
        raise ModelFormatError(f"unknown clustering method {model.method!r}: expected one of {METHODS}")
    indices, centroids = model.feature_indices, model.centroids
    if indices.ndim != 1 or indices.size == 0:
        raise ModelFormatError("a clustering model needs a non-empty 1-d list of feature indices")
    if np.any(np.diff(indices) <= 0) or indices[0] < 0 or indices[-1] >= model.feature_config.n_features:
        raise ModelFormatError(
            f"feature indices must be sorted, unique and below n_features={model.feature_config.n_features}"
        )
    if centroids.ndim != 2 or centroids.shape[0] < 1:
        raise ModelFormatError(f"centroids must be a (k x dim) matrix, got shape {centroids.shape}")
    dim = indices.size
    if model.projection is not None:
        if model.projection.ndim != 2 or model.projection.shape[1] != indices.size:
            raise ModelFormatError(
                f"projection shape {model.projection.shape} does not match {indices.size} feature indices"
            )
        if not np.all(np.isfinite(model.projection)):
            raise ModelFormatError("projection contains NaN or infinity: discard the model")
        dim = model.projection.shape[0]
        scale = model.scale
        if scale is None or scale.shape != (dim,) or not np.all(np.isfinite(scale)) or np.any(scale <= 0):
            raise ModelFormatError(f"a projection needs {dim} finite positive singular values as its scale")
    elif model.scale is not None:
        raise ModelFormatError("a scale without a projection: discard the model")
    if centroids.shape[1] != dim:
        raise ModelFormatError(f"centroids have {centroids.shape[1]} dimensions, the model's space has {dim}")
    if not np.all(np.isfinite(centroids)):
        raise ModelFormatError("centroids contain NaN or infinity: discard the model")
    if len(model.names) != centroids.shape[0] or len(model.top_terms) != centroids.shape[0]:
        raise ModelFormatError("a clustering model needs one name and one top-term list per centroid")


def normalize_rows(X: Matrix) -> Matrix:
    """Rows scaled to unit L2 norm; zero rows stay zero."""
    if sp.issparse(X):
        return l2_normalize_rows(X)
    dense = np.asarray(X, dtype=np.float64)
    norms = np.linalg.norm(dense, axis=1)
    scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    return dense * scale[:, None]


def assign_to_centroids(X: Matrix, centroids: np.ndarray) -> Clustering:
    """Each row to the centroid of highest cosine similarity (3.2); the confidence is that similarity when
    the rows of X have unit length (and the document's full-space cosine when X holds a unit-length
    document's coordinates on the centroids' dimensions)."""
    unit = normalize_rows(centroids)
    similarity = np.asarray(X @ unit.T)
    labels = np.argmax(similarity, axis=1)
    confidence = similarity[np.arange(similarity.shape[0]), labels]
    return Clustering(labels=labels.astype(np.int64), confidence=confidence, k=int(centroids.shape[0]))


def cluster_means(X: Matrix, labels: np.ndarray, k: int) -> np.ndarray:
    """Centroids as the means of their members (3.1); an empty cluster's centroid is zero."""
    n = labels.shape[0]
    indicator = sp.csr_matrix((np.ones(n), (labels, np.arange(n))), shape=(k, n))
    sizes = np.asarray(indicator.sum(axis=1)).ravel()
    sums = indicator @ X
    sums = sums.toarray() if sp.issparse(sums) else np.asarray(sums)
    return sums / np.maximum(sizes, 1)[:, None]


def _lloyd(X: Matrix, centroids: np.ndarray, max_iter: int) -> tuple[np.ndarray, Clustering]:
    """Spherical k-means iterations until the labels stop changing; an empty cluster is reseeded with the
    document least similar to its own centroid, so k clusters survive."""
    k = centroids.shape[0]
    previous: np.ndarray | None = None
    result = assign_to_centroids(X, centroids)
    for _ in range(max_iter):
        labels = result.labels.copy()
        if previous is not None and np.array_equal(labels, previous):
            break
        sizes = np.bincount(labels, minlength=k)
        order = np.argsort(result.confidence, kind="stable")
        donors = iter(order)
        for empty in np.flatnonzero(sizes == 0):
            for donor in donors:
                if sizes[labels[donor]] > 1:
                    sizes[labels[donor]] -= 1
                    labels[donor] = empty
                    sizes[empty] = 1
                    break
        previous = labels
        centroids = cluster_means(X, labels, k)
        result = assign_to_centroids(X, centroids)
    return centroids, result


def _cohesion(result: Clustering) -> float:
    return float(result.confidence.sum())


def kmeans_centroids(
    X: Matrix,
    k: int,
    *,
    seed: int,
    sample_per_cluster: int = 20,
    sample_restarts: int = 5,
    max_iter: int = 50,
) -> tuple[np.ndarray, Clustering]:
    """Spherical k-means with preclustering: cluster a random sample of k * sample_per_cluster documents
    from k random seeds (best of `sample_restarts` tries by total cosine similarity, cheap on a sample),
    then start the full run from the sample's centroids."""
    n = X.shape[0]
    if k < 1 or n < k:
        raise ClusteringError(f"cannot form {k} clusters from {n} documents: lower k or add documents")
    rng = np.random.default_rng(seed)
    sample = np.sort(rng.choice(n, size=min(n, k * sample_per_cluster), replace=False))
    X_sample = X[sample]
    best: tuple[float, np.ndarray] | None = None
    for _ in range(max(1, sample_restarts)):
        starts = rng.choice(sample.size, size=k, replace=False)
        start_centroids = X_sample[starts]
        start_centroids = start_centroids.toarray() if sp.issparse(start_centroids) else start_centroids
        centroids, result = _lloyd(X_sample, np.asarray(start_centroids, dtype=np.float64), max_iter)
        score = _cohesion(result)
        if best is None or score > best[0]:
            best = (score, centroids)
    assert best is not None
    return _lloyd(X, best[1], max_iter)


def compact_columns(X: sp.csr_matrix) -> tuple[sp.csr_matrix, np.ndarray]:
    """X restricted to the feature columns some document uses, and those columns' hashed ids."""
    csr = sp.csr_matrix(X, dtype=np.float64)
    columns = np.unique(csr.indices).astype(np.int64)
    return csr[:, columns], columns


def _names(k: int) -> tuple[str, ...]:
    return tuple(f"cluster {j + 1}" for j in range(k))


def _fit(
    method: str,
    config: FeatureConfig,
    X: sp.csr_matrix,
    columns: np.ndarray,
    centroids: np.ndarray,
    *,
    projection: np.ndarray | None = None,
    scale: np.ndarray | None = None,
) -> ClusteringFit:
    k = centroids.shape[0]
    model = ClusteringModel(
        method=method,
        feature_config=config,
        feature_indices=columns,
        projection=None if projection is None else projection.astype(np.float32),
        scale=None if scale is None else scale.astype(np.float32),
        centroids=normalize_rows(centroids).astype(np.float32),
        names=_names(k),
        top_terms=tuple(() for _ in range(k)),
    )
    return ClusteringFit(clustering=model.assign(X), model=model)


def kmeans(X: sp.csr_matrix, k: int, config: FeatureConfig, *, seed: int, **options: int) -> ClusteringFit:
    """base1 of thesis 3.4.2: k-means on all features, preclustering with k * 20 documents."""
    Xc, columns = compact_columns(X)
    centroids, _ = kmeans_centroids(normalize_rows(Xc), k, seed=seed, **options)
    return _fit("kmeans", config, X, columns, centroids)


def _top(scores: np.ndarray, count: int) -> np.ndarray:
    """Indices of the `count` largest scores, ties broken by position, returned sorted."""
    order = np.lexsort((np.arange(scores.size), -scores))
    return np.sort(order[: min(count, scores.size)])


def iterative_kmeans(
    X: sp.csr_matrix,
    k: int,
    config: FeatureConfig,
    *,
    seed: int,
    iterations: int = 5,
    df_top: int = 2000,
    mi_top: int = 500,
    **options: int,
) -> ClusteringFit:
    """base2 of thesis 3.4.2: k-means on the top-df features, then `iterations` rounds of: select the
    top-MI features among the top-df ones (a feature scores its largest MI with any one current cluster
    against the rest, "the most discriminative features for each of the produced clusters", 3.1.1) and
    recluster in that space, starting from the previous clusters' means there."""
    Xc, columns = compact_columns(X)
    df = np.diff(sp.csc_matrix(Xc).indptr)
    candidates = _top(df.astype(np.float64), df_top)
    X_candidates = Xc[:, candidates]
    selected = np.arange(candidates.size)
    space = normalize_rows(X_candidates)
    centroids, result = kmeans_centroids(space, k, seed=seed, **options)
    for _ in range(iterations):
        mi = np.max([mutual_information(X_candidates, result.labels == c) for c in range(k)], axis=0)
        selected = _top(mi, mi_top)
        space = normalize_rows(X_candidates[:, selected])
        centroids, result = _lloyd(space, cluster_means(space, result.labels, k), options.get("max_iter", 50))
    return _fit("iterative_kmeans", config, X, columns[candidates[selected]], centroids)


def svd_rank(k: int, minimum: int = 2) -> int:
    """The SVD rank for k clusters: at least k, and at least `minimum` (the thesis's r = 2).

    The k cluster centroids of a topic tuple are in general linearly independent, so they span k dimensions;
    a rank-r projection with r < k maps them into r dimensions where at least k - r of them become linear
    combinations of the others, and (after the unit-length scaling) whole topics land on the same arc of the
    r-dimensional sphere. The thesis's r = 2 was chosen for k <= 3; at k = 5 it cannot separate the topics
    (its own Table 3.2 shows base3 at error 0.57 on Newsgroups, k = 5). Spectral clustering embeds in k
    dimensions for the same reason (Ng, Jordan and Weiss 2002).
    """
    return max(k, minimum)


def svd_kmeans(
    X: sp.csr_matrix, k: int, config: FeatureConfig, *, seed: int, rank: int | None = None, **options: int
) -> ClusteringFit:
    """base3 of thesis 3.4.2: project the documents with a rank-r truncated SVD and run k-means on the
    unit-length projections. r defaults to `svd_rank(k)`: the thesis's r = 2 (as in its reference [113])
    for k <= 2, k above, since a rank below k cannot separate k clusters.

    Documents take their coordinates in V^T of A = U S V^T (3.3), i.e. divided by the singular values, as
    3.1.1 prescribes: otherwise the first dimension (the collection's mean direction) dominates every cosine.
    """
    rank = svd_rank(k) if rank is None else rank
    Xc, columns = compact_columns(X)
    if rank >= Xc.shape[1]:
        raise ClusteringError(
            f"SVD rank {rank} needs more than {Xc.shape[1]} distinct features: lower the rank"
        )
    svd = TruncatedSVD(n_components=rank, random_state=seed)
    svd.fit(Xc)
    projection = svd.components_.astype(np.float32)
    scale = np.maximum(svd.singular_values_, 1e-6).astype(np.float32)
    coordinates = np.asarray(Xc @ projection.T.astype(np.float64))
    _, result = kmeans_centroids(normalize_rows(coordinates / scale), k, seed=seed, **options)
    centroids = cluster_means(coordinates, result.labels, k)
    return _fit("svd_kmeans", config, X, columns, centroids, projection=projection, scale=scale)


BASE_METHODS = {"kmeans": kmeans, "iterative_kmeans": iterative_kmeans, "svd_kmeans": svd_kmeans}


def restrict(clustering: Clustering, loss: float) -> Clustering:
    """Loss-targeted restrictive clustering (3.1.2): dismiss the round(loss * n) least confident documents
    (ties keep document order)."""
    labels = clustering.labels.copy()
    n_dismissed = dismissed_count(labels.size, loss)
    if n_dismissed:
        labels[np.argsort(clustering.confidence, kind="stable")[:n_dismissed]] = ABSTAIN_LABEL
    return Clustering(labels=labels, confidence=clustering.confidence, k=clustering.k)


def restrict_by_threshold(clustering: Clustering, threshold: float) -> Clustering:
    """Threshold form of 3.1.2: keep a document only if its cosine similarity to its centroid exceeds
    `threshold` (the dashed circles of Figure 3.1)."""
    labels = np.where(clustering.confidence > threshold, clustering.labels, ABSTAIN_LABEL)
    return Clustering(labels=labels, confidence=clustering.confidence, k=clustering.k)


def clustering_accuracy(truth: np.ndarray, labels: np.ndarray) -> float:
    """Eq. 3.20: the share of decided documents in the best one-to-one match of clusters to classes
    (Hungarian assignment instead of trying all k! permutations: same maximum). NaN if nothing decided."""
    truth, labels = np.asarray(truth), np.asarray(labels)
    if truth.shape != labels.shape:
        raise ClusteringError(f"{labels.size} cluster labels for {truth.size} true classes")
    decided = labels != ABSTAIN_LABEL
    if not decided.any():
        return math.nan
    t, c = truth[decided], labels[decided]
    counts = np.zeros((int(t.max()) + 1, int(c.max()) + 1))
    np.add.at(counts, (t, c), 1)
    rows, cols = linear_sum_assignment(counts, maximize=True)
    return float(counts[rows, cols].sum() / decided.sum())


def top_terms(
    documents_terms: Sequence[Sequence[str]], labels: np.ndarray, k: int, count: int = 10
) -> tuple[tuple[str, ...], ...]:
    """Cluster labels from terms (3.1.1): for each cluster, the `count` terms of highest pointwise MI
    (eq. 2.10: only terms more frequent inside the cluster score above 0) with membership in it; ties in
    alphabetical order. Dismissed documents do not count."""
    if len(documents_terms) != labels.size:
        raise ClusteringError(f"{len(documents_terms)} term lists for {labels.size} cluster labels")
    decided = [terms for terms, label in zip(documents_terms, labels, strict=True) if label != ABSTAIN_LABEL]
    member_labels = labels[labels != ABSTAIN_LABEL]
    matrix = TermMatrix.of(decided)
    result = []
    for cluster in range(k):
        scores = matrix.mutual_information(member_labels == cluster, kind="pointwise")
        ranked = sorted((term for term, score in scores.items() if score > 0), key=lambda t: (-scores[t], t))
        result.append(tuple(ranked[:count]))
    return tuple(result)


def with_term_labels(
    model: ClusteringModel, documents_terms: Sequence[Sequence[str]], labels: np.ndarray, count: int = 10
) -> ClusteringModel:
    """The model with each cluster's top-MI terms and a name from its first three (the label a user sees
    and may edit when a cluster becomes a topic, 3.1.6)."""
    terms = top_terms(documents_terms, labels, model.k, count)
    names = tuple(", ".join(t[:3]) if t else f"cluster {j + 1}" for j, t in enumerate(terms))
    return replace(model, names=names, top_terms=terms)
