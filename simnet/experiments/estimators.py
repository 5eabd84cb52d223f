"""Predicted versus measured loss and accuracy of the unanimous meta-classifier (thesis 3.15-3.19).

Protocol of 3.4.4 (topic pairs, 16 peers with overlapping training subsets). Prediction uses only what
peers can exchange: each model's accuracy is cross-validated on the other peers' training documents minus
its own (by ID, eq. 3.15); one common covariance of correctness is averaged over model pairs, each
measured on documents neither model was trained on. The chain formulas 3.16-3.18 and, beyond the thesis,
the exchangeable (Beta-Bernoulli) model turn these into the loss and accuracy of unanimous decision over
k peers. Measurement: the same k models' unanimous decisions (eq. 3.13 over decisions with t1 = k - 1,
t2 = -(k - 1)) on the held-out validation documents.

Then the peer-count estimate (the node's estimateNumNodes) is validated: for every pair, the measured
loss and error of unanimous decision at every count 1..16 (over random peer subsets) give the smallest
count meeting each error goal and the largest count within each loss bound; these are set beside the
predicted counts. Finally the covariance structure shows why the chain misses: the chain law implies a
correlation decaying with chain distance, the measured pairs are all about equally correlated.

    python -m simnet.experiments.estimators --corpus 20ng --pairs 20
"""

from __future__ import annotations

import itertools
import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from metamodels.estimators import (
    chain_estimate,
    chain_implied_correlation,
    correctness_correlation,
    correctness_covariance,
    cross_accuracy,
    exchangeable_agreement,
    meta_estimate,
    peers_needed,
)
from metamodels.meta_functions import unanimous
from metamodels.restrictive import correct_and_decided, loss
from simnet.experiments.collab_classify import (
    Setup,
    pair_splits,
    parse_pair_experiment,
    train_peer_models,
)
from simnet.experiments.peersplit import TopicPairSplit, peer_groups

SIZES = (2, 4, 8, 16)
ERROR_GOALS = (0.05, 0.02, 0.01)
LOSS_GOALS = (0.1, 0.2, 0.3)
ESTIMATE_MODELS = ("chain", "exchangeable")
NODE_MODEL = "exchangeable"  # what node.cooperation reports and uses for the peer count
COUNT_SUBSETS = 8  # random peer subsets per count for the measured loss/error curve
CHAIN_DISTANCES = (1, 2, 4, 8, 15)


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


def measured_curve(
    decisions: np.ndarray, truth: np.ndarray, subsets: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Measured (loss, error) of unanimous decision for every count k = 1..n of the n models' columns.

    Per count, `subsets` random peer subsets; the loss is their mean, the error is micro-averaged (wrong
    over decided documents). Index k - 1 holds count k; the error is NaN where nothing was decided.
    """
    n_models = decisions.shape[1]
    losses, errors = np.zeros(n_models), np.zeros(n_models)
    for k in range(1, n_models + 1):
        groups = [rng.choice(n_models, size=k, replace=False) for _ in range(subsets)]
        outcomes = [correct_and_decided(unanimous(decisions[:, g]), truth) for g in groups]
        correct, decided = sum(c for c, _ in outcomes), sum(d for _, d in outcomes)
        losses[k - 1] = 1.0 - decided / (len(truth) * len(groups))
        errors[k - 1] = 1.0 - correct / decided if decided else math.nan
    return losses, errors


def smallest_count_within(values: np.ndarray, goal: float) -> int | None:
    """The smallest count k (1-based) whose value is at most goal (None if none): error goals."""
    meeting = [k for k, v in enumerate(values, start=1) if not math.isnan(v) and v <= goal]
    return meeting[0] if meeting else None


def largest_count_within(values: np.ndarray, goal: float) -> int | None:
    """The count just before the first k whose value exceeds goal (None if count 1 does): loss bounds."""
    for k, v in enumerate(values, start=1):
        if v > goal:
            return k - 1 if k > 1 else None
    return len(values)


def predicted_count(accuracy: float, covariance: float, kind: str, goal: float, model: str, n: int):
    """The node's peer-count estimate for an error goal or a loss bound (None when out of reach)."""
    goal_kw = {"max_error": goal} if kind == "error" else {"max_loss": goal}
    estimate = peers_needed(accuracy, covariance, max_peers=n, model=model, **goal_kw)
    return estimate.peers if estimate is not None else None


@dataclass
class CovarianceStats:
    """Pairwise correctness correlations on validation documents, split by shared training documents."""

    shared: list[float] = field(default_factory=list)
    disjoint: list[float] = field(default_factory=list)
    train_covariance: list[float] = field(default_factory=list)
    validation_covariance: list[float] = field(default_factory=list)
    accuracy: list[float] = field(default_factory=list)

    def add(self, split: TopicPairSplit, correct: np.ndarray, train_covariance: float, accuracy: float):
        held = [set(p.tolist()) for p in split.peer_positions]
        covs = []
        for a, b in itertools.combinations(range(correct.shape[1]), 2):
            cov = correctness_covariance(correct[:, a], correct[:, b])
            covs.append(cov)
            spread = math.sqrt(correct[:, a].var() * correct[:, b].var())
            if spread > 0:
                (self.shared if held[a] & held[b] else self.disjoint).append(cov / spread)
        self.train_covariance.append(train_covariance)
        self.validation_covariance.append(float(np.mean(covs)))
        self.accuracy.append(accuracy)


def simulated_agreement(
    p: float, covariance: float, k: int, law: str, rng: np.random.Generator, n: int = 200_000
) -> float:
    """P(all k agree) in n simulated documents whose correctness follows a Markov chain with the chain
    law's transitions, or is exchangeable with Beta-distributed difficulty: checks each formula against
    the law it assumes (an implementation error would show here)."""
    if law == "markov":
        x = np.empty((n, k), dtype=bool)
        x[:, 0] = rng.random(n) < p
        right_after_right, right_after_wrong = p + covariance / p, p - covariance / (1 - p)
        for i in range(1, k):
            x[:, i] = rng.random(n) < np.where(x[:, i - 1], right_after_right, right_after_wrong)
    elif covariance <= 0.0:
        x = rng.random((n, k)) < p
    else:
        concentration = p * (1 - p) / covariance - 1.0
        q = rng.beta(p * concentration, (1 - p) * concentration, size=n)
        x = rng.random((n, k)) < q[:, None]
    return float(np.mean(x.all(axis=1) | ~x.any(axis=1)))


def _mean(values: Sequence[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return float(np.mean(finite)) if finite else math.nan


def _fmt_count(count: int | None) -> str:
    return "-" if count is None else str(count)


GOALS = tuple(("error", g) for g in ERROR_GOALS) + tuple(("loss", g) for g in LOSS_GOALS)


@dataclass
class Collected:
    """Everything measured and predicted over the topic-pair runs."""

    # rows[k][name]: per run, the mean over its disjoint peer groups of size k
    rows: dict[int, dict[str, list[float]]] = field(default_factory=lambda: {k: {} for k in SIZES})
    # counts[(model, kind, goal)]: per run, (predicted count, measured count, measured error at predicted)
    counts: dict[tuple[str, str, float], list[tuple[int | None, int | None, float]]] = field(
        default_factory=lambda: {(m, kind, g): [] for m in ESTIMATE_MODELS for kind, g in GOALS}
    )
    # curves["measured loss"], curves["chain error"], ...: per run, the value at every count 1..n
    curves: dict[str, list[np.ndarray]] = field(default_factory=dict)
    stats: CovarianceStats = field(default_factory=CovarianceStats)
    runs: int = 0


def add_run(collected: Collected, corpus, split: TopicPairSplit, setup: Setup, rng: np.random.Generator):
    """Train the peers of one topic-pair run, estimate from training data, measure on validation data."""
    collected.runs += 1
    models = train_peer_models(corpus, split, setup.svm_c)
    train_x = corpus.features[split.train_rows]
    validation = corpus.features[split.validation_rows]
    train_decisions = np.column_stack([_sign(m.confidence(train_x)) for m in models])
    val_decisions = np.column_stack([_sign(m.confidence(validation)) for m in models])
    truth = split.validation_truth.astype(int)
    accuracies, covariance = pair_estimates(split, train_decisions)
    mean_accuracy = float(accuracies.mean())
    collected.stats.add(split, val_decisions == truth[:, None], covariance, mean_accuracy)
    for k in SIZES:
        per_group: dict[str, list[float]] = {}
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
                per_group.setdefault(name, []).append(value)
        for name, values in per_group.items():
            collected.rows[k].setdefault(name, []).append(_mean(values))
    curve = dict(
        zip(("loss", "error"), measured_curve(val_decisions, truth, COUNT_SUBSETS, rng), strict=True)
    )
    collected.curves.setdefault("measured loss", []).append(curve["loss"])
    collected.curves.setdefault("measured error", []).append(curve["error"])
    for model in ESTIMATE_MODELS:
        estimates = [meta_estimate(mean_accuracy, covariance, k, model) for k in range(1, setup.n_peers + 1)]
        collected.curves.setdefault(f"{model} loss", []).append(np.array([e.loss for e in estimates]))
        collected.curves.setdefault(f"{model} error", []).append(np.array([e.error for e in estimates]))
    for model, kind, goal in collected.counts:
        predicted = predicted_count(mean_accuracy, covariance, kind, goal, model, setup.n_peers)
        measured = (smallest_count_within if kind == "error" else largest_count_within)(curve[kind], goal)
        at_predicted = curve["error"][predicted - 1] if predicted is not None else math.nan
        collected.counts[(model, kind, goal)].append((predicted, measured, at_predicted))


def report_gaps(collected: Collected, corpus_name: str) -> dict:
    """Print predicted vs measured loss and accuracy at 2-16 peers; the result's gap entries."""
    print(
        f"\nUnanimous meta-classifier on {corpus_name}, {collected.runs} topic-pair runs: predicted "
        "(3.16-3.19 chain, exchangeable) vs measured, means over runs"
    )
    print("peers | loss measured | chain | exchangeable || accuracy measured | chain | exchangeable")
    result: dict = {"peers": {}}
    worst = {"chain": 0.0, "exchangeable": 0.0}
    worst_by = {f"{m}_{q}": 0.0 for m in ESTIMATE_MODELS for q in ("loss", "acc")}
    per_run_gaps: dict[str, list[float]] = {"chain": [], "exchangeable": []}
    for k, rows in collected.rows.items():
        m = {name: _mean(values) for name, values in rows.items()}
        print(
            f"{k:5d} | {m['loss']:.3f} | {m['chain_loss']:.3f} | {m['exch_loss']:.3f} || "
            f"{m['acc']:.3f} | {m['chain_acc']:.3f} | {m['exch_acc']:.3f}"
        )
        result["peers"][str(k)] = {name: round(v, 4) for name, v in m.items()}
        for model, prefix in (("chain", "chain"), ("exchangeable", "exch")):
            for quantity in ("loss", "acc"):
                gap = abs(m[f"{prefix}_{quantity}"] - m[quantity])
                worst[model] = max(worst[model], gap)
                worst_by[f"{model}_{quantity}"] = max(worst_by[f"{model}_{quantity}"], gap)
                per_run_gaps[model].extend(
                    abs(p - q)
                    for p, q in zip(rows[f"{prefix}_{quantity}"], rows[quantity], strict=True)
                    if not math.isnan(p - q)
                )
    result["max_abs_gap"] = {name: round(v, 4) for name, v in worst.items()}
    result["max_abs_gap_by_quantity"] = {name: round(v, 4) for name, v in worst_by.items()}
    result["per_run_gap_p90"] = {
        name: round(float(np.percentile(v, 90)), 4) for name, v in per_run_gaps.items() if v
    }
    result["goal_within_0.05"] = {name: v <= 0.05 for name, v in worst.items()}
    print(
        f"largest |predicted - measured| of the means: {json.dumps(result['max_abs_gap_by_quantity'])}; "
        f"90th percentile of single runs' gaps: {json.dumps(result['per_run_gap_p90'])}"
    )
    return result


def report_peer_counts(collected: Collected, n_peers: int) -> dict:
    """Print predicted vs measured peer counts for every goal, per run and pooled; the result's entries."""
    print(
        "\nPeers needed (estimate from exchanged accuracy and covariance) vs the count measured to meet the "
        f"goal (unanimous decision over {COUNT_SUBSETS} random peer subsets per count, '-' = not within "
        f"{n_peers})"
    )
    print(
        "estimate | goal | runs | mean predicted | mean measured | same count | within 1 | "
        "measured error at predicted count"
    )
    result: dict = {"peers_needed": {}}
    cap = n_peers + 1  # an unreachable goal counts as one more than the peers available
    for (model, kind, goal), entries in collected.counts.items():
        predicted = np.array([cap if p is None else p for p, _, _ in entries], dtype=float)
        measured = np.array([cap if m is None else m for _, m, _ in entries], dtype=float)
        same = float(np.mean(predicted == measured))
        within_one = float(np.mean(np.abs(predicted - measured) <= 1))
        at_predicted = _mean([e for _, _, e in entries])
        print(
            f"{model} | {kind} <= {goal:.2f} | {len(entries)} | {predicted.mean():.2f} | "
            f"{measured.mean():.2f} | {same:.2f} | {within_one:.2f} | {at_predicted:.4f}"
        )
        result["peers_needed"].setdefault(model, {})[f"{kind}<={goal}"] = {
            "mean_predicted": round(float(predicted.mean()), 2),
            "mean_measured": round(float(measured.mean()), 2),
            "same_count": round(same, 3),
            "within_one": round(within_one, 3),
            "unreachable_predicted": int(np.sum(predicted == cap)),
            "unreachable_measured": int(np.sum(measured == cap)),
            "measured_error_at_predicted": round(at_predicted, 4),
        }
    pooled = {}
    for model in ESTIMATE_MODELS:
        for kind, goal in GOALS:
            finder = smallest_count_within if kind == "error" else largest_count_within
            pooled[f"{model} {kind}<={goal}"] = tuple(
                finder(np.nanmean(collected.curves[f"{source} {kind}"], axis=0), goal)
                for source in (model, "measured")
            )
    print(
        "pooled (the count where the mean over runs of the predicted curve meets the goal / of the measured "
        "curve), predicted/measured: "
        + ", ".join(f"{name} {_fmt_count(p)}/{_fmt_count(m)}" for name, (p, m) in pooled.items())
    )
    result["peers_needed_pooled"] = {name: list(pm) for name, pm in pooled.items()}
    return result


def report_covariance(stats: CovarianceStats, seed: int) -> dict:
    """Print why the chain misses: measured pair correlations against the decay the chain law implies,
    and each formula against a simulation of the law it assumes; the result's entry."""
    accuracy, covariance = _mean(stats.accuracy), _mean(stats.train_covariance)
    print(
        "\nWhy the chain (3.16) misses: correctness correlations of model pairs on the validation documents"
    )
    print(
        f"exchanged estimate: accuracy {accuracy:.3f}, covariance {covariance:.4f} (correlation "
        f"{correctness_correlation(accuracy, covariance):.3f}); the same covariance on validation "
        f"documents: {_mean(stats.validation_covariance):.4f}"
    )
    spread = np.percentile(stats.shared + stats.disjoint, [10, 90])
    print(
        f"measured correlation, pairs sharing training documents: {_mean(stats.shared):.3f} "
        f"({len(stats.shared)} pairs); pairs with disjoint training data: {_mean(stats.disjoint):.3f} "
        f"({len(stats.disjoint)}); 10-90th percentile over all pairs {spread[0]:.3f}-{spread[1]:.3f}"
    )
    implied = {d: chain_implied_correlation(accuracy, covariance, d) for d in CHAIN_DISTANCES}
    print(
        "the chain law implies correlation rho^distance along the chain: "
        + ", ".join(f"d={d} {v:.3f}" for d, v in implied.items())
        + " - measured pairs do not decay, so non-neighbours are not independent (assumption 2 fails)"
    )
    k, sim_rng = max(SIZES), np.random.default_rng(seed + 5)
    formulas = {
        "markov": chain_estimate([accuracy] * k, covariance).loss,
        "exchangeable": exchangeable_agreement(accuracy, covariance, k).loss,
    }
    simulated = {law: 1.0 - simulated_agreement(accuracy, covariance, k, law, sim_rng) for law in formulas}
    print(
        f"implementation check at {k} peers, loss simulated vs formula: Markov chain "
        f"{simulated['markov']:.4f} vs chain {formulas['markov']:.4f}; exchangeable "
        f"{simulated['exchangeable']:.4f} vs exchangeable {formulas['exchangeable']:.4f}"
    )
    return {
        "covariance": {
            "exchanged_accuracy": round(accuracy, 4),
            "exchanged_covariance": round(covariance, 5),
            "validation_covariance": round(_mean(stats.validation_covariance), 5),
            "correlation_shared_training": round(_mean(stats.shared), 4),
            "correlation_disjoint_training": round(_mean(stats.disjoint), 4),
            "chain_implied_correlation": {str(d): round(v, 4) for d, v in implied.items()},
            "simulated_loss_vs_formula": {
                law: [round(simulated[law], 4), round(formulas[law], 4)] for law in formulas
            },
        }
    }


def main(argv: Sequence[str] | None = None) -> int:
    started = time.monotonic()
    args, corpus = parse_pair_experiment(argv, __doc__, pairs=20)
    setup = Setup()
    rng = np.random.default_rng(args.seed + 2)
    collected = Collected()
    for split in pair_splits(corpus, setup, args.pairs, args.repeats, args.seed):
        add_run(collected, corpus, split, setup, rng)
    result: dict = {"corpus": args.corpus, "node_estimate": NODE_MODEL}
    result |= report_gaps(collected, args.corpus)
    result |= report_peer_counts(collected, setup.n_peers)
    result |= report_covariance(collected.stats, args.seed)
    result["runs"] = collected.runs
    result["seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
