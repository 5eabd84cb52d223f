"""The hierarchical topic model of BINGO! (thesis 2.3.2, eq. 2.32-2.34, Fig. 2.7).

Every taxonomy node T but the root has a linear SVM trained on
    D_POS(T) = D+(T) and the positives of all of T's descendants,
    D_NEG(T) = D-(T) (T's OTHERS folder), D-(parent(T)), and D_POS of every sibling of T,
restricted to the feature space its parent stores: the union of the top-MI features of T and its siblings
(and their indicator keywords). Documents are classified top-down: at each node the child with the highest
normalised confidence wins if it exceeds the threshold, the document holds at least N_w of the node's
features, and, when the child has indicator keywords, at least `min_indicators` of them. A document that
stays at the root is rejected. A node that is the only child and has no negatives of its own inherits its
parent's competitors, and the documents filed in the parent itself, so a single-topic taxonomy needs an
OTHERS folder at the root. An only child of a folder without documents of its own is then its parent's
topic: it takes the parent's classifier and feature space, and every page that enters the parent.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp

from metamodels.calibration import PlattScaler, fit_platt
from metamodels.errors import ModelFormatError, TrainingDataError
from metamodels.features import FeatureConfig, Featurizer, IdfWeights, check_feature_space
from metamodels.linear import LinearModel, train_linear_svm
from metamodels.memo import TrainingMemo, digest, row_digests
from metamodels.mi import MI_KINDS, select_features
from metamodels.topic_keys import ROOT, parent_of, topic_key, topic_prefixes

T = TypeVar("T")
TOPIC_MODEL_SCHEMA_VERSION = 1
TOPIC_MODEL_KIND = "topic_model"
CONFIDENCES = ("mean", "raw", "platt")


@dataclass(frozen=True)
class TopicModelSettings:
    """Training and decision parameters (thesis 2.3.2, 2.23); they are stored with the model."""

    C: float = 1.0  # soft-margin cost of every node's linear SVM
    n_top: int = 2000  # features chosen by MI per topic (thesis: 1000-5000, 2000 in its experiments)
    df_candidates: int = 10_000  # MI is evaluated only for the topic's features with the highest df
    min_df: int = 2  # features in fewer training documents are never selected
    mi_kind: str = "expected"  # "expected" (full 2x2 MI) or "pointwise" (thesis eq. 2.10)
    threshold: float = 0.0  # a child is entered only when its normalised confidence exceeds this
    min_topic_features: int = 3  # N_w: fewer of a node's features in a document and it stays at the node
    min_indicators: int = 1  # a topic with indicator keywords needs this many of them in the document
    # "mean": SVM output / mean positive training score (thesis eq. 2.22); "raw": the SVM output itself
    # (eq. 2.19, one-against-the-rest argmax, comparable when siblings share their training documents);
    # "platt": 2P - 1 with P a Platt
    # sigmoid fitted on out-of-fold SVM outputs of the node's training set, comparable across siblings
    confidence: str = "mean"
    platt_folds: int = 3  # folds of the out-of-fold decisions that Platt scaling is fitted on
    # an inner node with at least this many children keeps every feature of its documents (df >= min_df)
    # instead of the union of its children's MI features; 0 = always MI (the thesis)
    full_space_children: int = 0
    # a child with subtopics is scored by the best of its routers instead of its own SVM: one SVM per topic
    # below it holding documents of its own, trained on them against every other document at the node. A
    # union of subtopics is rarely linearly separable from its siblings; the best of several linear scores
    # is piecewise linear (thesis 2.5: "the optimal path can be found by applying all classifiers")
    route_by_leaves: bool = False
    # weigh each class of a node's SVM by the inverse of its size: a topic of two bookmarks against its
    # siblings' and the OTHERS folders' documents otherwise gets a bias that rejects nearly every page
    # unlike its bookmarks (see `crawler.focus_settings.FocusSettings.balanced_classes`)
    balanced: bool = False

    @property
    def class_weight(self) -> str | None:
        """The SVMs' class weighting (`train_linear_svm`): "balanced" or as the documents come."""
        return "balanced" if self.balanced else None

    def __post_init__(self) -> None:
        numbers_ok = all(math.isfinite(v) for v in (self.C, self.threshold)) and self.C > 0
        counts_ok = (
            min(self.n_top, self.df_candidates) >= 1
            and min(self.min_df, self.min_topic_features, self.full_space_children) >= 0
            and self.platt_folds >= 2
        )
        kinds_ok = self.mi_kind in MI_KINDS and self.confidence in CONFIDENCES
        if not numbers_ok or not counts_ok or self.min_indicators < 1 or not kinds_ok:
            raise ModelFormatError(f"invalid TopicModelSettings: {self}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TopicModelSettings:
        """Validates plain data; fields added after the first release may be absent (their defaults)."""
        names = set(cls.__dataclass_fields__)
        later = {"confidence", "platt_folds", "full_space_children", "route_by_leaves", "balanced"}
        if not isinstance(data, Mapping) or not names - later <= set(data) <= names:
            raise ModelFormatError(f"topic model settings must hold exactly {sorted(names)}")
        floats, texts, flags = {"C", "threshold"}, {"mi_kind", "confidence"}, {"route_by_leaves", "balanced"}
        for name, value in data.items():
            expected = float if name in floats else str if name in texts else bool if name in flags else int
            valid = (
                isinstance(value, int | float) if expected is float else isinstance(value, expected)
            ) and (expected is bool or not isinstance(value, bool))
            if not valid:
                raise ModelFormatError(f"settings.{name} must be {expected.__name__}, got {value!r}")
        return cls(**{k: (float(v) if k in floats else v) for k, v in data.items()})


@dataclass(frozen=True)
class TopicVerdict:
    """Where a document landed: topic "" (the root) means rejected."""

    topic: str
    confidence: float  # normalised confidence of the final topic (0.0 at the root)
    path: tuple[tuple[str, float], ...] = ()  # (topic, confidence) for each level entered

    @property
    def accepted(self) -> bool:
        return self.topic != ROOT


@dataclass(frozen=True, eq=False)
class TopicModel:
    """A trained taxonomy: per node a LinearModel, per inner node its children's shared feature space."""

    config: FeatureConfig
    settings: TopicModelSettings
    topics: tuple[str, ...]  # every non-root topic key, sorted
    models: Mapping[str, LinearModel]  # topic -> its SVM (D_POS vs D_NEG)
    spaces: Mapping[str, np.ndarray]  # inner node (incl. root "") -> sorted feature indices of its children
    indicators: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # topic -> user keywords
    idf: IdfWeights | None = None
    scalers: Mapping[str, PlattScaler] = field(default_factory=dict)  # topic -> Platt ("platt" confidence)
    # route_by_leaves: child with subtopics -> {topic in its subtree: SVM of the topic's own documents
    # against the rest of the child's parent's documents}
    routers: Mapping[str, Mapping[str, LinearModel]] = field(default_factory=dict)
    router_scalers: Mapping[str, Mapping[str, PlattScaler]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_structure(self)
        featurizer = Featurizer(self.config, self.idf)
        children: dict[str, list[str]] = {}
        for topic in self.topics:
            children.setdefault(parent_of(topic), []).append(topic)
        routes = {}
        for node, kids in children.items():
            columns, starts = [], []
            for k in kids:  # each child's columns side by side: its own SVM or its routers
                starts.append(len(columns))
                if k in self.routers:
                    scalers = self.router_scalers.get(k, {})
                    columns.extend((self.routers[k][t], scalers.get(t)) for t in sorted(self.routers[k]))
                else:
                    columns.append((self.models[k], self.scalers.get(k)))
            weights = sp.hstack([m.weight_column() for m, _ in columns], format="csc")
            biases = np.array([m.bias for m, _ in columns])
            scales = np.array([m.calibration.scale for m, _ in columns])
            platt = np.array([[p.a, p.b] for _, p in columns]).T if self.scalers else None
            space = np.zeros(self.config.n_features, dtype=bool)
            space[self.spaces[node]] = True
            required = [featurizer.indices_of_words(self.indicators.get(k, ())) for k in kids]
            routes[node] = _Route(
                tuple(kids), weights, biases, scales, platt, np.array(starts), space, required
            )
        object.__setattr__(self, "_routes", routes)
        object.__setattr__(self, "featurizer", featurizer)

    def children(self, topic: str) -> tuple[str, ...]:
        route = self._routes.get(topic)
        return route.children if route else ()

    def classify_texts(self, texts: Sequence[str], **options: Any) -> list[TopicVerdict]:
        return self.classify(self.featurizer.transform(texts), **options)

    def classify(
        self, X: sp.spmatrix, *, threshold: float | None = None, to_leaves: bool = False
    ) -> list[TopicVerdict]:
        """Top-down classification of each row (Fig. 2.7).

        `threshold` overrides the stored one; `to_leaves` always enters the best eligible child, ignoring
        the threshold and N_w, as a flat classifier's argmax would (indicator keywords still apply).
        """
        check_feature_space(self.config, X)
        X = sp.csr_matrix(X)
        limit = self.settings.threshold if threshold is None else threshold
        n = X.shape[0]
        position = np.zeros(n, dtype=object)
        position[:] = ROOT
        confidence = np.zeros(n)
        paths: list[list[tuple[str, float]]] = [[] for _ in range(n)]
        frontier = {ROOT: np.arange(n)}
        while frontier:
            next_frontier: dict[str, list[np.ndarray]] = {}
            for node, rows in frontier.items():
                route = self._routes.get(node)
                if route is None or rows.size == 0:
                    continue
                chosen, best = route.choose(X[rows], limit, self.settings, to_leaves)
                for child_index, child in enumerate(route.children):
                    moved = rows[chosen == child_index]
                    if moved.size:
                        position[moved] = child
                        confidence[moved] = best[chosen == child_index]
                        next_frontier.setdefault(child, []).append(moved)
                for row, child_index, conf in zip(rows, chosen, best, strict=True):
                    if child_index >= 0:
                        paths[row].append((route.children[child_index], float(conf)))
            frontier = {node: np.concatenate(parts) for node, parts in next_frontier.items()}
        return [TopicVerdict(position[i], float(confidence[i]), tuple(paths[i])) for i in range(n)]

    def confidences(self, X: sp.spmatrix, topic: str) -> np.ndarray:
        """Normalised confidence of each row for one topic's own SVM, regardless of the path."""
        if self.scalers:
            return self.scalers[topic].confidence(self.models[topic].decision_function(X))
        if self.settings.confidence == "raw":
            return self.models[topic].decision_function(X)
        return self.models[topic].confidence(X)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TopicModel):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": TOPIC_MODEL_KIND,
            "version": TOPIC_MODEL_SCHEMA_VERSION,
            "feature_config": self.config.to_dict(),
            "settings": asdict(self.settings),
            "topics": list(self.topics),
            "models": {t: self.models[t].to_dict() for t in self.topics},
            "spaces": {node: np.asarray(s, dtype="<i4").tobytes() for node, s in sorted(self.spaces.items())},
            "indicators": {t: list(words) for t, words in sorted(self.indicators.items())},
            "idf": self.idf.to_dict() if self.idf is not None else None,
            "scalers": {t: self.scalers[t].to_dict() for t in sorted(self.scalers)},
            "routers": {
                t: {leaf: m.to_dict() for leaf, m in sorted(self.routers[t].items())}
                for t in sorted(self.routers)
            },
            "router_scalers": {
                t: {leaf: p.to_dict() for leaf, p in sorted(self.router_scalers[t].items())}
                for t in sorted(self.router_scalers)
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TopicModel:
        """Validates untrusted plain data into a model; ModelFormatError says what is wrong."""
        if not isinstance(data, Mapping) or data.get("kind") != TOPIC_MODEL_KIND:
            raise ModelFormatError("not a topic model: expected a mapping with kind 'topic_model'")
        if data.get("version") != TOPIC_MODEL_SCHEMA_VERSION:
            raise ModelFormatError(
                f"topic model version {data.get('version')!r} is not the supported one,"
                f" {TOPIC_MODEL_SCHEMA_VERSION}"
            )
        try:
            config = FeatureConfig.from_dict(data["feature_config"])
            settings = TopicModelSettings.from_dict(data["settings"])
            topics = data["topics"]
            if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
                raise ModelFormatError("topics must be a list of topic keys")
            models = _mapping(data["models"], "models")
            spaces = _mapping(data["spaces"], "spaces")
            indicators = _mapping(data["indicators"], "indicators")
            for topic, words in indicators.items():
                if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
                    raise ModelFormatError(f"indicators of {topic!r} must be a list of strings")
            idf = IdfWeights.from_dict(data["idf"]) if data["idf"] is not None else None
            scalers = {
                t: PlattScaler.from_dict(_mapping(s, f"scaler of {t!r}"))
                for t, s in _mapping(data.get("scalers", {}), "scalers").items()
            }
            routers = {
                t: {leaf: LinearModel.from_dict(m) for leaf, m in _mapping(r, f"routers of {t!r}").items()}
                for t, r in _mapping(data.get("routers", {}), "routers").items()
            }
            router_scalers = {
                t: {
                    leaf: PlattScaler.from_dict(_mapping(p, f"router scaler of {leaf!r}"))
                    for leaf, p in _mapping(r, f"router scalers of {t!r}").items()
                }
                for t, r in _mapping(data.get("router_scalers", {}), "router_scalers").items()
            }
        except KeyError as exc:
            raise ModelFormatError(f"topic model lacks field {exc}") from exc
        return cls(
            config,
            settings,
            tuple(topics),
            {t: LinearModel.from_dict(m) for t, m in models.items()},
            {node: _indices_from_bytes(raw, node) for node, raw in spaces.items()},
            {t: tuple(words) for t, words in indicators.items()},
            idf,
            scalers,
            routers,
            router_scalers,
        )


@dataclass(frozen=True, eq=False)
class _Route:
    """The decision at one inner node among its children, vectorised over documents."""

    children: tuple[str, ...]
    weights: sp.csc_matrix  # n_features x len(children)
    biases: np.ndarray
    scales: np.ndarray
    platt: np.ndarray | None  # 2 x columns: Platt's a and b per column, or None for "mean"
    starts: np.ndarray  # the first column of each child (its own SVM, or its routers)
    space: np.ndarray  # bool mask of the node's feature space
    required: list[list[int]]  # per child: indicator feature indices ([] = no indicator rule)

    def choose(
        self, X: sp.csr_matrix, limit: float, settings: TopicModelSettings, to_leaves: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """(index of the chosen child or -1, its confidence) per row."""
        decision = np.asarray((X @ self.weights).todense()) + self.biases
        if self.platt is None:
            conf = decision if settings.confidence == "raw" else decision / self.scales
        else:  # 2P - 1 with P = 1 / (1 + exp(a s + b)), as PlattScaler.confidence
            conf = 2.0 * np.exp(-np.logaddexp(0.0, self.platt[0] * decision + self.platt[1])) - 1.0
        conf = np.maximum.reduceat(conf, self.starts, axis=1)
        for j, indices in enumerate(self.required):
            if indices:
                hits = np.asarray((X[:, indices] != 0).sum(axis=1)).ravel()
                conf[hits < settings.min_indicators, j] = -np.inf
        chosen = np.argmax(conf, axis=1)
        best = conf[np.arange(conf.shape[0]), chosen]
        stay = ~np.isfinite(best)
        if not to_leaves:
            entry_rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
            counted = self.space[X.indices] & (X.data != 0)
            in_space = np.bincount(entry_rows[counted], minlength=X.shape[0])
            stay |= (best <= limit) | (in_space < settings.min_topic_features)
        chosen = np.where(stay, -1, chosen)
        return chosen, np.where(stay, 0.0, best)


def _check_structure(model: TopicModel) -> None:
    topics = model.topics
    if list(topics) != sorted(set(topics)) or any(t != topic_key(t) or t == ROOT for t in topics):
        raise ModelFormatError("topics must be sorted, unique, normalised, non-empty keys")
    known = set(topics)
    missing_parents = sorted(t for t in topics if parent_of(t) != ROOT and parent_of(t) not in known)
    if missing_parents:
        raise ModelFormatError(f"topics {missing_parents} have no parent topic in the model")
    if set(model.models) != known:
        raise ModelFormatError("there must be exactly one linear model per topic")
    inner = {parent_of(t) for t in topics}
    if set(model.spaces) != inner:
        raise ModelFormatError("there must be exactly one feature space per inner node")
    if model.scalers and set(model.scalers) != known:
        raise ModelFormatError("Platt scalers must be given for every topic or for none")
    if bool(model.scalers) != (model.settings.confidence == "platt"):
        raise ModelFormatError("Platt scalers must be present exactly when settings.confidence is 'platt'")
    for kid, routers in model.routers.items():
        inside = all(t in known and (t == kid or t.startswith(kid + "/")) for t in routers)
        if kid not in known or not routers or not inside:
            raise ModelFormatError(f"routers of {kid!r} must be keyed by known topics below it")
        if any(m.config != model.config for m in routers.values()):
            raise ModelFormatError(f"a router of {kid!r} lives in another feature space")
    scaled = {k: set(v) for k, v in model.router_scalers.items()}
    if scaled != ({k: set(v) for k, v in model.routers.items()} if model.scalers else {}):
        raise ModelFormatError("router scalers must match the routers exactly when confidence is 'platt'")
    if not set(model.indicators) <= known:
        raise ModelFormatError("indicators name topics that the model does not have")
    for topic, linear in model.models.items():
        if linear.config != model.config:
            raise ModelFormatError(f"the model of {topic!r} lives in another feature space")
    for node, space in model.spaces.items():
        if space.size and (
            space[0] < 0 or space[-1] >= model.config.n_features or (np.diff(space) <= 0).any()
        ):
            raise ModelFormatError(f"feature space of {node!r} must be increasing indices below n_features")


def _mapping(value: Any, name: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ModelFormatError(f"{name} must be a mapping keyed by topic")
    return value


def _indices_from_bytes(raw: Any, node: str) -> np.ndarray:
    if not isinstance(raw, bytes | bytearray) or len(raw) % 4:
        raise ModelFormatError(f"feature space of {node!r} must be bytes of little-endian int32")
    return np.frombuffer(raw, dtype="<i4").astype(np.int64)


# --- training ------------------------------------------------------------------------------------------


def train_topic_model(
    X: sp.spmatrix,
    positives: Mapping[str, Sequence[int]],
    negatives: Mapping[str, Sequence[int]] | None = None,
    *,
    config: FeatureConfig,
    settings: TopicModelSettings | None = None,
    indicators: Mapping[str, Sequence[str]] | None = None,
    idf: IdfWeights | None = None,
    memo: TrainingMemo | None = None,
) -> TopicModel:
    """Trains every node of the taxonomy named by the keys of `positives`.

    positives: topic path -> rows of X that are D+(T) (documents filed directly in T; intermediate topics
    of a path are created with no documents of their own). negatives: topic path ("" for the root) -> rows
    of X in T's OTHERS folder, D-(T). indicators: topic path -> keywords (see module docstring). memo: the
    parts of the previous training, reused where their training data is unchanged (a retrain then costs
    what changed; the model equals a full retrain's); it keeps this training's parts for the next.
    """
    settings = settings or TopicModelSettings()
    check_feature_space(config, X)
    X = sp.csr_matrix(X)
    try:
        return _train_nodes(X, positives, negatives, config, settings, indicators, idf, memo)
    finally:
        if memo is not None:
            memo.settle()


def _train_nodes(
    X: sp.csr_matrix,
    positives: Mapping[str, Sequence[int]],
    negatives: Mapping[str, Sequence[int]] | None,
    config: FeatureConfig,
    settings: TopicModelSettings,
    indicators: Mapping[str, Sequence[str]] | None,
    idf: IdfWeights | None,
    memo: TrainingMemo | None,
) -> TopicModel:
    own_pos = _normalise_rows(positives, X.shape[0])
    own_neg = _normalise_rows(negatives or {}, X.shape[0])
    indicator_words = {topic_key(t): tuple(words) for t, words in (indicators or {}).items() if words}
    topics = sorted({prefix for t in own_pos for prefix in topic_prefixes(t)})
    unknown = sorted((set(own_neg) - {ROOT} - set(topics)) | (set(indicator_words) - set(topics)))
    if unknown:
        raise TrainingDataError(f"negatives or indicators name topics without positives: {unknown}")
    children: dict[str, list[str]] = {}
    for topic in topics:
        children.setdefault(parent_of(topic), []).append(topic)
    d_pos = {t: _subtree_rows(t, own_pos, children) for t in topics}
    d_neg: dict[str, np.ndarray] = {}
    for topic in topics:  # sorted: parents come before their children
        parent = parent_of(topic)
        siblings = [d_pos[s] for s in children[parent] if s != topic]
        rows = _union([own_neg.get(topic, _NO_ROWS), own_neg.get(parent, _NO_ROWS), *siblings])
        if rows.size == 0 and parent != ROOT:
            rows = _union([d_neg[parent], own_pos.get(parent, _NO_ROWS)])
        rows = np.setdiff1d(rows, d_pos[topic])
        if d_pos[topic].size == 0:
            raise TrainingDataError(f"topic {topic!r} has no training documents")
        if rows.size == 0:
            raise TrainingDataError(
                f"topic {topic!r} has no negative examples: add sibling topics or an OTHERS folder"
                f" under {parent or 'the root'!r}"
            )
        d_neg[topic] = rows
    as_parent = {t for t in topics if _trained_as_parent(t, d_pos, d_neg)}
    featurizer = Featurizer(config, idf)
    parts = _Parts(X, config, settings, memo)
    spaces: dict[str, np.ndarray] = {}
    for node, kids in sorted(children.items()):  # a parent's space before its children's
        if kids[0] in as_parent:
            spaces[node] = spaces[parent_of(node)]
            continue
        keywords = [featurizer.indices_of_words(indicator_words.get(k, ())) for k in kids]
        if settings.full_space_children and len(kids) >= settings.full_space_children:
            selected = [parts.frequent_features(_union([d_pos[k] for k in kids] + [d_neg[k] for k in kids]))]
        else:
            selected = [parts.best_features(*_labelled(d_pos[k], d_neg[k])) for k in kids]
        spaces[node] = _union(selected + [np.asarray(k, dtype=np.int64) for k in keywords])
    models, scalers = {}, {}
    for topic in topics:
        if topic in as_parent:
            models[topic] = models[parent_of(topic)]
            if settings.confidence == "platt":
                scalers[topic] = scalers[parent_of(topic)]
            continue
        rows, y = _labelled(d_pos[topic], d_neg[topic])
        space = spaces[parent_of(topic)]
        models[topic] = parts.svm(rows, y, space)
        if settings.confidence == "platt":
            scalers[topic] = parts.platt(rows, y, space, models[topic])
    routers: dict[str, dict[str, LinearModel]] = {}
    router_scalers: dict[str, dict[str, PlattScaler]] = {}
    for node, kids in children.items() if settings.route_by_leaves else ():
        node_rows = _union([d_pos[k] for k in kids] + [d_neg[k] for k in kids])
        for kid in (k for k in kids if k in children):
            for topic in (t for t in topics if t == kid or t.startswith(kid + "/")):
                y = np.isin(node_rows, own_pos.get(topic, _NO_ROWS)).astype(np.int8)
                if not y.any():
                    continue
                model = parts.svm(node_rows, y, spaces[node])
                routers.setdefault(kid, {})[topic] = model
                if settings.confidence == "platt":
                    scaler = parts.platt(node_rows, y, spaces[node], model)
                    router_scalers.setdefault(kid, {})[topic] = scaler
    return TopicModel(
        config,
        settings,
        tuple(topics),
        models,
        spaces,
        indicator_words,
        idf,
        scalers,
        routers,
        router_scalers,
    )


def train_topic_model_from_texts(
    featurizer: Featurizer,
    positives: Mapping[str, Sequence[str]],
    negatives: Mapping[str, Sequence[str]] | None = None,
    **options: Any,
) -> TopicModel:
    """As `train_topic_model`, from the texts of each topic's documents and OTHERS folders."""
    texts: list[str] = []
    pos_rows: dict[str, list[int]] = {}
    neg_rows: dict[str, list[int]] = {}
    for source, rows in ((positives, pos_rows), (negatives or {}, neg_rows)):
        for topic, docs in source.items():
            rows[topic] = list(range(len(texts), len(texts) + len(docs)))
            texts.extend(docs)
    if featurizer.config.idf and featurizer.idf is None:
        featurizer = featurizer.fit_idf(texts)
    X = featurizer.transform(texts)
    return train_topic_model(X, pos_rows, neg_rows, config=featurizer.config, idf=featurizer.idf, **options)


_NO_ROWS = np.zeros(0, dtype=np.int64)


def _normalise_rows(rows_by_topic: Mapping[str, Sequence[int]], n_rows: int) -> dict[str, np.ndarray]:
    result: dict[str, np.ndarray] = {}
    for topic, rows in rows_by_topic.items():
        key = topic_key(topic)
        array = np.unique(np.asarray(rows, dtype=np.int64))
        if array.size and (array[0] < 0 or array[-1] >= n_rows):
            raise TrainingDataError(f"rows of topic {topic!r} fall outside the {n_rows} training documents")
        result[key] = np.union1d(result.get(key, _NO_ROWS), array)
    return result


def _trained_as_parent(topic: str, d_pos: Mapping[str, np.ndarray], d_neg: Mapping[str, np.ndarray]) -> bool:
    """Whether the topic's training sets are its parent's: an only child of a folder without documents of
    its own, with no negatives of either. Trained apart, in the narrower space of its own features, the
    same documents gave a second, weaker classifier of the same topic that a page had to pass again."""
    parent = parent_of(topic)
    return (
        parent != ROOT
        and np.array_equal(d_pos[topic], d_pos[parent])
        and np.array_equal(d_neg[topic], d_neg[parent])
    )


def _subtree_rows(topic: str, own: Mapping[str, np.ndarray], children: Mapping[str, list[str]]) -> np.ndarray:
    parts = [own.get(topic, _NO_ROWS)]
    parts.extend(_subtree_rows(child, own, children) for child in children.get(topic, ()))
    return _union(parts)


def _union(arrays: Sequence[np.ndarray]) -> np.ndarray:
    arrays = [a for a in arrays if a.size]
    return np.unique(np.concatenate(arrays)) if arrays else _NO_ROWS


def _labelled(pos: np.ndarray, neg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A node's training rows, positives first, and their labels (1 for a positive)."""
    y = np.concatenate([np.ones(pos.size, dtype=np.int8), np.zeros(neg.size, dtype=np.int8)])
    return np.concatenate([pos, neg]), y


class _Parts:
    """A training's parts (MI feature choices, SVMs, Platt scalers), each taken from the memo when the rows
    it is trained from (their feature values, in order), its labels, its feature space and the settings
    are those of a part trained before, else trained. Without a memo each is trained, nothing digested."""

    def __init__(
        self, X: sp.csr_matrix, config: FeatureConfig, settings: TopicModelSettings, memo: TrainingMemo | None
    ) -> None:
        self.X, self.config, self.settings, self.memo = X, config, settings, memo
        self.rows = row_digests(X) if memo is not None else None
        self.context = repr((config.to_dict(), asdict(settings), X.dtype.str))

    def _part(self, kind: str, rows: np.ndarray, inputs: tuple[np.ndarray, ...], train: Callable[[], T]) -> T:
        if self.memo is None or self.rows is None:  # no memo: nothing to digest
            return train()
        return self.memo.part(digest(kind, self.context, self.rows[rows], *inputs), train)

    def best_features(self, rows: np.ndarray, y: np.ndarray) -> np.ndarray:
        s = self.settings
        return self._part(
            "mi",
            rows,
            (y,),
            lambda: select_features(
                self.X[rows], y, s.n_top, candidates=s.df_candidates, min_df=s.min_df, kind=s.mi_kind
            ).astype(np.int64),
        )

    def frequent_features(self, rows: np.ndarray) -> np.ndarray:
        min_df = self.settings.min_df
        return self._part("frequent", rows, (), lambda: _frequent_features(self.X[rows], min_df))

    def svm(self, rows: np.ndarray, y: np.ndarray, space: np.ndarray) -> LinearModel:
        s = self.settings
        return self._part(
            "svm",
            rows,
            (y, space),
            lambda: train_linear_svm(
                self.X[rows], y, s.C, config=self.config, features=space, class_weight=s.class_weight
            ),
        )

    def platt(self, rows: np.ndarray, y: np.ndarray, space: np.ndarray, model: LinearModel) -> PlattScaler:
        """`model` is the SVM trained from the same rows, labels and space (`svm`)."""
        return self._part(
            "platt",
            rows,
            (y, space),
            lambda: _out_of_fold_platt(self.X[rows], y, self.settings, self.config, space, model),
        )


def _frequent_features(X: sp.csr_matrix, min_df: int) -> np.ndarray:
    """Every feature in at least min_df (and at least one) of the rows: a node's space without MI."""
    df = np.bincount(X.indices[X.data != 0], minlength=X.shape[1])
    return np.flatnonzero(df >= max(1, min_df)).astype(np.int64)


def _out_of_fold_platt(
    X: sp.csr_matrix,
    y: np.ndarray,
    settings: TopicModelSettings,
    config: FeatureConfig,
    features: np.ndarray,
    model: LinearModel,
) -> PlattScaler:
    """Platt's sigmoid fitted on decisions for documents the deciding SVM was not trained on.

    A model's outputs on its own training documents are pushed past the margin, so a sigmoid fitted on them
    is over-confident, and by how much differs between siblings with different training sets. Folds take
    each class's rows round-robin (deterministic); with fewer documents of a class than folds, nothing can
    be held out and the sigmoid is fitted on the trained model's own outputs.
    """
    folds = min(settings.platt_folds, int((y == 1).sum()), int((y == 0).sum()))
    if folds < 2:
        return fit_platt(model.decision_function(X), y)
    fold = np.empty(y.size, dtype=np.int64)
    for label in (0, 1):
        members = np.flatnonzero(y == label)
        fold[members] = np.arange(members.size) % folds
    scores = np.empty(y.size)
    for k in range(folds):
        held = fold == k
        part = train_linear_svm(
            X[~held],
            y[~held],
            settings.C,
            config=config,
            features=features,
            class_weight=settings.class_weight,
        )
        scores[held] = part.decision_function(X[held])
    return fit_platt(scores, y)
