"""Held-out quality of a topic's meta-classifier, for the UI's Meta and Topics screens.

The cooperation layer's own loss/accuracy curve scores the meta-classifier on the node's labelled documents
(bookmarks and archetypes), which its local member was trained on: on those it is right almost always. Here
the same curve is measured by k-fold cross-validation: for each fold the local member is retrained on the
other folds, keeps its weight and Platt scaler in the stored meta-classifier, and scores the fold's
documents; peers' members were trained on their own documents and stay as they are. Documents are scored
as the node filters them, less the claims of the rival topics' meta-classifiers (each with its local
member retrained on the same folds): one-vs-rest, a topic's latent class model, whose threshold suits the
crawl, accepted other topics' bookmarks and the curve read 0.40 where the node's filtering decides them
right. Each fold's meta-classifier also fits its latent class models again on the node's documents, from
its retrained local model's view, as the build does: the stored ones have their thresholds where the model
trained on every labelled document puts the crawl, and a model trained on fewer is less sure, so devweb
Mathematics filters that decide the crawl at 0.98 read 0.04-0.25 held out (0.97-1.00 refitted). The curve
over all folds says how the meta-classifier does on documents none of its local training saw.
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
    accuracy by loss on the node's labelled documents, each scored as the node filters
    (`filtering.filtering_scores`, against its rival topics' meta-classifiers) by meta-classifiers whose
    local members did not train on it; an empty curve with `why` when it cannot be measured."""
    from node.cooperation import filtering, store, training

    row = store.load_meta(repo, topic)
    if row is None or not row.get("model"):
        return unmeasured(0, folds, "no meta-classifier built yet")
    rows = training.training_rows(repo)
    data = training.labelled_data(rows, topic, featurizer)
    n = int(data.labels.size)
    if data.positives < MIN_PER_CLASS or data.negatives < MIN_PER_CLASS:
        counts = f"{data.positives} in the topic, {data.negatives} outside"
        return unmeasured(n, folds, f"too few labelled documents ({counts})")
    stored = {topic: _parsed(row)}
    for rival in filtering.rival_topics(topic, store.meta_topics(repo)):
        if (rival_row := store.load_meta(repo, rival)) is not None and rival_row.get("model"):
            stored[rival] = _parsed(rival_row)
    labels = {t: training.topic_labels(rows, t) for t in stored}
    own = training.own_documents(repo, featurizer) if any(m.latent for m, _, _ in stored.values()) else None
    built = {t: meta for t, (meta, _, _) in stored.items()}
    claims = {t: filtering.rival_claims(built, t, own) if own is not None else None for t in stored}
    scores = np.zeros(n)
    for train, test in training.fold_splits(n, folds):
        metas = {}
        for t, (meta, local, loss) in stored.items():
            fold_meta = _without_test_fold(
                meta, local, data, labels[t], train, t == topic, own, loss, claims[t]
            )
            if fold_meta is None:
                return unmeasured(n, folds, "a fold lacks documents of one class")
            metas[t] = fold_meta
        scores[test] = filtering.filtering_scores(metas, topic, data.X[test])
    return {
        "curve": filtering.loss_curve(scores, data.labels),
        "documents": n,
        "folds": folds,
        "why": "",
    }


def _parsed(row: dict[str, Any]) -> tuple[Any, int | None, float | None]:
    """A stored meta-classifier, the index of its local member (None without one) and the loss it was
    built for."""
    from metamodels.meta_classifier import MetaClassifier

    meta = MetaClassifier.from_dict(row["model"])
    local = next((i for i, m in enumerate(row.get("members") or []) if m.get("origin") == "local"), None)
    return meta, local if local is not None and local < len(meta.models) else None, row.get("loss")


def _without_test_fold(
    meta: Any,
    local: int | None,
    data: Any,
    labels: np.ndarray,
    train: np.ndarray,
    required: bool,
    own: Any = None,
    loss: float | None = None,
    claimed: np.ndarray | None = None,
) -> Any:
    """The meta-classifier with its local member retrained on the training folds (peers' members trained
    on their own documents and stay) and its latent class models fitted again on the node's documents
    `own`, for the `loss` it was built for (documents a rival topic `claimed` aside). None when the folds
    lack a class and the topic is the one measured; a rival's then keeps its stored local member."""
    from node.cooperation import training

    if local is None:
        return meta
    part = training.LabelledData(tuple(data.ids[i] for i in train), data.X[train], labels[train])
    if not _both_classes(part.labels):
        return None if required else meta
    model = training.train_local(part)
    retrained = replace(meta, models=(*meta.models[:local], model, *meta.models[local + 1 :]))
    if not meta.latent or own is None:
        return retrained
    return replace(retrained, latent=refitted_latent(retrained, local, own, part, loss, claimed))


def refitted_latent(
    meta: Any,
    local: int,
    own: Any,
    part: Any,
    loss: float | None = None,
    claimed: np.ndarray | None = None,
) -> tuple[Any, ...]:
    """The meta-classifier's latent class models fitted again on the node's documents as the build fits
    them (`latent_meta.latent_meta_classifier`): each on the views it reads, the local model's the reference;
    one that no longer fits, whose classes overlap, or whose positive class takes in most of the fold's
    labelled negatives, is left out, and the local model's own then votes with its labels' threshold
    (`labels_view`). Built for a `loss`, the community's is left out where it accepts more of the node's
    documents the local model's rejects than that share, those a rival topic `claimed` aside
    (`latent_meta.accepts_beyond_the_loss`), unless the local voter is its labels' threshold
    (`latent_meta.measures_looseness`)."""
    from metamodels.latent_class import fit_latent_class, labels_view
    from node.cooperation import latent_meta, training

    negatives = part.X[part.labels == 0]
    refitted = []
    for voter in meta.latent:
        if voter.of_labels or local not in voter.views:
            refitted.append(voter)
            continue
        fitted = fit_latent_class(
            meta.view_log_odds(own, voter),
            voter.views,
            voter.views.index(local),
            training.MIN_AGREEMENT_DOCUMENTS,
        )
        if fitted is not None and (
            latent_meta.overlapping(fitted, local)
            or latent_meta.accepts_most_negatives(fitted, meta.view_log_odds(negatives, fitted))
        ):
            fitted = None
        if fitted is not None:
            refitted.append(fitted)
        elif voter.views == (local,):
            refitted.append(labels_view(local))
    local_voter = refitted[0] if refitted and refitted[0].views == (local,) else None
    if loss is not None and len(refitted) > 1 and latent_meta.measures_looseness(local_voter):
        local_view, community = (v.log_odds(meta.view_log_odds(own, v)) for v in refitted[:2])
        if latent_meta.accepts_beyond_the_loss(local_view, community, loss, claimed):
            refitted = refitted[:1]
    return tuple(refitted) or (labels_view(local),)


def _both_classes(labels: np.ndarray) -> bool:
    return int(labels.sum()) >= 1 and int(labels.size - labels.sum()) >= 1


def unmeasured(documents: int, folds: int, why: str) -> dict[str, Any]:
    return {"curve": [], "documents": documents, "folds": folds, "why": why}


def accuracy_at(curve: list[dict[str, Any]], loss: float) -> float | None:
    """The curve's accuracy at the point nearest to `loss` (None when empty or undecided there)."""
    if not curve:
        return None
    nearest = min(curve, key=lambda p: abs(float(p["loss"]) - loss))
    return nearest.get("accuracy")
