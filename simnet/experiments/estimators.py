"""Predicted versus measured loss and accuracy of the unanimous meta-classifier (thesis 3.15-3.19).

Protocol of 3.4.4 (topic pairs, 16 peers with overlapping training subsets). Prediction uses only what
peers can exchange: each model's accuracy is cross-validated on the other peers' training documents minus
its own (by ID, eq. 3.15); one common covariance of correctness is averaged over model pairs, each
measured on documents neither model was trained on. The chain formulas 3.16-3.18 and, beyond the thesis,
the exchangeable (Beta-Bernoulli) model turn these into the loss and accuracy of unanimous decision over
k peers. Measurement: the same k models' unanimous decisions (eq. 3.13 over decisions with t1 = k - 1,
t2 = -(k - 1)) on the held-out validation documents. Finally the peer-count estimate for error goals is
checked against the measured error at that count.

    python -m simnet.experiments.estimators --corpus 20ng --pairs 20
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import time
from collections.abc import Sequence

import numpy as np

from metamodels.estimators import (
    chain_estimate,
    correctness_covariance,
    cross_accuracy,
    exchangeable_agreement,
    peers_needed,
)
from metamodels.meta_functions import unanimous
from metamodels.restrictive import correct_and_decided, loss
from simnet.corpora import load_corpus
from simnet.experiments.collab_classify import (
    Setup,
    add_pair_arguments,
    pair_splits,
    prepare_corpus,
    train_peer_models,
)
from simnet.experiments.peersplit import TopicPairSplit, peer_groups

SIZES = (2, 4, 8, 16)
ERROR_GOALS = (0.05, 0.02, 0.01)
ESTIMATE_MODELS = ("chain", "exchangeable")


def _sign(scores: np.ndarray) -> np.ndarray:
    return np.where(scores > 0, 1, -1)


def pair_estimates(split: TopicPairSplit, train_decisions: np.ndarray) -> tuple[np.ndarray, float]:
    """Per-model cross-peer accuracy (3.15) and the mean pairwise covariance, from training data only.

    train_decisions: (training documents x models) decisions; a model's own documents are excluded by
    position (the simulation's document IDs).
    """
    truth = split.train_truth
    n_models = train_decisions.shape[1]
    holds = np.zeros((len(truth), n_models), dtype=bool)
    for model, positions in enumerate(split.peer_positions):
        holds[positions, model] = True
    correct = train_decisions == truth[:, None]
    accuracies = []
    for model in range(n_models):
        reports = []
        for holder, positions in enumerate(split.peer_positions):
            if holder == model:
                continue
            held_out = positions[~holds[positions, model]]
            reports.append((int(correct[held_out, model].sum()), len(held_out)))
        accuracies.append(cross_accuracy(reports))
    covariances = []
    for a, b in itertools.combinations(range(n_models), 2):
        neither = ~holds[:, a] & ~holds[:, b]
        if neither.any():
            covariances.append(correctness_covariance(correct[neither, a], correct[neither, b]))
    return np.array(accuracies), float(np.mean(covariances)) if covariances else 0.0


def measured_unanimous(decisions: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """(loss, accuracy) of unanimous decision over the given models' decisions."""
    meta = unanimous(decisions)
    correct, decided = correct_and_decided(meta, truth)
    return loss(meta), (correct / decided if decided else math.nan)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_pair_arguments(parser, pairs=20)
    args = parser.parse_args(argv)
    started = time.monotonic()
    setup = Setup()
    corpus = prepare_corpus(load_corpus(args.corpus))
    rng = np.random.default_rng(args.seed + 2)
    rows: dict[int, dict[str, list[float]]] = {k: {} for k in SIZES}
    goal_rows: dict[tuple[str, float], list[tuple[int, float, float]]] = {
        (m, g): [] for m in ESTIMATE_MODELS for g in ERROR_GOALS
    }
    runs = 0
    for split in pair_splits(corpus, setup, args.pairs, 1, args.seed):
        runs += 1
        models = train_peer_models(corpus, split, setup.svm_c)
        train_x = corpus.features[split.train_rows]
        validation = corpus.features[split.validation_rows]
        train_decisions = np.column_stack([_sign(m.confidence(train_x)) for m in models])
        val_decisions = np.column_stack([_sign(m.confidence(validation)) for m in models])
        truth = split.validation_truth.astype(int)
        accuracies, covariance = pair_estimates(split, train_decisions)
        for k in SIZES:
            for group in peer_groups(setup.n_peers, k, rng):
                chain = chain_estimate(accuracies[group].tolist(), covariance)
                exch = exchangeable_agreement(float(accuracies[group].mean()), covariance, k)
                measured_loss, measured_acc = measured_unanimous(val_decisions[:, group], truth)
                for name, value in (
                    ("chain_loss", chain.loss),
                    ("chain_acc", chain.accuracy),
                    ("exch_loss", exch.loss),
                    ("exch_acc", exch.accuracy),
                    ("loss", measured_loss),
                    ("acc", measured_acc),
                ):
                    rows[k].setdefault(name, []).append(value)
        for model, goal in goal_rows:
            estimate = peers_needed(
                float(accuracies.mean()), covariance, max_error=goal, max_peers=setup.n_peers, model=model
            )
            if estimate is None:
                continue
            group = rng.choice(setup.n_peers, size=estimate.peers, replace=False)
            _, measured_acc = measured_unanimous(val_decisions[:, group], truth)
            goal_rows[(model, goal)].append((estimate.peers, estimate.error, 1.0 - measured_acc))

    def mean(values: list[float]) -> float:
        finite = [v for v in values if not math.isnan(v)]
        return float(np.mean(finite)) if finite else math.nan

    print(
        f"\nUnanimous meta-classifier on {args.corpus}, {runs} topic pairs: predicted (3.16-3.19) vs measured"
    )
    print("peers | loss measured | chain | exchangeable || accuracy measured | chain | exchangeable")
    result: dict = {"peers": {}}
    worst = {"chain": 0.0, "exchangeable": 0.0}
    for k in SIZES:
        m = {name: mean(values) for name, values in rows[k].items()}
        print(
            f"{k:5d} | {m['loss']:.3f} | {m['chain_loss']:.3f} | {m['exch_loss']:.3f} || "
            f"{m['acc']:.3f} | {m['chain_acc']:.3f} | {m['exch_acc']:.3f}"
        )
        result["peers"][str(k)] = {name: round(v, 4) for name, v in m.items()}
        worst["chain"] = max(worst["chain"], abs(m["chain_loss"] - m["loss"]), abs(m["chain_acc"] - m["acc"]))
        worst["exchangeable"] = max(
            worst["exchangeable"], abs(m["exch_loss"] - m["loss"]), abs(m["exch_acc"] - m["acc"])
        )
    print("\nPeers needed for an error goal and the error measured with that many peers")
    print("estimate | goal | runs | mean peers | predicted error | measured error")
    result["peers_needed"] = {}
    for (model, goal), entries in goal_rows.items():
        if not entries:
            print(f"{model} | {goal:.2f} | 0 | unreachable within {setup.n_peers} peers")
            continue
        peers, predicted, measured = (mean([e[i] for e in entries]) for i in range(3))
        print(f"{model} | {goal:.2f} | {len(entries)} | {peers:.1f} | {predicted:.4f} | {measured:.4f}")
        result["peers_needed"].setdefault(model, {})[str(goal)] = {
            "runs": len(entries),
            "mean_peers": round(peers, 2),
            "predicted_error": round(predicted, 4),
            "measured_error": round(measured, 4),
        }
    result["max_abs_gap"] = {name: round(v, 4) for name, v in worst.items()}
    result["goal_within_0.05"] = {name: v <= 0.05 for name, v in worst.items()}
    result["runs"] = runs
    result["seconds"] = round(time.monotonic() - started, 1)
    print(f"\nlargest |predicted - measured| over 2-16 peers: {json.dumps(result['max_abs_gap'])}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
