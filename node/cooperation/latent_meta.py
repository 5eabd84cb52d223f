"""The meta-classifier of a topic's members (Eq. 3.13/3.14): latent class models of their views of the
node's own crawl, deciding where they agree, else the members' weights from `weighing`.

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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from metamodels.latent_class import LatentClass, fit_latent_class, labels_view
from metamodels.meta_classifier import MetaClassifier
from metamodels.meta_functions import unanimous_confidence
from metamodels.robust import robust_combine
from node.cooperation.training import MIN_AGREEMENT_DOCUMENTS, LabelledData
from node.cooperation.weighing import ROBUST, Member, agreement_weights, anchored_accuracies

AGREEMENT_AGGREGATION = "log_odds_mean"

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
