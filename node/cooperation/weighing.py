"""The members of a topic's meta-classifier (`Member`): the node's local model and its peers' models, each
measured, calibrated and weighed on this node's data.

Received models are weighed by their accuracy on this node's held-out labelled documents when there are
enough of them, else as the community measured it (thesis 3.15): the lower median over the distinct
reporters (peers that cross-validated the model on their own data without its training documents, and this
node), turned into a log-odds weight (`metamodels.robust`). They are put on one scale by Platt scaling
fitted on this node's labels: a label-flipped model's scaler would flip it back, so such a model (and one
this node measured at or below chance) gets weight 0 whatever the reporters say; an inflated one is
calibrated back. The meta confidence of a document is the weighted trimmed mean of the calibrated
confidences.

Those weights rest on a handful of labels (devweb: 15-95 labelled documents per node, often 1-9 held out
per received model), and with them the meta-classifier filtered no better than the local model (won on
about half the nodes). Given the node's own crawled documents (unlabelled, plenty),
`latent_meta.meta_classifier` weighs instead by each model's balanced accuracy on the node's own
distribution, estimated from how its decisions there agree with the local model's, whose balanced accuracy
the labels tell by cross-validation (`agreement_weights`),
and combines the calibrated confidences as the weighted mean of their log-odds,
the received models speaking together as one voter beside the local one (they share errors: their
decisions covary with the local model's about twice as much as independence implies, so the pairwise
estimate also lifts most of them to the accuracy cap; dividing by the local model's cross-validated
accuracy is not the cause, that estimate is on average above the local model's true balanced accuracy on
the crawl, not below). On 22 devweb community runs (88 nodes) filtering at loss 0.2 then beat the local
model on 64 nodes and lost on 20 (mean +0.015, worst -0.052); summing the received models' weights as
independent votes, 58 and 26 (mean +0.014, worst -0.068); the measured weights and trimmed mean, 42 and
44 (mean +0.001, worst -0.078). Estimating every
model from the agreement of all (the full spectral meta-learner) won on 65 but lost up to -0.16: peers
blind to the same region of this node's documents agree with each other and outvote the local model. Only
models whose scaler this node could fit take part, so a label-flipped model still has no say.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from metamodels.calibration import PlattScaler, fit_platt
from metamodels.errors import MetamodelError
from metamodels.estimators import held_out_accuracy, robust_cross_accuracy
from metamodels.latent_class import fit_latent_class
from metamodels.linear import LinearModel
from metamodels.robust import (
    RobustSettings,
    accuracy_weight,
    anchored_balanced_accuracies,
    community_as_one_voter,
    silence_weaker_community,
)
from node.cooperation.training import MIN_AGREEMENT_DOCUMENTS, LabelledData, out_of_fold, training_key

ROBUST = RobustSettings()


Reports = Mapping[str, tuple[int, int]]  # reporter -> (correct, evaluated) of one model version (3.15)
SELF = ""  # the reporter name of this node's own measurement
MIN_REPORT = 3  # a reporter's accuracy counts once it tested at least this many documents


@dataclass(frozen=True)
class Member:
    """A base classifier of a meta-classifier with what this node and its community measured of it.

    correct/evaluated are this node's own measurement (held-out documents for a received model, k-fold
    cross-validation for the local one); community_accuracy is the robust aggregate over the distinct
    reporters (this node included) that the weight comes from."""

    origin: str
    version: int
    model: LinearModel
    correct: int
    evaluated: int
    weight: float
    scaler: PlattScaler | None
    local: bool = False
    community_accuracy: float | None = None
    community_evaluated: int = 0
    reporters: int = 0
    balanced_accuracy: float | None = None  # the local model's, cross-validated (smoothed per class)

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.evaluated if self.evaluated else None


def measure(
    model: LinearModel, data: LabelledData, exclude: Sequence[str] = ()
) -> tuple[int, int, np.ndarray]:
    """(correct, evaluated, held-out mask) of a model on the labelled documents it was not trained on
    (IDs compared as `training_key`s, the form they travel in)."""
    excluded = {training_key(i) for i in (*model.training_ids, *exclude)}
    keys = [training_key(i) for i in data.ids]
    mask = np.array([k not in excluded for k in keys], dtype=bool)
    if data.labels.size == 0:
        return 0, 0, mask
    predicted = (model.decision_function(data.X) > 0).astype(np.int8)
    correct, evaluated = held_out_accuracy(predicted, data.labels, keys, excluded)
    return correct, evaluated, mask


def _scaler(scores: np.ndarray, labels: np.ndarray) -> PlattScaler | None:
    if scores.size < ROBUST.min_evaluated or labels.min() == labels.max():
        return None
    try:
        return fit_platt(scores, labels)
    except MetamodelError:
        return None


def calibrated(model: LinearModel, data: LabelledData, held_out: np.ndarray) -> PlattScaler | None:
    """Platt scaler of a model on this node's labels: on the documents it was not trained on when they
    suffice and hold both classes, else on all of them (its scale is then too confident, but its
    direction is still checked; held-out documents of one class alone cannot fit a scale, and a model
    measured right on all of them used to get weight 0 for it).
    None when the model's scores run against this node's labels (a scaler with a >= 0 would turn a
    label-flipped model into a good one: such a model must have no say, not be repaired)."""
    both_classes = held_out.any() and np.unique(data.labels[held_out]).size == 2
    use_held_out = held_out.sum() >= ROBUST.min_evaluated and both_classes
    mask = held_out if use_held_out else np.ones_like(held_out)
    if not mask.any():
        return None
    scaler = _scaler(model.confidence(data.X[mask]), data.labels[mask])
    return scaler if scaler is not None and scaler.a < 0 else None


def community_weight(
    own: tuple[int, int], reports: Reports | None, origin: str
) -> tuple[float, float | None, int, int]:
    """(weight, accuracy, documents, reporters) of a model: from this node's own measurement when it
    tested the model on enough documents (`ROBUST.min_evaluated`), else from its peers' cross-validation
    reports (3.15) aggregated robustly (`robust_cross_accuracy`, this node's few documents included); a
    model's owner cannot vouch for itself. The node's own labelled data comes first because it is the one
    thing a node fully trusts and the distribution its filter runs on: peers seeded from other sites
    measure a good specialist low (devweb: a Sysadmin model right on 26 of 27 documents here, 2 of 8 on a
    peer, got weight 0 from the lower median), and no report can lift a model this node measured at or
    below chance."""
    votes = {r: counts for r, counts in (reports or {}).items() if r not in (origin, SELF)}
    if own[1]:
        votes[SELF] = own
    reporters = sum(1 for _, e in votes.values() if e >= MIN_REPORT)
    if own[1] >= ROBUST.min_evaluated:
        accuracy, documents = own[0] / own[1], own[1]
    else:
        aggregate = robust_cross_accuracy(votes, MIN_REPORT)
        if aggregate is None:
            return 0.0, None, 0, 0
        accuracy, documents = aggregate
    # the weight uses the posterior mean under a uniform prior ((correct + 1) / (n + 2)): 7 of 7 right is
    # weaker evidence than 70 of 70, and a perfect score on a handful must not outvote the others
    smoothed = (accuracy * documents + 1.0) / (documents + 2.0)
    return accuracy_weight(smoothed, documents, ROBUST), accuracy, documents, reporters


def received_member(
    origin: str, version: int, model: LinearModel, data: LabelledData, reports: Reports | None = None
) -> Member:
    correct, evaluated, mask = measure(model, data)
    scaler = calibrated(model, data, mask) if data.labels.size else None
    weight, accuracy, documents, reporters = community_weight((correct, evaluated), reports, origin)
    if scaler is None:
        weight = 0.0
    return Member(
        origin, version, model, correct, evaluated, weight, scaler, False, accuracy, documents, reporters
    )


def local_member(
    origin: str, version: int, model: LinearModel, data: LabelledData, reports: Reports | None = None
) -> Member:
    """The node's own model: accuracy and Platt scaler from out-of-fold confidences (a scaler fitted on
    the documents the model was trained on is far too confident and puts its sign threshold where the
    training documents are separable: devweb filtering accuracy of the local model alone at loss 0.2,
    0.80-0.87 with it, 0.84-0.92 with the out-of-fold one); the in-sample scaler only when the
    out-of-fold one cannot be fitted."""
    scores = out_of_fold(data)
    correct, evaluated = _sign_accuracy(scores, data.labels)
    scored = ~np.isnan(scores)
    scaler = _scaler(scores[scored], data.labels[scored]) if scored.any() else None
    if (scaler is None or scaler.a >= 0) and data.labels.size:
        scaler = _scaler(model.confidence(data.X), data.labels)
    weight, accuracy, documents, reporters = community_weight((correct, evaluated), reports, origin)
    return Member(
        origin,
        version,
        model,
        correct,
        evaluated,
        weight,
        scaler,
        True,
        accuracy,
        documents,
        reporters,
        _balanced_accuracy(scores, data.labels),
    )


def _sign_accuracy(scores: np.ndarray, labels: np.ndarray) -> tuple[int, int]:
    scored = ~np.isnan(scores)
    return int(np.sum((scores[scored] > 0).astype(np.int8) == labels[scored])), int(scored.sum())


def _balanced_accuracy(scores: np.ndarray, labels: np.ndarray) -> float | None:
    """Mean of the sign decisions' recall on each class, each smoothed as (right + 1) / (n + 2); None
    without scored documents of both classes."""
    scored = ~np.isnan(scores)
    positive, predicted = labels[scored] > 0, scores[scored] > 0
    if not positive.any() or positive.all():
        return None
    recall_positive = (np.sum(predicted & positive) + 1.0) / (positive.sum() + 2.0)
    recall_negative = (np.sum(~predicted & ~positive) + 1.0) / ((~positive).sum() + 2.0)
    return float((recall_positive + recall_negative) / 2.0)


def meta_candidates(community: Sequence[str], accuracies: Mapping[str, float]) -> list[str]:
    """Peers a meta build asks, in order: those measured above chance, best first, then those nobody could
    measure yet, whom the build weighs on the node's own documents as the round's automatic rebuild does
    (leaving them out made a user's build differ from the rebuild a round later); never a peer measured at
    or below chance or without a say here."""
    measured = sorted((p for p in community if accuracies.get(p, 0.0) > 0.5), key=lambda p: -accuracies[p])
    return measured + [p for p in community if p not in accuracies]


def anchored_accuracies(
    members: Sequence[Member], X: sp.spmatrix, labelled: LabelledData | None = None
) -> dict[int, float] | None:
    """Each member's balanced accuracy on the documents X (the node's own, unlabelled), estimated from its
    agreement with the local model there, whose balanced accuracy comes from cross-validation on the
    node's labels (`anchored_balanced_accuracies`), by member index; members without a scaler
    (label-flipped or unmeasurable) are left out. Where the local model's decisions on X are `one_sided`,
    the members decide at the crawl's own share instead (`decisions_at_the_crawls_share`, which needs the
    node's `labelled` documents). None without a local member measured above chance, or with fewer than
    `MIN_AGREEMENT_DOCUMENTS` documents."""
    local = next((i for i, m in enumerate(members) if m.local), None)
    if local is None or X.shape[0] < MIN_AGREEMENT_DOCUMENTS:
        return None
    reference = members[local]
    if reference.scaler is None or reference.balanced_accuracy is None:
        return None
    usable = [i for i, m in enumerate(members) if m.scaler is not None]
    column = usable.index(local)
    scores = [members[i].model.confidence(X) for i in usable]
    decisions = np.column_stack(
        [np.where(members[i].scaler.confidence(s) > 0, 1, -1) for i, s in zip(usable, scores, strict=True)]
    )
    reference_accuracy = reference.balanced_accuracy
    if one_sided(decisions[:, column]) and labelled is not None:
        matched = decisions_at_the_crawls_share(scores, column, reference, labelled)
        if matched is not None:
            decisions, reference_accuracy = matched
    accuracies = anchored_balanced_accuracies(decisions, column, reference_accuracy, ROBUST.max_accuracy)
    if accuracies is None:
        return None
    return {i: float(a) for i, a in zip(usable, accuracies, strict=True)}


MIN_DECIDED_SHARE = 0.02  # a model deciding fewer documents of one class than this is `one_sided`


def one_sided(decisions: np.ndarray) -> bool:
    """Whether +1/-1 decisions put fewer than `MIN_DECIDED_SHARE` of the documents in one class. Agreement
    with such a model says next to nothing: the covariance identity behind `anchored_accuracies` scales
    by 1 - b^2 (b its decisions' imbalance), so every other model comes out at chance."""
    share = float(np.mean(decisions > 0)) if decisions.size else 0.0
    return min(share, 1.0 - share) < MIN_DECIDED_SHARE


def decisions_at_the_crawls_share(
    scores: Sequence[np.ndarray], local: int, reference: Member, labelled: LabelledData
) -> tuple[np.ndarray, float] | None:
    """(decisions, the local model's balanced accuracy) from the members' raw `scores` on the node's
    documents, the local model's (`reference`) at position `local`: every member accepts the share of
    them that the latent class model of the local model's view puts on topic (its top documents), the
    accuracy that of the local model at its threshold on the node's labelled documents, smoothed. With two
    bookmarks of a topic among seventeen, the local model's Platt scaler rejected every crawled page
    while its view of the crawl split 40/60, and every peer model was estimated at chance and left out.
    In-sample the accuracy is optimistic, which lowers the others' estimates, never lifts them. None when
    the local view has no latent class model or the labels lack a class."""
    if labelled.labels.size == 0 or labelled.labels.min() == labelled.labels.max():
        return None
    log_odds = reference.scaler.log_odds(scores[local]).reshape(-1, 1)
    view = fit_latent_class(log_odds, [local], 0, MIN_AGREEMENT_DOCUMENTS)
    if view is None:
        return None
    thresholds = [float(np.quantile(s, 1.0 - view.prior)) for s in scores]
    decisions = np.column_stack([np.where(s > t, 1, -1) for s, t in zip(scores, thresholds, strict=True)])
    accuracy = _balanced_accuracy(reference.model.confidence(labelled.X) - thresholds[local], labelled.labels)
    return (decisions, accuracy) if accuracy is not None else None


def agreement_weights(
    members: Sequence[Member], X: sp.spmatrix, labelled: LabelledData | None = None
) -> list[float] | None:
    """Log-odds weights from each member's `anchored_accuracies` on the documents X (0 for members without
    one). The received models then speak as one voter beside the local one (`community_as_one_voter`):
    they share errors, so their weights are not summed as independent votes; and a voice weaker than the
    local model's gets no say (`silence_weaker_community`): sharing its errors, it would only pull the
    ranking towards its confident mistakes. None when the accuracies cannot be estimated."""
    accuracies = anchored_accuracies(members, X, labelled)
    if accuracies is None:
        return None
    local = next(i for i, m in enumerate(members) if m.local)
    weights = np.zeros(len(members))
    for i, accuracy in accuracies.items():
        weights[i] = accuracy_weight(accuracy, X.shape[0], ROBUST)
    return [float(w) for w in silence_weaker_community(community_as_one_voter(weights, local), local)]
