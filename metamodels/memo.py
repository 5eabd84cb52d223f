"""Trained parts of a topic model kept by a digest of exactly what each was trained from.

A focused crawl retrains its whole topic model every `retrain_every` pages after adding archetypes to some
of its topics (`crawler.focus.TopicFocus.reorganise`). The parts whose training data did not change (a
topic's MI feature choice, SVM and Platt scaler, a node's routers) would come out of a full retrain bit for
bit the same: training is deterministic in its inputs. So each part is looked up by a digest of those inputs
(the training rows' feature values in order, the labels, the feature space, the settings); a part found is
what a full retrain computes, whatever changed and however the training documents were numbered.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp

Part = TypeVar("Part")


class TrainingMemo:
    """Parts of the last training by digest, for the next one; counts parts trained and reused.

    Exact whatever is asked of it: a part is reused only for equal inputs. Used by one training at a time
    (a crawl's focus trains in its one worker thread, or while the crawl is held)."""

    def __init__(self) -> None:
        self._parts: dict[bytes, Any] = {}
        self._used: dict[bytes, Any] = {}
        self.trained = 0
        self.reused = 0

    def part(self, key: bytes, train: Callable[[], Part]) -> Part:
        """The part trained from the inputs digested in `key`: the last training's, or `train()`."""
        if key in self._used:
            return self._used[key]
        if key in self._parts:
            part = self._parts[key]
            self.reused += 1
        else:
            part = train()
            self.trained += 1
        self._used[key] = part
        return part

    def settle(self) -> None:
        """Keep the parts of the training just done and drop the rest: the memo holds one model's parts,
        and parts trained under settings or data no longer used go."""
        self._parts, self._used = self._used, {}

    def copy(self) -> TrainingMemo:
        """A memo holding the same parts, for training apart from this one (benches compare from a state)."""
        other = TrainingMemo()
        other._parts = dict(self._parts)
        return other

    def __len__(self) -> int:
        return len(self._parts)


def digest(*parts: bytes | str | np.ndarray) -> bytes:
    """A digest of the parts in order; an array counts with its dtype and shape."""
    hasher = hashlib.blake2b(digest_size=16)
    for part in parts:
        if isinstance(part, np.ndarray):
            header = f"{part.dtype.str}{part.shape}".encode()
            data = header + np.ascontiguousarray(part).tobytes()
        else:
            data = part.encode() if isinstance(part, str) else bytes(part)
        hasher.update(len(data).to_bytes(8, "little"))
        hasher.update(data)
    return hasher.digest()


def row_digests(X: sp.csr_matrix) -> np.ndarray:
    """One 16-byte digest per row of X (its stored indices and values, in order), as an (n, 16) array:
    the digest of a training set is then that of its rows' digests, without slicing the matrix."""
    indptr, indices, data = X.indptr, X.indices, X.data
    result = np.empty((X.shape[0], 16), dtype=np.uint8)
    for i in range(X.shape[0]):
        start, end = indptr[i], indptr[i + 1]
        result[i] = np.frombuffer(digest(indices[start:end], data[start:end]), dtype=np.uint8)
    return result
