"""The semantic layer's learning on one node's own data (thesis 3.3.2-3.3.4), without any network.

Here a topic's labelled data and local model, and the node's own crawled documents a model is checked on;
what the node makes of its peers' models is in `weighing`, `latent_meta` and `filtering`.

A topic's exchangeable model is its one-vs-rest linear SVM over the node's training documents of the topic
(bookmarks and the archetypes the focus loop adds): positives are the training documents of the topic's
subtree, negatives every other training document (other topics and OTHERS folders). A document's ID is its
URL (or file path), the same on every peer, so cross-validation can exclude shared training documents.

Functions here read the repository and are meant to run in a worker thread.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
import scipy.sparse as sp

from crawler.focus import in_subtree
from crawler.repository import Repository
from metamodels.features import Featurizer
from metamodels.linear import Calibration, LinearModel, train_linear_svm
from metamodels.restrictive import loss_targeted_decisions

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
