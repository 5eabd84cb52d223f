"""Held-out quality of a topic's meta-classifier, for the UI's Meta and Topics screens.

The cooperation layer's own loss/accuracy curve scores the meta-classifier on the node's labelled documents
(bookmarks and archetypes), which its local member was trained on: on those it is right almost always. Here
the same curve is measured by k-fold cross-validation: for each fold the local member is retrained on the
other folds, keeps its weight and Platt scaler in the stored meta-classifier, and scores the fold's
documents; peers' members were trained on their own documents and stay as they are. The curve over all
folds says how the meta-classifier does on documents none of its local training saw.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from crawler.repository import Repository

FOLDS = 5
MIN_PER_CLASS = 2  # labelled documents of each class needed, so every fold trains on both


def held_out_curve(repo: Repository, topic: str, featurizer: Any, folds: int = FOLDS) -> dict[str, Any]:
    """{"curve": [{"loss", "accuracy"}], "documents", "folds", "why"}: the stored meta-classifier's
    accuracy by loss on the node's labelled documents, each scored by a meta-classifier whose local member
    did not train on it; an empty curve with `why` when it cannot be measured."""
    from metamodels.meta_classifier import MetaClassifier
    from node.cooperation import learning, store

    row = store.load_meta(repo, topic)
    if row is None or not row.get("model"):
        return _unmeasured(0, folds, "no meta-classifier built yet")
    meta = MetaClassifier.from_dict(row["model"])
    data = learning.labelled_data(learning.training_rows(repo), topic, featurizer)
    n = int(data.labels.size)
    if data.positives < MIN_PER_CLASS or data.negatives < MIN_PER_CLASS:
        counts = f"{data.positives} in the topic, {data.negatives} outside"
        return _unmeasured(n, folds, f"too few labelled documents ({counts})")
    local = next((i for i, m in enumerate(row.get("members") or []) if m.get("origin") == "local"), None)
    scores = np.zeros(n)
    for train, test in learning.fold_splits(n, folds):
        fold_meta = meta
        if local is not None and local < len(meta.models):
            part = learning.LabelledData(tuple(data.ids[i] for i in train), data.X[train], data.labels[train])
            model = learning.train_local(part) if _both_classes(part.labels) else None
            if model is None:
                return _unmeasured(n, folds, "a fold lacks documents of one class")
            fold_meta = replace(meta, models=(*meta.models[:local], model, *meta.models[local + 1 :]))
        scores[test] = learning.meta_scores(fold_meta, data.X[test])
    return {
        "curve": learning.loss_curve(scores, data.labels),
        "documents": n,
        "folds": folds,
        "why": "",
    }


def _both_classes(labels: np.ndarray) -> bool:
    return int(labels.sum()) >= 1 and int(labels.size - labels.sum()) >= 1


def _unmeasured(documents: int, folds: int, why: str) -> dict[str, Any]:
    return {"curve": [], "documents": documents, "folds": folds, "why": why}


def accuracy_at(curve: list[dict[str, Any]], loss: float) -> float | None:
    """The curve's accuracy at the point nearest to `loss` (None when empty or undecided there)."""
    if not curve:
        return None
    nearest = min(curve, key=lambda p: abs(float(p["loss"]) - loss))
    return nearest.get("accuracy")
