"""Hostile peers against the meta-classifier: plain (thesis) versus robust combination (beyond the thesis).

Protocol of 3.4.4 with 16 peers; peer 0 combines all 16 models and is honest. 0, 2 or 4 other peers send
hostile models instead of their own:
- flipped: an SVM trained on the peer's data with every label flipped;
- random: random weights over the peer's own terms (an honest-looking calibration computed on its data);
- flipped_amplified: flipped, and the shipped calibration scale divided by 100 so its confidences shout
  (the model dict is plain data the sender controls).
Plain combination: eq. 3.13 with equal weights over raw confidences. Robust combination: each received
model is measured on peer 0's own labelled documents (minus the model's training IDs); it is weighed by the
log-odds of that accuracy (0 at or below chance), its scores are Platt-calibrated on the same documents,
and the per-document aggregate is a weighted trimmed mean. Peer 0's own model has no held-out local data,
so it gets the median weight of the accepted models and a scaler fitted on its training scores.
The drop is the accuracy lost with 4 hostile peers against the all-honest run, at loss 0.

    python -m simnet.experiments.poisoning --corpus 20ng --pairs 20
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from metamodels.calibration import fit_platt
from metamodels.estimators import held_out_accuracy
from metamodels.linear import Calibration, LinearModel, train_linear_svm
from metamodels.meta_functions import weighted_sum
from metamodels.restrictive import correct_and_decided, loss_targeted_decisions
from metamodels.robust import RobustSettings, accuracy_weights, robust_combine
from simnet.experiments.collab_classify import (
    PreparedCorpus,
    Setup,
    pair_splits,
    parse_pair_experiment,
    train_peer_models,
)
from simnet.experiments.peersplit import TopicPairSplit

ATTACKS = ("flipped", "random", "flipped_amplified")
HOSTILE_COUNTS = (0, 2, 4)
LOSSES = (0.0, 0.3)
COMBINER = 0


def hostile_model(
    attack: str,
    corpus: PreparedCorpus,
    split: TopicPairSplit,
    peer: int,
    svm_c: float,
    rng: np.random.Generator,
) -> LinearModel:
    positions = split.peer_positions[peer]
    rows = split.train_rows[positions]
    X = corpus.features[rows]
    labels = (split.train_truth[positions] > 0).astype(int)
    ids = [corpus.documents[row].id for row in rows]
    if attack == "random":
        indices = np.unique(sp.csr_matrix(X).indices).astype(np.int32)
        honest = train_linear_svm(X, labels, C=svm_c, training_ids=ids)
        model = LinearModel(honest.config, indices, rng.normal(size=len(indices)).astype(np.float32), 0.0)
        calibration = Calibration.of(model.decision_function(X), labels)
        return dataclasses.replace(model, calibration=calibration, training_ids=tuple(ids))
    flipped = train_linear_svm(X, 1 - labels, C=svm_c, training_ids=ids)
    if attack == "flipped_amplified":
        shout = dataclasses.replace(flipped.calibration, scale=flipped.calibration.scale / 100.0)
        return dataclasses.replace(flipped, calibration=shout)
    return flipped


def robust_confidences(
    models: Sequence[LinearModel], corpus: PreparedCorpus, split: TopicPairSplit, validation: sp.csr_matrix
) -> tuple[np.ndarray, np.ndarray]:
    """Calibrated validation confidences (documents x models) and the models' weights, from peer 0's data."""
    positions = split.peer_positions[COMBINER]
    rows = split.train_rows[positions]
    local_x, local_truth = corpus.features[rows], split.train_truth[positions].astype(int)
    local_ids = [corpus.documents[row].id for row in rows]
    settings = RobustSettings()
    counts, columns = [], []
    for index, model in enumerate(models):
        local_scores = model.confidence(local_x)
        decisions = np.where(local_scores > 0, 1, -1)
        training = set(model.training_ids) if index != COMBINER else set()
        correct, evaluated = held_out_accuracy(decisions, local_truth, local_ids, training)
        counts.append((correct, evaluated) if index != COMBINER else (0, 0))
        mask = np.array([doc_id not in training for doc_id in local_ids])
        scaler = (
            fit_platt(local_scores[mask], local_truth[mask]) if mask.sum() >= settings.min_evaluated else None
        )
        scores = model.confidence(validation)
        columns.append(scaler.confidence(scores) if scaler else np.zeros(validation.shape[0]))
    weights = accuracy_weights(counts, settings)
    accepted = weights[weights > 0]
    weights[COMBINER] = float(np.median(accepted)) if accepted.size else 1.0
    return np.column_stack(columns), weights


def main(argv: Sequence[str] | None = None) -> int:
    started = time.monotonic()
    args, corpus = parse_pair_experiment(argv, __doc__, pairs=20)
    setup = Setup()
    rng = np.random.default_rng(args.seed + 3)
    settings = RobustSettings()
    tallies: dict[tuple[str, str, int, float], list[int]] = {}
    runs = 0
    for split in pair_splits(corpus, setup, args.pairs, args.repeats, args.seed):
        runs += 1
        honest = train_peer_models(corpus, split, setup.svm_c)
        validation = corpus.features[split.validation_rows]
        truth = split.validation_truth.astype(int)
        order = rng.permutation(np.arange(1, setup.n_peers))
        for attack in ATTACKS:
            for count in HOSTILE_COUNTS:
                hostile = set(order[:count].tolist())
                models = [
                    hostile_model(attack, corpus, split, p, setup.svm_c, rng) if p in hostile else honest[p]
                    for p in range(setup.n_peers)
                ]
                plain = weighted_sum(np.column_stack([m.confidence(validation) for m in models]))
                calibrated, weights = robust_confidences(models, corpus, split, validation)
                robust = robust_combine(calibrated, weights, settings)
                for method, combined in (("plain", plain), ("robust", robust)):
                    for loss in LOSSES:
                        c, d = correct_and_decided(loss_targeted_decisions(combined, loss), truth)
                        tally = tallies.setdefault((method, attack, count, loss), [0, 0])
                        tally[0] += c
                        tally[1] += d

    def acc(method: str, attack: str, count: int, loss: float = 0.0) -> float:
        c, d = tallies[(method, attack, count, loss)]
        return c / d

    print(f"\nPoisoning on {args.corpus}: accuracy of peer 0's meta-classifier over {runs} topic-pair runs")
    print("attack | hostile | plain loss 0.0 | robust loss 0.0 | plain loss 0.3 | robust loss 0.3")
    result: dict = {"accuracy": {"plain": {}, "robust": {}}, "drops": {}}
    for attack in ATTACKS:
        for count in HOSTILE_COUNTS:
            cells = [acc(m, attack, count, loss) for loss in LOSSES for m in ("plain", "robust")]
            print(f"{attack} | {count} | " + " | ".join(f"{v:.4f}" for v in cells))
            for method in ("plain", "robust"):
                result["accuracy"][method].setdefault(attack, {})[str(count)] = round(
                    acc(method, attack, count), 4
                )
        result["drops"][attack] = {
            m: round(acc(m, attack, 0) - acc(m, attack, max(HOSTILE_COUNTS)), 4) for m in ("plain", "robust")
        }
    result["plain_drop"] = max(d["plain"] for d in result["drops"].values())
    result["robust_drop"] = max(d["robust"] for d in result["drops"].values())
    result["goal_met"] = result["robust_drop"] <= 0.02 and result["plain_drop"] > result["robust_drop"]
    result["runs"] = runs
    result["seconds"] = round(time.monotonic() - started, 1)
    print(
        f"\ndrops with {max(HOSTILE_COUNTS)} hostile peers (worst attack): plain {result['plain_drop']:.4f}, "
        f"robust {result['robust_drop']:.4f}"
    )
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
