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
import threading
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
OWN_DOCUMENTS = 1000  # the newest own documents a model is checked on
_OWN_NEWEST = (
    "SELECT id, title, text FROM documents WHERE origin IS NULL AND duplicate_of IS NULL "
    "AND text IS NOT NULL AND text != '' ORDER BY id DESC LIMIT ?"
)


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
    index = training_index(repo)
    texts = training_texts(repo, [row_id for row_id, *_ in index])
    return [
        (doc_id, topic, polarity, text)
        for (_, doc_id, topic, polarity), text in zip(index, texts, strict=True)
    ]


class FeatureCache:
    """The node's training documents and newest own documents, featurized once while they stay as they
    are. Every topic's labelled data holds the same documents, only the labels differ, and a cooperation
    round featurized them again for each topic: 0.19 s a round at 3 topics, 49 s at 150 (`python -m
    simnet.bench.many_topics`), and no model was exchanged. The labels are read afresh each time (a rename
    changes topics, not texts); the texts are featurized again when a document row or its text changes.
    Calls come from worker threads, one at a time per cooperation layer; a lock keeps it so."""

    def __init__(self, featurizer: Featurizer) -> None:
        self.featurizer = featurizer
        self._training: tuple[object, sp.csr_matrix] | None = None
        self._own: tuple[object, sp.csr_matrix] | None = None
        self._lock = threading.Lock()

    def labelled(self, repo: Repository, topic: str) -> LabelledData:
        with self._lock:
            index = training_index(repo)
            key = (tuple(row_id for row_id, *_ in index), _text_total(repo, "training_documents"))
            if self._training is None or self._training[0] != key:
                texts = training_texts(repo, [row_id for row_id, *_ in index])
                self._training = (key, self._featurized(texts))
            labels = topic_labels([(doc_id, t, polarity, "") for _, doc_id, t, polarity in index], topic)
            return LabelledData(tuple(doc_id for _, doc_id, *_ in index), self._training[1], labels)

    def own(self, repo: Repository, limit: int = OWN_DOCUMENTS) -> sp.csr_matrix:
        """`own_documents`, featurized again only when they change."""
        with self._lock:
            key = repo.db.execute(
                f"SELECT count(*), coalesce(max(id), 0), total(id * length(text)) FROM ({_OWN_NEWEST})",
                [limit],
            ).fetchone()
            if self._own is None or self._own[0] != tuple(key):
                self._own = (tuple(key), own_documents(repo, self.featurizer, limit))
            return self._own[1]

    def _featurized(self, texts: Sequence[str]) -> sp.csr_matrix:
        if not texts:
            return sp.csr_matrix((0, self.featurizer.config.n_features))
        return sp.csr_matrix(self.featurizer.transform(texts))


def training_index(repo: Repository) -> list[tuple[int, str, str, int]]:
    """(row id, document ID, topic, polarity) of the training documents `training_rows` reads, without
    their text: the same rows in the same order."""
    if not repo.db["training_documents"].exists():
        return []
    seen: set[str] = set()
    index = []
    for row_id, topic, polarity, url, path in repo.db.execute(
        "SELECT id, topic, polarity, url, path FROM training_documents WHERE text != '' ORDER BY id"
    ):
        doc_id = url or path or f"training:{row_id}"
        if doc_id not in seen:
            seen.add(doc_id)
            index.append((row_id, doc_id, topic, int(polarity)))
    return index


def training_texts(repo: Repository, row_ids: Sequence[int]) -> list[str]:
    """The texts of these training document rows, in their order, as `training_rows` gives them."""
    wanted = set(row_ids)
    texts = {
        row_id: f"{title}\n{text}"
        for row_id, title, text in repo.db.execute(
            "SELECT id, title, text FROM training_documents WHERE text != '' ORDER BY id"
        )
        if row_id in wanted
    }
    return [texts[row_id] for row_id in row_ids]


def _text_total(repo: Repository, table: str) -> float:
    """A sum that moves when a row's title or text changes length: with the row ids, what says the texts
    featurized are still the ones stored."""
    if not repo.db[table].exists():
        return 0.0
    return float(
        repo.db.execute(f"SELECT total(id * (length(title) + length(text))) FROM {table}").fetchone()[0]
    )


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


def own_documents(repo: Repository, featurizer: Featurizer, limit: int = OWN_DOCUMENTS) -> sp.csr_matrix:
    """Features of the node's newest own crawled documents (not pooled): where a shipped model's decisions
    are compared with the full model's."""
    rows = [(title, text) for _, title, text in repo.db.execute(_OWN_NEWEST, [limit]).fetchall()]
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

    full = loss_targeted_decisions(model.decision_function(X), loss)  # once, not at every step

    def agrees(k: int) -> bool:
        return float(np.mean(loss_targeted_decisions(top(k).decision_function(X), loss) == full)) >= agreement

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
