"""Text to hashed, L2-normalised term-frequency vectors (thesis 1.2-1.3).

Terms are lower-cased word tokens, minus stopwords, reduced by the Snowball stemmer, and hashed with
signed MurmurHash3 into a fixed space. The hash is stable across processes and machines, so models built
by different peers with the same `FeatureConfig` share one feature space without exchanging vocabularies:
the configuration travels with every model.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import scipy.sparse as sp
import snowballstemmer
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS
from sklearn.utils import murmurhash3_32

from metamodels.errors import FeatureSpaceMismatch, ModelFormatError

FEATURE_SCHEMA_VERSION = 1
TF_SCALINGS = ("raw", "log", "binary")
_TOKEN_RE = re.compile(r"\b[^\W\d_]\w*")  # on text with "_" replaced by " "
_STOPWORDS = {"english": frozenset(ENGLISH_STOP_WORDS)}
_TOKEN_CACHE_LIMIT = 1_000_000
ROW_CACHE_ENTRIES = 1_000_000  # (index, value) pairs of counted rows kept per feature space: about 12 MB


@dataclass(frozen=True)
class FeatureConfig:
    """How text becomes a vector; two models are comparable only when their configs are equal."""

    n_features: int = 2**18  # size of the hashed space (a power of two keeps the modulo unbiased)
    language: str = "english"  # Snowball stemmer's language; "" turns stemming off
    stopwords: bool = True  # drop the language's stopwords before stemming
    tf: str = "log"  # "log": 1 + ln(tf); "raw": tf; "binary": 1 per present term
    idf: bool = False  # multiply by IDF weights learnt from training documents (IdfWeights)
    min_token_length: int = 2
    max_token_length: int = 40
    hash_seed: int = 0
    version: int = FEATURE_SCHEMA_VERSION

    def __post_init__(self) -> None:
        problems = _config_problems(self)
        if problems:
            raise ModelFormatError(f"invalid FeatureConfig: {'; '.join(problems)}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FeatureConfig:
        if not isinstance(data, Mapping):
            raise ModelFormatError(f"a FeatureConfig must be a mapping, got {type(data).__name__}")
        names = {f for f in cls.__dataclass_fields__}
        unknown = set(data) - names
        if unknown:
            raise ModelFormatError(
                f"unknown FeatureConfig fields {sorted(unknown)}: written by a newer version?"
            )
        missing = names - set(data)
        if missing:
            raise ModelFormatError(f"FeatureConfig lacks fields {sorted(missing)}")
        types = {"language": str, "tf": str, "stopwords": bool, "idf": bool}
        for name in names:
            expected = types.get(name, int)
            value = data[name]
            if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
                raise ModelFormatError(f"FeatureConfig.{name} must be {expected.__name__}, got {value!r}")
        return cls(**data)


def _config_problems(cfg: FeatureConfig) -> list[str]:
    problems = []
    if cfg.version != FEATURE_SCHEMA_VERSION:
        problems.append(f"version {cfg.version} is not the supported {FEATURE_SCHEMA_VERSION}")
    if not 2 <= cfg.n_features <= 2**31 - 1:
        problems.append(f"n_features must lie in [2, 2**31-1], got {cfg.n_features}")
    if cfg.language and cfg.language not in snowballstemmer.algorithms():
        problems.append(f"no Snowball stemmer for language {cfg.language!r}")
    if cfg.stopwords and cfg.language not in _STOPWORDS:
        problems.append(
            f"no stopword list for {cfg.language!r} (have {sorted(_STOPWORDS)}); set stopwords=False"
        )
    if cfg.tf not in TF_SCALINGS:
        problems.append(f"tf must be one of {TF_SCALINGS}, got {cfg.tf!r}")
    if not 1 <= cfg.min_token_length <= cfg.max_token_length:
        problems.append("token lengths must satisfy 1 <= min_token_length <= max_token_length")
    return problems


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens: runs of letters and digits that start with a letter."""
    return _TOKEN_RE.findall(text.lower().replace("_", " "))


def stopwords(language: str = "english") -> frozenset[str]:
    """The stopword list the features use for `language` (empty when there is none)."""
    return _STOPWORDS.get(language, frozenset())


@dataclass(frozen=True)
class IdfWeights:
    """Document frequencies over the hashed space, learnt from training documents; plain data."""

    n_documents: int
    indices: np.ndarray  # int64, sorted feature indices with df > 0
    df: np.ndarray  # int64, document frequency of each index

    def weights(self, n_features: int) -> np.ndarray:
        """Smoothed idf, ln((1+N)/(1+df)) + 1; unseen features get the largest weight."""
        full = np.full(n_features, math.log(1 + self.n_documents) + 1.0)
        full[self.indices] = np.log((1 + self.n_documents) / (1 + self.df)) + 1.0
        return full

    def to_dict(self) -> dict[str, Any]:
        return {"n_documents": self.n_documents, "indices": self.indices.tolist(), "df": self.df.tolist()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> IdfWeights:
        try:
            n_documents = int(data["n_documents"])
            indices = np.asarray(data["indices"], dtype=np.int64)
            df = np.asarray(data["df"], dtype=np.int64)
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFormatError(f"malformed IDF weights: {exc}") from exc
        if indices.shape != df.shape or indices.ndim != 1 or (df < 0).any() or (df > n_documents).any():
            raise ModelFormatError("malformed IDF weights: indices and df must be equal-length, 0 <= df <= N")
        return cls(n_documents, indices, df)


# One token cache per analysis setting, shared by every Featurizer: stemming and hashing are the hot path.
_TOKEN_CACHES: dict[tuple, dict[str, tuple[str, int, float] | None]] = {}

CountedRow = tuple[np.ndarray, np.ndarray]  # (sorted feature indices, their nonzero tf-scaled counts)


class RowCache:
    """Counted rows by a digest of their text, the least recently used dropped first once they hold more
    than `ROW_CACHE_ENTRIES` entries (read at each store, so 0 turns it off). A node featurizes its newest
    thousand pages again for every topic's meta build and held-out curve, and its training documents for
    every topic's model. Rows are read-only: a caller's matrix is a copy."""

    def __init__(self) -> None:
        self._rows: OrderedDict[bytes, CountedRow] = OrderedDict()
        self._entries = 0
        self._lock = threading.Lock()

    def get(self, key: bytes) -> CountedRow | None:
        with self._lock:
            row = self._rows.get(key)
            if row is not None:
                self._rows.move_to_end(key)
            return row

    def put(self, key: bytes, row: CountedRow) -> None:
        with self._lock:
            if key in self._rows:
                return
            self._rows[key] = row
            self._entries += row[0].size
            while self._rows and self._entries > ROW_CACHE_ENTRIES:
                _, dropped = self._rows.popitem(last=False)
                self._entries -= dropped[0].size

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def entries(self) -> int:
        return self._entries


_ROW_CACHES: dict[tuple, RowCache] = {}
_ROW_CACHES_LOCK = threading.Lock()


def text_digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


@dataclass(frozen=True)
class Featurizer:
    """Turns texts into rows of the hashed feature space described by `config`."""

    config: FeatureConfig = field(default_factory=FeatureConfig)
    idf: IdfWeights | None = None

    def __post_init__(self) -> None:
        cfg = self.config
        key = (
            cfg.language,
            cfg.stopwords,
            cfg.min_token_length,
            cfg.max_token_length,
            cfg.n_features,
            cfg.hash_seed,
        )
        object.__setattr__(self, "_cache", _TOKEN_CACHES.setdefault(key, {}))
        with _ROW_CACHES_LOCK:
            object.__setattr__(self, "_rows", _ROW_CACHES.setdefault((*key, cfg.tf), RowCache()))
        object.__setattr__(self, "_stemmer", snowballstemmer.stemmer(cfg.language) if cfg.language else None)
        object.__setattr__(self, "_stopwords", stopwords(cfg.language) if cfg.stopwords else frozenset())
        weights = self.idf.weights(cfg.n_features) if self.idf is not None else None
        object.__setattr__(self, "_idf_weights", weights)

    def terms(self, text: str) -> list[str]:
        """Stemmed terms of `text` in reading order, stopwords and over-long or short tokens dropped."""
        entries = (self._entry(token) for token in tokenize(text))
        return [entry[0] for entry in entries if entry is not None]

    def feature_of(self, term: str) -> tuple[int, float]:
        """(index, sign) of an already stemmed term in the hashed space."""
        h = murmurhash3_32(term, seed=self.config.hash_seed)
        return abs(h) % self.config.n_features, (1.0 if h >= 0 else -1.0)

    def indices_of_words(self, words: Iterable[str]) -> list[int]:
        """Feature indices of user-given words or phrases (indicator keywords), stemmed like documents."""
        return sorted({self.feature_of(term)[0] for word in words for term in self.terms(word)})

    def counts(self, texts: Sequence[str]) -> sp.csr_matrix:
        """Signed hashed term frequencies after tf scaling, before IDF and normalisation."""
        rows = [self._counted(text) for text in texts]
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([indices.size for indices, _ in rows], out=indptr[1:])
        indices = np.concatenate([np.zeros(0, dtype=np.int32), *(indices for indices, _ in rows)])
        data = np.concatenate([np.zeros(0), *(data for _, data in rows)])
        return sp.csr_matrix((data, indices, indptr), shape=(len(rows), self.config.n_features))

    def _counted(self, text: str) -> CountedRow:
        key = text_digest(text)
        row = self._rows.get(key)
        if row is None:
            row = self._count(text)
            self._rows.put(key, row)
        return row

    def _count(self, text: str) -> CountedRow:
        scale = _TF_SCALE[self.config.tf]
        term_counts: dict[tuple[str, int, float], int] = {}
        for token, count in Counter(tokenize(text)).items():
            entry = self._entry(token)
            if entry is not None:
                term_counts[entry] = term_counts.get(entry, 0) + count
        row: dict[int, float] = {}
        for (_, index, sign), count in term_counts.items():
            row[index] = row.get(index, 0.0) + sign * scale(count)
        indices = np.fromiter(row.keys(), dtype=np.int32, count=len(row))
        data = np.fromiter(row.values(), dtype=np.float64, count=len(row))
        order = np.argsort(indices, kind="stable")
        kept = data[order] != 0.0
        indices, data = indices[order][kept], data[order][kept]
        indices.flags.writeable = False
        data.flags.writeable = False
        return indices, data

    def transform(self, texts: Sequence[str]) -> sp.csr_matrix:
        """One L2-normalised row per text (all-zero rows for texts without terms)."""
        if self.config.idf and self._idf_weights is None:
            raise FeatureSpaceMismatch(
                "this FeatureConfig uses IDF: build the Featurizer with fit_idf() first"
            )
        matrix = self.counts(texts)
        if self._idf_weights is not None:
            matrix = sp.csr_matrix(matrix.multiply(self._idf_weights[np.newaxis, :]))
        return l2_normalize_rows(matrix)

    def fit_idf(self, texts: Sequence[str]) -> Featurizer:
        """A Featurizer that also weights terms by IDF learnt from `texts` (needs config.idf)."""
        if not self.config.idf:
            raise FeatureSpaceMismatch("fit_idf() needs a FeatureConfig with idf=True")
        presence = self.counts(texts)
        df = np.bincount(presence.indices, minlength=self.config.n_features)
        indices = np.flatnonzero(df)
        return replace(
            self, idf=IdfWeights(len(texts), indices.astype(np.int64), df[indices].astype(np.int64))
        )

    def _entry(self, token: str) -> tuple[str, int, float] | None:
        cache = self._cache
        entry = cache.get(token, False)
        if entry is False:
            entry = self._analyse(token)
            if len(cache) >= _TOKEN_CACHE_LIMIT:
                cache.clear()
            cache[token] = entry
        return entry

    def _analyse(self, token: str) -> tuple[str, int, float] | None:
        cfg = self.config
        if not cfg.min_token_length <= len(token) <= cfg.max_token_length or token in self._stopwords:
            return None
        term = self._stemmer.stemWord(token) if self._stemmer is not None else token
        return (term, *self.feature_of(term))


def _log_scale(count: int) -> float:
    return 1.0 + math.log(count)


_TF_SCALE = {"raw": float, "log": _log_scale, "binary": lambda _count: 1.0}


def l2_normalize_rows(matrix: sp.csr_matrix) -> sp.csr_matrix:
    """Rows scaled to unit Euclidean length; zero rows stay zero."""
    matrix = sp.csr_matrix(matrix, dtype=np.float64, copy=True)
    norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    matrix.data /= np.repeat(norms, np.diff(matrix.indptr))
    return matrix


def check_feature_space(expected: FeatureConfig, X: sp.spmatrix) -> None:
    """Refuse a matrix whose width does not match the model's hashed space."""
    if X.shape[1] != expected.n_features:
        raise FeatureSpaceMismatch(
            f"features have {X.shape[1]} columns but the model expects {expected.n_features}: "
            "featurise with the model's own FeatureConfig"
        )
