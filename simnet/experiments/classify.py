"""The hierarchical topic classifier beside a flat scikit-learn LinearSVC on the same hashed features.

    python -m simnet.experiments.classify --corpus 20ng|reuters|webkb

20ng: a two-level taxonomy from the group names' prefixes (comp/comp.graphics, ...; prefixes with one
group, such as alt.atheism, are top-level topics). reuters: the ten largest ModApte categories as flat
topics, documents with exactly one of them. webkb: student, faculty, course and project as topics, the
other pages as the root's OTHERS folder, the test split being the held-out university.
The model variant (CANDIDATES: MI feature count, confidence, routing by leaves) is chosen on a seeded 20%
hold-out of the training split, never on the test split, by a fixed rule: the highest hold-out micro-F1,
an exact tie going to the candidate listed first (the thesis's model and smaller feature spaces come first,
so a more elaborate variant must earn its place). The last line printed is JSON with `ours_micro_f1` and
`sklearn_micro_f1`.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from sklearn.svm import LinearSVC

from metamodels.features import FeatureConfig, Featurizer
from metamodels.topic_model import TopicModel, TopicModelSettings, train_topic_model
from simnet.corpora import Document, load_corpus

N_TOP_CHOICES = (2000, 5000, 10_000)
# Hold-out candidates in order of preference on a tie: name -> settings changed from the base settings.
CANDIDATES: tuple[tuple[str, dict], ...] = (
    *((f"thesis n_top={n}", {"n_top": n}) for n in N_TOP_CHOICES),
    *(
        (f"routed raw n_top={n}", {"n_top": n, "confidence": "raw", "route_by_leaves": True})
        for n in N_TOP_CHOICES
    ),
    ("routed raw no-MI", {"confidence": "raw", "route_by_leaves": True, "full_space_children": 1}),
    ("routed platt no-MI", {"confidence": "platt", "route_by_leaves": True, "full_space_children": 1}),
)
WEBKB_TOPICS = ("course", "faculty", "project", "student")


@dataclass(frozen=True)
class Task:
    """Training and test documents with their topic keys; negatives are the root's OTHERS rows."""

    train_texts: list[str]
    train_topics: list[str | None]  # None: a negative example of the root
    test_texts: list[str]
    test_topics: list[str]


def build_task(corpus: str) -> Task:
    docs = load_corpus(corpus)
    if corpus == "20ng":
        topic_of = _twenty_newsgroups_taxonomy(docs)
    elif corpus == "reuters":
        topic_of = _reuters_topics(docs)
    else:
        topic_of = _webkb_topics
    train = [(d.text, topic_of(d)) for d in docs if d.split == "train"]
    test = [(d.text, topic_of(d)) for d in docs if d.split == "test"]
    train = [(text, topic) for text, topic in train if topic != ""]
    test = [(text, topic) for text, topic in test if topic]
    return Task([t for t, _ in train], [k for _, k in train], [t for t, _ in test], [k for _, k in test])


def _twenty_newsgroups_taxonomy(docs: Sequence[Document]):
    groups = {d.labels[0] for d in docs}
    per_prefix = Counter(g.split(".")[0] for g in groups)

    def topic_of(doc: Document) -> str:
        group = doc.labels[0]
        prefix = group.split(".")[0]
        return f"{prefix}/{group}" if per_prefix[prefix] > 1 else group

    return topic_of


def _reuters_topics(docs: Sequence[Document]):
    counts = Counter(label for d in docs if d.split == "train" for label in d.labels)
    top = {label for label, _ in counts.most_common(10)}

    def topic_of(doc: Document) -> str:
        labels = [label for label in doc.labels if label in top]
        return labels[0] if len(labels) == 1 else ""

    return topic_of


def _webkb_topics(doc: Document) -> str | None:
    label = doc.labels[0]
    return label if label in WEBKB_TOPICS else None


def train(X, topics: Sequence[str | None], config: FeatureConfig, settings: TopicModelSettings) -> TopicModel:
    positives: dict[str, list[int]] = {}
    negatives: dict[str, list[int]] = {"": []}
    for row, topic in enumerate(topics):
        (positives.setdefault(topic, []) if topic else negatives[""]).append(row)
    return train_topic_model(X, positives, negatives, config=config, settings=settings)


def micro_f1(predicted: Sequence[str], truth: Sequence[str]) -> float:
    """Single-label micro-F1 over leaf topics; a rejected document ("") is a miss, not a false positive."""
    correct = sum(p == t for p, t in zip(predicted, truth, strict=True))
    assigned = sum(p != "" for p in predicted)
    precision = correct / assigned if assigned else 0.0
    recall = correct / len(truth) if truth else 0.0
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def candidate_settings(base: TopicModelSettings, changes: dict) -> TopicModelSettings:
    settings = replace(base, **changes)
    return replace(settings, df_candidates=max(settings.df_candidates, settings.n_top))


def pick(scores: dict[str, float]) -> str:
    """The highest score; on an exact tie the candidate listed first (dicts keep CANDIDATES' order)."""
    return max(scores, key=lambda name: (scores[name], -list(scores).index(name)))


def choose_settings(
    X, topics: Sequence[str | None], config: FeatureConfig, base: TopicModelSettings, seed: int
) -> tuple[str, TopicModelSettings, dict[str, float]]:
    """Picks the model variant on a seeded 20% hold-out of the training split (module docstring's rule)."""
    rng = np.random.default_rng(seed)
    held = rng.random(len(topics)) < 0.2
    fit_rows, held_rows = (
        np.flatnonzero(~held),
        np.flatnonzero(held & np.array([t is not None for t in topics])),
    )
    scores = {}
    for name, changes in CANDIDATES:
        model = train(X[fit_rows], [topics[i] for i in fit_rows], config, candidate_settings(base, changes))
        verdicts = model.classify(X[held_rows], to_leaves=True)
        scores[name] = round(micro_f1([v.topic for v in verdicts], [topics[i] for i in held_rows]), 6)
    best = pick(scores)
    return best, candidate_settings(base, dict(CANDIDATES)[best]), scores


def top_level_accuracy(predicted: Sequence[str], truth: Sequence[str]) -> float:
    return float(np.mean([p.split("/")[0] == t.split("/")[0] for p, t in zip(predicted, truth, strict=True)]))


def run(corpus: str, config: FeatureConfig, base: TopicModelSettings, seed: int = 0) -> dict:
    started = time.perf_counter()
    task = build_task(corpus)
    featurizer = Featurizer(config)
    X_train = featurizer.transform(task.train_texts)
    X_test = featurizer.transform(task.test_texts)
    featurise_s = time.perf_counter() - started

    t0 = time.perf_counter()
    chosen, settings, holdout = choose_settings(X_train, task.train_topics, config, base, seed)
    model = train(X_train, task.train_topics, config, settings)
    ours_train_s = time.perf_counter() - t0
    forced = [v.topic for v in model.classify(X_test, to_leaves=True)]
    restrictive = [v.topic for v in model.classify(X_test)]
    leaves = {t for t in model.topics if not model.children(t)}
    restrictive_leaf = [t if t in leaves else "" for t in restrictive]

    t0 = time.perf_counter()
    labelled = np.array([t is not None for t in task.train_topics])
    flat = LinearSVC(C=base.C, random_state=0).fit(
        X_train[labelled], np.array(task.train_topics, dtype=object)[labelled]
    )
    flat_pred = flat.predict(X_test).tolist()
    flat_s = time.perf_counter() - t0

    accepted = [t != "" for t in restrictive_leaf]
    correct = [p == t for p, t in zip(restrictive_leaf, task.test_topics, strict=True)]
    return {
        "corpus": corpus,
        "train_docs": len(task.train_texts),
        "test_docs": len(task.test_texts),
        "topics": len(model.topics),
        "leaves": len(leaves),
        "chosen": chosen,
        "holdout_micro_f1": holdout,
        "featurise_s": round(featurise_s, 2),
        "ours_train_s": round(ours_train_s, 2),
        "sklearn_train_s": round(flat_s, 2),
        "ours_micro_f1": round(micro_f1(forced, task.test_topics), 4),
        "sklearn_micro_f1": round(micro_f1(flat_pred, task.test_topics), 4),
        "ours_top_level_accuracy": round(top_level_accuracy(forced, task.test_topics), 4),
        "sklearn_top_level_accuracy": round(top_level_accuracy(flat_pred, task.test_topics), 4),
        "ours_restrictive_micro_f1": round(micro_f1(restrictive_leaf, task.test_topics), 4),
        "ours_restrictive_accepted": round(float(np.mean(accepted)), 4),
        "ours_restrictive_precision": round(sum(correct) / max(1, sum(accepted)), 4),
    }


def print_table(result: dict) -> None:
    print(
        f"corpus {result['corpus']}: {result['train_docs']} train / {result['test_docs']} test documents, "
        f"{result['topics']} topics ({result['leaves']} leaves); chosen on the training hold-out: "
        f"{result['chosen']}"
    )
    for name, score in result["holdout_micro_f1"].items():
        print(f"  hold-out micro-F1 {score:.4f}  {name}")
    rows = [
        ("hierarchical SVMs, top-down to the leaves", result["ours_micro_f1"], result["ours_train_s"]),
        ("flat scikit-learn LinearSVC (one-vs-rest)", result["sklearn_micro_f1"], result["sklearn_train_s"]),
        (
            f"hierarchical, restrictive (threshold, N_w); accepts {result['ours_restrictive_accepted']:.1%}"
            f" at precision {result['ours_restrictive_precision']:.3f}",
            result["ours_restrictive_micro_f1"],
            None,
        ),
    ]
    print(f"{'method':<90} {'micro-F1':>8} {'train s':>8}")
    for name, f1, seconds in rows:
        print(f"{name:<90} {f1:>8.4f} {'' if seconds is None else f'{seconds:8.2f}':>8}")
    print(f"featurising took {result['featurise_s']} s")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", choices=("20ng", "reuters", "webkb"), default="20ng")
    parser.add_argument("--C", type=float, default=1.0, help="SVM cost, the same for both classifiers")
    parser.add_argument(
        "--tf", choices=("log", "raw", "binary"), default="log", help="term-frequency scaling"
    )
    parser.add_argument("--n-features", type=int, default=2**18, help="size of the hashed feature space")
    parser.add_argument("--threshold", type=float, default=0.0, help="confidence threshold (restrictive row)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the training hold-out split")
    args = parser.parse_args(argv)
    config = FeatureConfig(n_features=args.n_features, tf=args.tf)
    result = run(args.corpus, config, TopicModelSettings(C=args.C, threshold=args.threshold), args.seed)
    print_table(result)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
