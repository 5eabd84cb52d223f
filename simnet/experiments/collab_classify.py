"""Collaborative document filtering, thesis 3.4.4 and Table 3.4.

For random topic pairs with more than 200 documents: 200 training documents per class spread over 16 peers
(equal subsets, about 15% overlap), distinct validation documents; every peer trains a linear SVM on its
subset; groups of 1, 2, 4, 8 and 16 cooperating peers combine their models with eq. 3.13 (equal weights,
real-valued confidences) and the loss-targeted filter dismisses the least confident share of the
validation documents. A centralised SVM on the union of the training data is the upper reference.
Accuracy is micro-averaged over all pairs and groups; the 95% interval is a t-interval over the per-pair
accuracies. Every peer is used once in every group size (the 16 peers are cut into 16/n groups).

    python -m simnet.experiments.collab_classify --corpus 20ng --pairs 40
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from metamodels.features import FeatureConfig, Featurizer
from metamodels.linear import train_linear_svm
from metamodels.meta_functions import weighted_sum
from metamodels.restrictive import correct_and_decided, loss_targeted_decisions
from simnet.corpora import Document, load_corpus
from simnet.experiments.peersplit import (
    TopicPairSplit,
    choose_pairs,
    eligible_pairs,
    peer_groups,
    split_topic_pair,
    t_interval,
)

GROUP_SIZES = (1, 2, 4, 8, 16)
LOSSES = tuple(round(0.1 * i, 1) for i in range(10))

# Thesis Table 3.4 (IMDB collection), accuracy by induced loss (rows) and cooperating peers (columns).
THESIS_TABLE_3_4 = {
    0.0: (0.772, 0.808, 0.824, 0.844, 0.848),
    0.1: (0.797, 0.832, 0.853, 0.870, 0.875),
    0.2: (0.812, 0.853, 0.873, 0.891, 0.896),
    0.3: (0.831, 0.870, 0.889, 0.909, 0.911),
    0.4: (0.850, 0.884, 0.901, 0.921, 0.923),
    0.5: (0.863, 0.898, 0.912, 0.933, 0.933),
    0.6: (0.877, 0.909, 0.923, 0.936, 0.943),
    0.7: (0.891, 0.921, 0.928, 0.944, 0.947),
    0.8: (0.898, 0.939, 0.936, 0.949, 0.952),
    0.9: (0.905, 0.947, 0.940, 0.948, 0.944),
}


@dataclass(frozen=True)
class Setup:
    """Parameters of the protocol; defaults follow thesis 3.4.4."""

    n_peers: int = 16
    train_per_class: int = 200
    validation_per_class: int = 200
    min_validation: int = 50
    min_topic_docs: int = 200
    overlap: float = 0.15
    svm_c: float = 1.0


@dataclass(frozen=True)
class PreparedCorpus:
    """A corpus featurised once: rows of `features` follow `documents`."""

    documents: list[Document]
    features: sp.csr_matrix


def prepare_corpus(documents: Sequence[Document], config: FeatureConfig | None = None) -> PreparedCorpus:
    """Featurise every labelled document once (documents without labels take no part)."""
    labelled = [d for d in documents if d.labels]
    featurizer = Featurizer(config or FeatureConfig())
    return PreparedCorpus(labelled, featurizer.transform([d.text for d in labelled]))


def add_pair_arguments(parser: argparse.ArgumentParser, pairs: int) -> None:
    """The options every experiment on the 3.4.4 protocol shares: corpus, topic pairs, repeats, seed."""
    parser.add_argument("--corpus", default="20ng", help="20ng | reuters | webkb")
    parser.add_argument("--pairs", type=int, default=pairs, help="random topic pairs (all when fewer exist)")
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="random splits per topic pair (more runs where a corpus has few pairs, e.g. webkb's 10)",
    )
    parser.add_argument("--seed", type=int, default=1)


def parse_pair_experiment(
    argv: Sequence[str] | None, doc: str, pairs: int
) -> tuple[argparse.Namespace, PreparedCorpus]:
    """Arguments and the featurised corpus of an experiment on the 3.4.4 protocol with the default Setup."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    add_pair_arguments(parser, pairs=pairs)
    args = parser.parse_args(argv)
    return args, prepare_corpus(load_corpus(args.corpus))


def train_peer_models(corpus: PreparedCorpus, split: TopicPairSplit, svm_c: float) -> list:
    """One linear SVM per peer on its training subset."""
    models = []
    for positions in split.peer_positions:
        rows = split.train_rows[positions]
        labels = (split.train_truth[positions] > 0).astype(int)
        ids = [corpus.documents[row].id for row in rows]
        models.append(train_linear_svm(corpus.features[rows], labels, C=svm_c, training_ids=ids))
    return models


def pair_splits(corpus: PreparedCorpus, setup: Setup, n_pairs: int, repeats: int, seed: int):
    """The chosen topic pairs' splits, reproducible from the seed."""
    rng = np.random.default_rng(seed)
    labels = [d.labels for d in corpus.documents]
    pairs = eligible_pairs(labels, setup.min_topic_docs, setup.train_per_class, setup.min_validation)
    if not pairs:
        raise SystemExit("no topic pair has enough documents for the protocol: lower --train-per-class")
    for pair in choose_pairs(pairs, n_pairs, rng):
        for _ in range(repeats):
            yield split_topic_pair(
                labels,
                pair,
                train_per_class=setup.train_per_class,
                validation_per_class=setup.validation_per_class,
                n_peers=setup.n_peers,
                overlap=setup.overlap,
                rng=rng,
            )


class Tally:
    """Micro-averaged counts and per-run accuracies for each (column, loss)."""

    def __init__(self) -> None:
        self.correct: dict[tuple[str, float], int] = {}
        self.decided: dict[tuple[str, float], int] = {}
        self.per_run: dict[tuple[str, float], list[float]] = {}

    def add(self, column: str, loss: float, correct: int, decided: int, run_correct: int, run_decided: int):
        key = (column, loss)
        self.correct[key] = self.correct.get(key, 0) + correct
        self.decided[key] = self.decided.get(key, 0) + decided
        if run_decided:
            self.per_run.setdefault(key, []).append(run_correct / run_decided)

    def accuracy(self, column: str, loss: float) -> float:
        decided = self.decided.get((column, loss), 0)
        return self.correct[(column, loss)] / decided if decided else math.nan

    def ci95(self, column: str, loss: float) -> float:
        return t_interval(self.per_run.get((column, loss), []))


def group_sizes(setup: Setup) -> tuple[int, ...]:
    return tuple(s for s in GROUP_SIZES if setup.n_peers % s == 0)


def run_pair(
    corpus: PreparedCorpus, split: TopicPairSplit, setup: Setup, rng: np.random.Generator, tally: Tally
):
    models = train_peer_models(corpus, split, setup.svm_c)
    validation = corpus.features[split.validation_rows]
    confidences = np.column_stack([m.confidence(validation) for m in models])
    truth = split.validation_truth.astype(int)
    for size in group_sizes(setup):
        groups = peer_groups(setup.n_peers, size, rng)
        for loss in LOSSES:
            counts = [
                correct_and_decided(loss_targeted_decisions(weighted_sum(confidences[:, g]), loss), truth)
                for g in groups
            ]
            correct, decided = sum(c for c, _ in counts), sum(d for _, d in counts)
            tally.add(str(size), loss, correct, decided, correct, decided)
    central = train_linear_svm(
        corpus.features[split.train_rows], (split.train_truth > 0).astype(int), C=setup.svm_c
    ).confidence(validation)
    for loss in LOSSES:
        correct, decided = correct_and_decided(loss_targeted_decisions(central, loss), truth)
        tally.add("centralised", loss, correct, decided, correct, decided)


def result_json(tally: Tally) -> dict:
    columns = [str(s) for s in GROUP_SIZES]
    return {
        "accuracy": {c: {str(loss): round(tally.accuracy(c, loss), 4) for loss in LOSSES} for c in columns},
        "ci95": {c: {str(loss): round(tally.ci95(c, loss), 4) for loss in LOSSES} for c in columns},
        "centralised": {str(loss): round(tally.accuracy("centralised", loss), 4) for loss in LOSSES},
        "centralised_ci95": {str(loss): round(tally.ci95("centralised", loss), 4) for loss in LOSSES},
    }


def print_table(tally: Tally, corpus_name: str, runs: int, out=sys.stdout) -> None:
    print(f"\nCollaborative filtering on {corpus_name}: accuracy (95% CI) over {runs} pair runs", file=out)
    header = "loss | " + " | ".join(f"{s} peer{'s' if s > 1 else ''}" for s in GROUP_SIZES) + " | centralised"
    print(header + " || thesis Table 3.4 (IMDB): " + " | ".join(str(s) for s in GROUP_SIZES), file=out)
    for loss in LOSSES:
        cells = [f"{tally.accuracy(str(s), loss):.3f}±{tally.ci95(str(s), loss):.3f}" for s in GROUP_SIZES]
        central = f"{tally.accuracy('centralised', loss):.3f}±{tally.ci95('centralised', loss):.3f}"
        thesis = " | ".join(f"{v:.3f}" for v in THESIS_TABLE_3_4[loss])
        print(f"{loss:.1f} | " + " | ".join(cells) + f" | {central} || {thesis}", file=out)


def goals(result: dict) -> dict:
    """The issue's goals on this run: 16 peers beat 1 at every loss (by 0.05 at loss 0) and reach 95% of
    the centralised accuracy at loss 0.

    The headroom (centralised minus one peer at loss 0) bounds the gain cooperation can show: where it is
    below 0.05 (Reuters: one peer is already at 0.96) a 0.05 gain would mean beating the centralised
    classifier, so the share of the headroom that 16 peers recover is printed beside it.
    """
    one, sixteen, central = result["accuracy"]["1"], result["accuracy"]["16"], result["centralised"]
    headroom = central["0.0"] - one["0.0"]
    return {
        "headroom_at_loss_0": round(headroom, 4),
        "share_of_headroom_recovered": round((sixteen["0.0"] - one["0.0"]) / headroom, 4)
        if headroom > 0
        else None,
        # equal at the ceiling of 1.0 counts as not beaten but reported apart
        "beats_one_peer_at_every_loss": all(sixteen[k] > one[k] for k in one),
        "losses_tied_at_1.0": [k for k in one if sixteen[k] == one[k] == 1.0],
        "gain_at_loss_0": round(sixteen["0.0"] - one["0.0"], 4),
        "ratio_to_centralised_at_loss_0": round(sixteen["0.0"] / central["0.0"], 4),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_pair_arguments(parser, pairs=40)
    parser.add_argument("--train-per-class", type=int, default=Setup.train_per_class)
    parser.add_argument("--validation-per-class", type=int, default=Setup.validation_per_class)
    parser.add_argument("--peers", type=int, default=Setup.n_peers)
    parser.add_argument("--overlap", type=float, default=Setup.overlap)
    args = parser.parse_args(argv)
    setup = Setup(
        n_peers=args.peers,
        train_per_class=args.train_per_class,
        validation_per_class=args.validation_per_class,
        overlap=args.overlap,
    )
    started = time.monotonic()
    corpus = prepare_corpus(load_corpus(args.corpus))
    rng = np.random.default_rng(args.seed + 1)
    tally, runs = Tally(), 0
    for split in pair_splits(corpus, setup, args.pairs, args.repeats, args.seed):
        run_pair(corpus, split, setup, rng, tally)
        runs += 1
    result = result_json(tally)
    print_table(tally, args.corpus, runs)
    result["goals"] = goals(result)
    result["runs"] = runs
    result["seconds"] = round(time.monotonic() - started, 1)
    print(f"\ngoals: {json.dumps(result['goals'])}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
