"""The semantic layer's learning on one node's own data (thesis 3.3.2-3.3.4), without any network.

A topic's exchangeable model is its one-vs-rest linear SVM over the node's training documents of the topic
(bookmarks and the archetypes the focus loop adds): positives are the training documents of the topic's
subtree, negatives every other training document (other topics and OTHERS folders). A document's ID is its
URL (or file path), the same on every peer, so cross-validation can exclude shared training documents.

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
about half the nodes). Given the node's own crawled documents (unlabelled, plenty), `meta_classifier`
weighs instead by each model's balanced accuracy on the node's own distribution, estimated from how its
decisions there agree with the local model's, whose balanced accuracy the labels tell by cross-validation
(`agreement_weights`), and combines the calibrated confidences as the weighted mean of their log-odds,
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

All of these kept a threshold the labels set: the Platt scalers'. On the node's crawl it lies too high
(devweb: the local model accepted 0-33% of a topic's documents where 7-53% were on topic), and with the
ranking as it was, a shifted threshold alone would have filtered at 0.97-1.0. So, given the node's own
documents, `meta_classifier` fits latent class models of the members' log-odds there
(`metamodels.latent_class`): one of the local model's view alone, which a node without peers gets too
(stored devweb runs: filtering 0.90 -> 0.945-0.96), and one of the community's views (the local model and
every peer model estimated above chance); the meta-classifier decides where the two agree and abstains
first where they do not (the thesis's unanimous rule): better than the local model's own on 47 of 68
stored nodes, equal on 11, worse on 10 (worst -0.005). Where the local model's view shows no two classes
the threshold its labels set votes in its place, so a peer's model can make the node abstain, never decide
otherwise. The agreement weights remain for when no latent class model fits.
Filtering ranks a topic's documents by `filtering_scores`: the meta confidence less the strongest claim of
a rival topic's meta-classifier (`rival_topics`: a sibling of the topic or of a topic above it), as a
document is one topic's.
Functions here read the repository and are meant to run in a worker thread.
"""

from __future__ import annotations

import base64
import hashlib
import math
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np
import scipy.sparse as sp

from crawler.focus import in_subtree
from crawler.preview import passages, without_repeated_lines
from crawler.repository import Repository
from crawler.search import site_template
from crawler.urls import host_of
from metamodels.calibration import PlattScaler, fit_platt
from metamodels.clustering import ClusteringModel, kmeans, restrict, top_terms
from metamodels.errors import MetamodelError
from metamodels.estimators import held_out_accuracy, robust_cross_accuracy
from metamodels.features import Featurizer, tokenize
from metamodels.latent_class import LatentClass, fit_latent_class, labels_view
from metamodels.linear import Calibration, LinearModel, train_linear_svm
from metamodels.meta_classifier import MetaClassifier
from metamodels.meta_clustering import apply_models, consensus
from metamodels.meta_functions import ABSTAIN, ABSTAIN_LABEL, ACCEPT, REJECT, unanimous_confidence
from metamodels.restrictive import loss_targeted_decisions, rival_margins
from metamodels.robust import (
    RobustSettings,
    accuracy_weight,
    anchored_balanced_accuracies,
    community_as_one_voter,
    robust_combine,
    silence_weaker_community,
)
from metamodels.topic_model import parent_of, topic_prefixes

CURVE_LOSSES = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
VERDICTS = {ACCEPT: "accepted", ABSTAIN: "abstained", -1: "rejected"}
ROBUST = RobustSettings()
KEY_PREFIX, KEY_LENGTH = "#", 7  # a training document's key: "#" + 6 base64url characters (36 bits)
MIN_AGREEMENT_DOCUMENTS = 30  # documents needed before two models' decisions are compared


@dataclass(frozen=True)
class LabelledData:
    """The node's labelled documents for one topic: 1 inside the topic's subtree, 0 elsewhere."""

    ids: tuple[str, ...]
    X: sp.csr_matrix
    labels: np.ndarray

    @property
    def positives(self) -> int:
        return int(self.labels.sum())

    @property
    def negatives(self) -> int:
        return int(self.labels.size - self.labels.sum())


def training_rows(repo: Repository) -> list[tuple[str, str, int, str]]:
    """(id, topic, polarity, text) of every training document with text, each ID once."""
    if not repo.db["training_documents"].exists():
        return []
    seen: set[str] = set()
    rows = []
    for row_id, topic, polarity, url, path, title, text in repo.db.execute(
        "SELECT id, topic, polarity, url, path, title, text FROM training_documents "
        "WHERE text != '' ORDER BY id"
    ):
        doc_id = url or path or f"training:{row_id}"
        if doc_id in seen:
            continue
        seen.add(doc_id)
        rows.append((doc_id, topic, int(polarity), f"{title}\n{text}"))
    return rows


def training_fingerprint(repo: Repository) -> str:
    """Changes whenever training documents are added or replaced (an import, archetypes of a retraining)."""
    if not repo.db["training_documents"].exists():
        return ""
    count, last = repo.db.execute("SELECT count(*), coalesce(max(id), 0) FROM training_documents").fetchone()
    return f"{count}:{last}"


def topic_labels(rows: Sequence[tuple[str, str, int, str]], topic: str) -> np.ndarray:
    """1 for the training documents of the topic's subtree, 0 for every other one."""
    inside = [polarity == 1 and in_subtree(t, topic) for _, t, polarity, _ in rows]
    return np.array(inside, dtype=np.int8)


def labelled_data(
    rows: Sequence[tuple[str, str, int, str]], topic: str, featurizer: Featurizer
) -> LabelledData:
    labels = topic_labels(rows, topic)
    X = (
        featurizer.transform([text for *_, text in rows])
        if rows
        else sp.csr_matrix((0, featurizer.config.n_features))
    )
    return LabelledData(tuple(r[0] for r in rows), sp.csr_matrix(X), labels)


def train_local(data: LabelledData, min_positives: int = 1, C: float = 1.0) -> LinearModel | None:
    """The topic's local model, or None while it lacks positives or negatives."""
    if data.positives < min_positives or data.negatives < 1:
        return None
    return train_linear_svm(data.X, data.labels, C, training_ids=data.ids)


def own_document_count(repo: Repository) -> int:
    """How many documents the node crawled itself, duplicates left out (what `own_documents` chooses from,
    pages without text aside). Read from the search index alone: asked every cooperation round, and in a
    row these columns sit after the text, so a filter on them read every page's text."""
    query = (
        "SELECT count(*) FROM documents INDEXED BY documents_search "
        "WHERE origin IS NULL AND duplicate_of IS NULL"
    )
    return int(repo.db.execute(query).fetchone()[0])


def own_documents(repo: Repository, featurizer: Featurizer, limit: int = 1000) -> sp.csr_matrix:
    """Features of the node's newest own crawled documents (not pooled): where a shipped model's decisions
    are compared with the full model's."""
    rows = repo.db.execute(
        "SELECT title, text FROM documents WHERE origin IS NULL AND duplicate_of IS NULL "
        "AND text IS NOT NULL AND text != '' ORDER BY id DESC LIMIT ?",
        [limit],
    ).fetchall()
    if not rows:
        return sp.csr_matrix((0, featurizer.config.n_features))
    return sp.csr_matrix(featurizer.transform([f"{title}\n{text}" for title, text in rows]))


def pruned(
    model: LinearModel,
    data: LabelledData,
    X: sp.spmatrix,
    loss: float,
    agreement: float,
    *,
    min_weights: int = 64,
    min_documents: int = MIN_AGREEMENT_DOCUMENTS,
) -> LinearModel:
    """The model restricted to its largest weights: the fewest whose loss-targeted decisions (accept,
    abstain, reject at `loss`, as filtering uses them) agree with the full model's on at least `agreement`
    of the documents X; recalibrated on the training data. Shipped models shrink with their decisions kept
    (a weight carried by one training document rarely decides anything). Unchanged without evidence."""
    n = model.indices.size
    if agreement >= 1.0 or X.shape[0] < min_documents or n < min_weights:
        return model
    order = np.argsort(-np.abs(model.weights), kind="stable")

    def top(k: int) -> LinearModel:
        keep = np.sort(order[:k])
        return replace(model, indices=model.indices[keep], weights=model.weights[keep])

    def agrees(k: int) -> bool:
        return decision_agreement(model, top(k), X, loss) >= agreement

    low, high = max(1, n // 32), n
    while low < high:
        mid = (low + high) // 2
        if agrees(mid):
            high = mid
        else:
            low = mid + 1
    if high == n:
        return model
    small = top(high)
    return replace(small, calibration=Calibration.of(small.decision_function(data.X), data.labels))


def decision_agreement(a: LinearModel, b: LinearModel, X: sp.spmatrix, loss: float) -> float:
    """Share of the documents X on which two models' loss-targeted decisions (accept, abstain, reject)
    agree: whether a retrained model decides differently enough to be worth shipping again."""
    if X.shape[0] == 0:
        return 0.0
    first = loss_targeted_decisions(a.decision_function(X), loss)
    return float(np.mean(loss_targeted_decisions(b.decision_function(X), loss) == first))


def fold_splits(n: int, folds: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(train, test) indices of k-fold cross-validation over n documents, shuffled the same way every time
    so that figures measured on the same documents are comparable."""
    order = np.random.default_rng(0).permutation(n)
    for fold in range(min(folds, n)):
        test = order[fold::folds]
        yield np.setdiff1d(order, test), test


def out_of_fold(data: LabelledData, folds: int = 5, C: float = 1.0) -> np.ndarray:
    """Normalised confidences of the local training procedure on the node's labelled documents by k-fold
    cross-validation: each document scored by a model trained without it (NaN where a fold had one class
    to train on, all NaN with fewer than 2 positives or negatives)."""
    n = data.labels.size
    scores = np.full(n, np.nan)
    if data.positives < 2 or data.negatives < 2:
        return scores
    for train, test in fold_splits(n, folds):
        y = data.labels[train]
        if y.min() == y.max():
            continue
        scores[test] = train_linear_svm(data.X[train], y, C).confidence(data.X[test])
    return scores


def _sign_accuracy(scores: np.ndarray, labels: np.ndarray) -> tuple[int, int]:
    scored = ~np.isnan(scores)
    return int(np.sum((scores[scored] > 0).astype(np.int8) == labels[scored])), int(scored.sum())


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


@lru_cache(maxsize=65536)
def training_key(doc_id: str) -> str:
    """A training document's ID as models carry it: "#" and a 36-bit BLAKE2b digest in base64url, 7
    characters instead of a URL; a key stays itself. Receivers compare keys of their own IDs, so IDs
    never travel in the clear. A collision only leaves one of the receiver's documents out of a model's
    test (about n / 2**36 of them for a model trained on n documents: 2e-9 at devweb's 155), while
    13-character keys made up a third of a shipped model (10.7 bytes each compressed; 7 characters: 6)."""
    if doc_id.startswith(KEY_PREFIX) and len(doc_id) == KEY_LENGTH:
        return doc_id
    digest = hashlib.blake2b(doc_id.encode("utf-8"), digest_size=6).digest()
    return KEY_PREFIX + base64.urlsafe_b64encode(digest).decode("ascii")[: KEY_LENGTH - 1]


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


AGREEMENT_AGGREGATION = "log_odds_mean"


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


MIN_VIEWS = 2  # models the community's latent class model needs: the local one and at least one peer's


def member_log_odds(members: Sequence[Member], indices: Sequence[int], X: sp.spmatrix) -> np.ndarray:
    """The members' calibrated log-odds on X (documents x members), uncapped: linear in each model's
    score, where a cap would pile the confident documents of a class on one value (whose fitted variance
    then makes any other value look like the other class: on a devweb node, half of a database site's
    pages were accepted as Mathematics)."""
    return np.column_stack([members[i].scaler.log_odds(members[i].model.confidence(X)) for i in indices])


MIN_CHECKED_NEGATIVES = 3  # labelled negatives needed before a latent class model is checked against them
MIN_SEPARATION = 0.5  # pooled standard deviations between a latent class model's classes on the local view


def stands_for_the_topic(
    voter: LatentClass, members: Sequence[Member], labelled: LabelledData | None
) -> bool:
    """Whether a latent class model of the crawl may decide for the topic: its classes apart on the local
    model's view (not `overlapping`) and its positive class not the home of the node's labelled negatives
    (not `splits_off_the_topic`)."""
    local = next(i for i, m in enumerate(members) if m.local)
    return not overlapping(voter, local) and not splits_off_the_topic(voter, members, labelled)


def overlapping(voter: LatentClass, local: int) -> bool:
    """Whether the model's two classes lie less than `MIN_SEPARATION` apart on the local model's view.
    Such a mixture misclassifies 40% of the crawl by its own account (Phi(-0.25)) and its posterior can
    put nearly every page on topic: WebKB community nodes' faculty models, separations 0.13-0.46, held
    83-100% of their crawls on topic while their labels' threshold held 1-23% (filtering at 0.16-0.30
    instead of 0.85-0.93). On the devweb and the demo no latent class model is below 0.87."""
    return local in voter.views and float(voter.separations()[voter.views.index(local)]) < MIN_SEPARATION


def splits_off_the_topic(
    voter: LatentClass, members: Sequence[Member], labelled: LabelledData | None
) -> bool:
    """Whether a latent class model's positive class takes in most of the node's labelled negatives,
    scored by the very models that were trained to reject them. The two classes a crawl splits into need
    not be the topic and the rest: where the topic's pages are few among many kinds of page (WebKB
    faculty among student, project and department pages), the split can fall between a small group
    scored lowest and everything else, and the topic filter then accepts nearly every page: two WebKB
    community nodes filtered faculty at 0.22 and 0.39 (all 12 and 14 labelled negatives accepted), 0.86
    and 0.80 with this check. On 6 devweb runs no local latent class model accepted more than 2 of 15 of
    its labelled negatives, and no figure changed."""
    if labelled is None:
        return False
    negatives = labelled.X[labelled.labels == 0]
    return accepts_most_negatives(voter, member_log_odds(members, voter.views, negatives))


def accepts_most_negatives(voter: LatentClass, log_odds: np.ndarray) -> bool:
    """Whether the latent class model's posterior is positive for most of the labelled negatives, given
    as its views' log-odds on them (documents x views); False with fewer than `MIN_CHECKED_NEGATIVES`."""
    if log_odds.shape[0] < MIN_CHECKED_NEGATIVES:
        return False
    return bool(np.mean(voter.log_odds(log_odds) > 0) > 0.5)


def looser_share(local: np.ndarray, community: np.ndarray, claimed: np.ndarray | None = None) -> float:
    """The share of documents the community's latent class model accepts and the local model's rejects,
    from each one's posterior log-odds on the same documents, leaving out those a rival topic `claimed`
    (`rival_claims`)."""
    if local.size == 0:
        return 0.0
    looser = (community > 0) & ~(local > 0)
    if claimed is not None:
        looser &= ~claimed
    return float(np.mean(looser))


def accepts_beyond_the_loss(
    local: np.ndarray, community: np.ndarray, loss: float, claimed: np.ndarray | None = None
) -> bool:
    """Whether the community's latent class model accepts more of the node's documents that the local
    model's rejects (posterior log-odds of each on them) than the share `loss` filtering dismisses. The
    unanimous rule dismisses disagreements first, so such a model spends the whole loss on pages the node's
    own model rejects, and every page both accept is decided, the ones the node doubts included: a looser
    model of the topic that takes the node's abstentions instead of making it abstain where it is unsure.
    Documents a rival topic `claimed` do not count: filtering weighs a topic against its rivals'
    claims (`filtering_margins`), so a disagreement there is a confident rejection, not a dismissal.
    Every peer's Databases model ranked a devweb node's Mathematics pages between its database and
    sysadmin pages, and the community's two classes were the first two against the third: 43% of the crawl
    looser than the node, 9% once its Mathematics pages were left out. Replayed on 30 kept devweb runs
    (120 nodes), 14 nodes changed, every one up (node 0.964 -> 0.969, 0.989 -> 0.994, ...), meta vs the node
    alone 109/6/5 better/equal/worse -> 113/4/3; on 8 WebKB runs no node changed."""
    return looser_share(local, community, claimed) > loss


def rival_claims(metas: Mapping[str, MetaClassifier], topic: str, X: sp.spmatrix) -> np.ndarray | None:
    """Which documents of X a rival topic's meta-classifier accepts (`rival_topics` among `metas`);
    None without rivals."""
    rivals = rival_topics(topic, metas)
    if not rivals or X.shape[0] == 0:
        return None
    return np.any(np.column_stack([meta_scores(metas[s], X) > 0 for s in rivals]), axis=1)


def measures_looseness(local_voter: LatentClass | None) -> bool:
    """Whether the local voter can tell a community model looser than the node (`accepts_beyond_the_loss`):
    its own latent class model of the crawl can, its labels' threshold (`labels_view`) cannot. Platt
    scalers fitted on bookmarks accept a fraction of a crawl's on-topic pages (on devweb nodes 0-33% where
    7-53% were), so beside one any community model that finds the crawl's share looks looser, and was
    left out. Replayed on 17 kept 1200-page devweb runs (68 nodes), one node changed: its Databases filter,
    45% of its crawl on topic, 0.74 -> 0.82. On 4 WebKB runs (16 nodes) the faculty filters of 4 nodes went
    0.85 -> 0.93, 0.85 -> 0.94, 0.85 -> 0.92, 0.74 -> 0.77 and one 0.88 -> 0.84; meta vs the node alone
    7 better, 5 equal, 4 worse before, 10, 3, 3 after; mean 0.848 -> 0.855 (alone 0.850)."""
    return local_voter is not None and not local_voter.of_labels


def posterior_log_odds(voter: LatentClass, members: Sequence[Member], X: sp.spmatrix) -> np.ndarray:
    """A latent class model's posterior log-odds on X, from the views of the members it reads."""
    return voter.log_odds(member_log_odds(members, voter.views, X))


def latent_meta_classifier(
    members: Sequence[Member],
    X: sp.spmatrix,
    labelled: LabelledData | None = None,
    loss: float | None = None,
    claimed: np.ndarray | None = None,
) -> MetaClassifier | None:
    """The restrictive meta-classifier of two latent class models (`metamodels.latent_class`) of the
    members' log-odds on the node's own documents X, deciding where they agree (`unanimous_confidence`):
    the local model's alone, which moves its threshold to where its own view of the crawl splits, and
    the community's, of the local model and every member estimated better than chance there
    (`anchored_accuracies`, copies of an earlier one left out by the fit), when there are `MIN_VIEWS`.
    A member's weight is how far its view separates the classes (0: no say). Without peers, or when the
    node's labels are too few to measure its own model (two bookmarks and no archetypes yet), it is the
    local model's alone (the demo's third node had filtered Databases with its Platt scaler at 0.42-0.47
    there); None when neither fits (no two-class structure, too few documents). With the node's
    `labelled` documents, a latent class model that accepts most of its negatives is left out, as is one whose
    classes overlap (`stands_for_the_topic`). Where the local model's own view has no latent class model of
    its own, the threshold its labels set votes in its place (`labels_view`): a peer's model can make the node
    abstain, never decide otherwise. (Letting the community's model decide alone there put it below the node
    alone by up to 29 points on WebKB nodes, whose topic pages are few among many kinds of page, and by 2.3 on
    a devweb node; now by at most 4.9 and 0.5. On four sets of stored devweb runs the meta means moved by -1.2
    to -0.1 points, on the demo's not at all.) Built for a filtering `loss`, the community's model is left out
    where it accepts more than that share of the node's documents that the local model's rejects, those a
    rival topic `claimed` aside (`accepts_beyond_the_loss`), when the local model has a view of its own
    (`measures_looseness`): on WebKB community nodes it held 40-90% of a topic's crawl on topic where
    3-34% were, and on 52 stored nodes the meta-classifier was below the node alone on 32 (worst -7.1
    points), on 10 with this rule (worst -2.7). Where the community's model is the stricter one (it rejects
    what the local model accepts) it keeps its vote, however much they disagree: on the stored runs it was
    right there (a devweb node 0.84 alone, 0.97 with it; demo nodes 0.82 -> 0.99, 0.98 -> 1.00, and WebKB
    course filters). Of 72 stored devweb nodes one changed (0.98 -> 0.95, alone 0.94), of 27 demo nodes one
    (1.00 -> 0.99, alone 0.98)."""
    local = next((i for i, m in enumerate(members) if m.local), None)
    if local is None or members[local].scaler is None:
        return None
    accuracies = anchored_accuracies(members, X, labelled) or {}
    candidates = [local] + [i for i, a in sorted(accuracies.items()) if i != local and a > ROBUST.chance]
    log_odds = member_log_odds(members, candidates, X)
    voters = [fit_latent_class(log_odds[:, :1], [local], 0, MIN_AGREEMENT_DOCUMENTS)]
    if len(candidates) >= MIN_VIEWS:
        community = fit_latent_class(log_odds, candidates, 0, MIN_AGREEMENT_DOCUMENTS)
        voters.append(community if community is not None and len(community.views) >= MIN_VIEWS else None)
    checked = [v if v is not None and stands_for_the_topic(v, members, labelled) else None for v in voters]
    if checked[0] is None and any(v is not None for v in checked[1:]):
        checked[0] = labels_view(local)
    if loss is not None and len(checked) > 1 and measures_looseness(checked[0]) and checked[1] is not None:
        local_view, community = (posterior_log_odds(v, members, X) for v in checked[:2])
        if accepts_beyond_the_loss(local_view, community, loss, claimed):
            checked[1] = None
    fitted = tuple(v for v in checked if v is not None)
    if not fitted:
        return None
    weights = np.zeros(len(members))
    for voter in fitted:
        weights[list(voter.views)] = np.maximum(weights[list(voter.views)], voter.separations())
    return MetaClassifier(
        models=tuple(m.model for m in members),
        weights=tuple(float(w) for w in weights),
        scalers=tuple(m.scaler for m in members),
        latent=fitted,
    )


def meta_classifier(
    members: Sequence[Member],
    unlabelled: sp.spmatrix | None = None,
    labelled: LabelledData | None = None,
    loss: float | None = None,
    claimed: np.ndarray | None = None,
) -> MetaClassifier:
    """Eq. 3.13/3.14 over the members. With the node's own unlabelled documents (`own_documents`), the
    latent class models of the members' views of them (`latent_meta_classifier`, checked against the
    node's `labelled` documents and, for a filtering `loss`, against the local model's rejections that no
    rival topic `claimed`: `rival_claims`); failing that, weighed by `agreement_weights` and combined
    by the mean of log-odds; else (or when that cannot be estimated) by their measured weights and the
    trimmed mean. When nothing could be measured the local model decides
    alone (weight 1), as a node without peers would."""
    if unlabelled is not None:
        latent = latent_meta_classifier(members, unlabelled, labelled, loss, claimed)
        if latent is not None:
            return latent
    scalers = tuple(m.scaler for m in members)
    agreement = agreement_weights(members, unlabelled, labelled) if unlabelled is not None else None
    if agreement is not None and any(w > 0 for w in agreement):
        return MetaClassifier(
            models=tuple(m.model for m in members),
            weights=tuple(agreement),
            scalers=scalers,
            aggregation=AGREEMENT_AGGREGATION,
        )
    weights = [m.weight for m in members]
    if not any(w > 0 for w in weights):
        weights = [1.0 if m.local else 0.0 for m in members]
        if not any(weights):
            weights = [1.0] * len(members)
    return MetaClassifier(
        models=tuple(m.model for m in members),
        weights=tuple(weights),
        scalers=tuple(m.scaler for m in members),
    )


def combination(model: Mapping[str, Any] | None, members: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """How a stored meta-classifier (its dict) combines its members, for people: {"rule", "voters"}, each
    voter the origins of the models it reads and the share of the node's documents it holds on topic."""
    model = model or {}
    voters = [
        {
            "models": [str(members[v].get("origin")) for v in voter["views"] if v < len(members)],
            "on_topic_share": None if voter.get("of_labels") else float(voter["prior"]),
        }
        for voter in model.get("latent") or []
    ]
    if voters:
        rule = "unanimous latent class models" if len(voters) > 1 else "latent class model"
    else:
        rule = str(model.get("aggregation") or ROBUST.aggregation)
    return {"rule": rule, "voters": voters}


def meta_scores(meta: MetaClassifier, X: sp.spmatrix) -> np.ndarray:
    """Signed meta confidence per document: the unanimous decision of its latent class models (2P - 1 of
    the less sure, 0 where they disagree) when the meta-classifier has them, else its aggregation of the
    calibrated confidences (weighted trimmed mean unless it names another)."""
    if X.shape[0] == 0:
        return np.zeros(0)
    if meta.latent:
        votes = np.column_stack([voter.log_odds(meta.view_log_odds(X, voter)) for voter in meta.latent])
        return np.tanh(0.5 * unanimous_confidence(votes))
    settings = ROBUST if meta.aggregation is None else replace(ROBUST, aggregation=meta.aggregation)
    return robust_combine(meta.responses(X), meta.weights, settings)


def rival_topics(topic: str, topics: Iterable[str]) -> list[str]:
    """The topics a page of `topic` could be filed in instead, sorted: its siblings in the topic tree and
    those of every topic above it. A page of "Science/Mathematics" may be one of "Databases" beside
    "Science": with its siblings alone an only child had no rival, and one-vs-rest its latent class model
    could take the pages of the node's other topics."""
    above = topic_prefixes(topic)
    levels = {parent_of(t) for t in above}
    return sorted(t for t in set(topics) if t not in above and parent_of(t) in levels)


def rivalled_by(topic: str, topics: Iterable[str]) -> list[str]:
    """The topics among `topics` that have `topic` for a rival (`rival_topics`), sorted."""
    return sorted(t for t in set(topics) if topic in rival_topics(t, topics))


def filtering_scores(metas: Mapping[str, MetaClassifier], topic: str, X: sp.spmatrix) -> np.ndarray:
    """What restrictive filtering ranks the documents X by for a topic (`filtering_margins` of the
    meta-classifiers' scores)."""
    scores = {t: meta_scores(metas[t], X) for t in [topic, *rival_topics(topic, metas)]}
    return filtering_margins(scores, topic)


def filtering_margins(scores: Mapping[str, np.ndarray], topic: str) -> np.ndarray:
    """A topic's meta confidences (scores: topic -> `meta_scores` of the same documents) less the
    strongest claim of a rival topic (`rival_topics`, `rival_margins`). One-vs-rest, a topic's latent class
    model of a crawl holding another of the node's topics can take that topic for its own: on three stored
    fixture demos the worst topic filter rose from 0.19 to 0.83 (the node alone's from 0.14 to 0.83); on 26
    stored devweb runs (104 nodes) the node alone's mean rose by 0.4-0.8 points and the meta-classifier's
    by 0.2-0.6."""
    return rival_margins(scores[topic], [scores[s] for s in rival_topics(topic, scores)])


def decision_accuracy(scores: np.ndarray, labels: np.ndarray, loss: float) -> float | None:
    """Accuracy of loss-targeted decisions against 1/0 labels; None when nothing is decided."""
    if scores.size == 0:
        return None
    decisions = loss_targeted_decisions(scores, loss)
    decided = decisions != ABSTAIN
    if not decided.any():
        return None
    truth = np.where(labels > 0, ACCEPT, -1)
    return float(np.mean(decisions[decided] == truth[decided]))


def loss_curve(scores: np.ndarray, labels: np.ndarray) -> list[dict[str, float | None]]:
    return [{"loss": loss, "accuracy": decision_accuracy(scores, labels, loss)} for loss in CURVE_LOSSES]


# -- the repository's documents of a topic ---------------------------------------------------------------
@dataclass(frozen=True)
class TopicDocuments:
    doc_ids: np.ndarray
    titles: tuple[str, ...]
    texts: tuple[str, ...]


def topic_documents(
    repo: Repository, topic: str, *, include_pooled: bool = True, unjudged: bool = False
) -> TopicDocuments:
    """Documents the crawler (or a peer) filed in the topic's subtree, duplicates left out (with
    `unjudged`, only those without a restrictive verdict yet)."""
    pooled = ("" if include_pooled else " AND origin IS NULL") + (" AND verdict IS NULL" if unjudged else "")
    rows = repo.db.execute(
        f"SELECT id, title, text FROM documents WHERE {_IN_TOPIC}{pooled} ORDER BY id", _in_topic(topic)
    ).fetchall()
    return TopicDocuments(
        np.array([r[0] for r in rows], dtype=np.int64),
        tuple(r[1] or "" for r in rows),
        tuple(f"{r[1]}\n{r[2]}" for r in rows),
    )


# A document the crawler (or a peer) filed in the topic's subtree, not a duplicate: `_in_topic` binds it.
_IN_TOPIC = "duplicate_of IS NULL AND accepted = 1 AND (topic = ? OR substr(topic, 1, ?) = ?)"


def _in_topic(topic: str) -> list[object]:
    return [topic, len(topic) + 1, topic + "/"]


def abstain_cutoff(scores: np.ndarray, decisions: np.ndarray) -> float:
    """The largest |score| loss-targeted filtering dismissed (-1 when it dismissed none): documents that
    come later are judged against it instead of shifting every earlier verdict."""
    dismissed = np.abs(scores[decisions == ABSTAIN])
    return float(dismissed.max()) if dismissed.size else -1.0


def cutoff_decisions(scores: np.ndarray, cutoff: float) -> np.ndarray:
    """Decisions by sign, abstaining where |score| <= cutoff (see `abstain_cutoff`)."""
    decisions = np.where(scores > 0, ACCEPT, -1).astype(np.int8)
    decisions[np.abs(scores) <= cutoff] = ABSTAIN
    return decisions


PREVIEW_LINE = 40  # characters a text line needs to count as content rather than navigation
PREVIEW_SCAN = 20_000  # characters of a page read for its preview: its lead is near the start


def preview(text: str, chars: int, skip_lines: Collection[str] = frozenset()) -> str:
    """The snippet peers see and search of a pooled result: the first `chars` characters of the page's
    sentences of running text, lines of its site's template (`skip_lines`) left out. The first lines of a
    page are mostly navigation ("Modules | Directives | FAQ", "Next: Fillsteps Up: Plotting styles"),
    which a cut of the first long lines sent as the preview of most devweb pages. A page without such
    sentences sends its lines of `PREVIEW_LINE` characters or more, else its text."""
    head = text[:PREVIEW_SCAN]
    sentences = [p.text for p in passages(head, skip_lines) if p.content]
    content = sentences or [line for line in head.splitlines() if len(line.strip()) >= PREVIEW_LINE]
    return " ".join(" ".join(content or [head]).split())[:chars]


def result_previews(repo: Repository, rows: Sequence[Mapping[str, Any]], chars: int) -> list[str]:
    """`preview` of each row's text (with its url), its host's template lines left out."""
    templates: dict[str, set[str]] = {}
    shown = []
    for row in rows:
        host = host_of(row["url"])
        if host not in templates:
            templates[host] = site_template(repo, host)
        shown.append(preview(row["text"] or "", chars, templates[host]))
    return shown


VERDICT_KEYS = ("kept", "rejected", "abstained")
"""The counts of a filtering (`write_verdicts`), as a meta build and a new loss answer them."""


def write_verdicts(repo: Repository, doc_ids: np.ndarray, decisions: np.ndarray) -> dict[str, int]:
    """Store each document's restrictive verdict; how many it kept, rejected and abstained on."""
    with repo.transaction() as db:
        db.conn.executemany(
            "UPDATE documents SET verdict = ? WHERE id = ?",
            [(VERDICTS[int(d)], int(i)) for i, d in zip(doc_ids, decisions, strict=True)],
        )
    return {
        "kept": int(np.sum(decisions == ACCEPT)),
        "rejected": int(np.sum(decisions == REJECT)),
        "abstained": int(np.sum(decisions == ABSTAIN)),
    }


def verdict_counts(repo: Repository, topic: str) -> dict[str, int]:
    """The topic's documents by their restrictive verdict now (kept, rejected, abstained, and `unjudged`:
    filed since the last round judged them). Documents filed after a filtering are judged against its
    cut-off, so the counts that filtering stored grow stale; these do not."""
    rows = repo.db.execute(
        f"SELECT verdict, count(*) FROM documents WHERE {_IN_TOPIC} GROUP BY verdict", _in_topic(topic)
    ).fetchall()
    by_verdict = {verdict: int(n) for verdict, n in rows}
    names = {"kept": VERDICTS[ACCEPT], "rejected": VERDICTS[REJECT], "abstained": VERDICTS[ABSTAIN]}
    counts = {key: by_verdict.get(verdict, 0) for key, verdict in names.items()}
    return {**counts, "unjudged": by_verdict.get(None, 0)}


# -- collaborative clustering (3.3.3) ---------------------------------------------------------------------
def local_centroids(X: sp.csr_matrix, k: int, featurizer: Featurizer, seed: int = 0) -> ClusteringModel:
    return kmeans(X, k, featurizer.config, seed=seed).model


def cluster_proposals(
    docs: TopicDocuments,
    X: sp.csr_matrix,
    models: Sequence[ClusteringModel],
    k: int,
    loss: float,
    featurizer: Featurizer,
) -> list[dict[str, object]]:
    """Meta clusters of the node's own documents from its own and its peers' centroid models: labels mapped
    onto each other (the similarity or the purity mapping, whichever agrees more with the models:
    `consensus`), combined by a confidence vote, the least confident `loss` share left unassigned. Terms are
    shown as the words the documents use, not as stems, and come from the documents' own lines: lines that
    several of them share (a site's menus, slogans, language lists) labelled a cluster of one site's pages
    "choose, download, fast" from SQLite's "Small. Fast. Reliable. Choose any three." and its menu."""
    usable = [m for m in models if m.k == k]
    labels, confidences = apply_models(usable, X)
    voted = consensus(labels, confidences, k).clustering
    kept = restrict(voted, loss)
    texts = without_repeated_lines(docs.texts)
    words = surface_forms(texts, featurizer)
    stems = top_terms([featurizer.terms(t) for t in texts], kept.labels, k, 10)
    terms = [[words.get(stem, stem) for stem in cluster_terms] for cluster_terms in stems]
    proposals = []
    for cluster in range(k):
        members = np.flatnonzero(kept.labels == cluster)
        if members.size == 0:
            continue
        best = members[np.argsort(-voted.confidence[members], kind="stable")]
        abstained = int(np.sum((voted.labels == cluster) & (kept.labels == ABSTAIN_LABEL)))
        proposals.append(
            {
                "label": ", ".join(terms[cluster][:3]) or f"cluster {cluster + 1}",
                "top_terms": list(terms[cluster]),
                "sample_titles": [docs.titles[i] for i in best[:5]],
                "size": int(members.size),
                "abstained": abstained,
                "doc_ids": [int(docs.doc_ids[i]) for i in members],
            }
        )
    return proposals


def surface_forms(texts: Sequence[str], featurizer: Featurizer) -> dict[str, str]:
    """Each stem's most frequent word in `texts` ('tutorial' for 'tutori'): labels a person can read."""
    seen: dict[str, Counter[str]] = defaultdict(Counter)
    for text in texts:
        for token in tokenize(text):
            stems = featurizer.terms(token)
            if stems:
                seen[stems[0]][token] += 1
    return {stem: words.most_common(1)[0][0] for stem, words in seen.items()}


def finite_or_none(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)
