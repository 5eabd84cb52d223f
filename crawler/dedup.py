"""Duplicate detection: exact duplicates by a fingerprint of the normalised text, near duplicates by SimHash.

The thesis (2.16) eliminates exact duplicates by the MD5 of the extracted text; we use BLAKE2b of the text
after case and whitespace normalisation, so re-rendered copies of one page (other whitespace, other case)
count as one. Near duplicates use Charikar's 64-bit SimHash over word 3-shingles with Manku et al.'s
block index (WWW 2007): two fingerprints within Hamming distance k <= 3 agree exactly on at least one of
four 16-bit blocks, so each lookup only compares against the documents that share a block.

The index is bounded: past `max_size` documents the oldest are forgotten (FIFO), which keeps memory flat
on endless crawls at the price of missing duplicates of long-forgotten pages.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

_WORD = re.compile(r"\w+", re.UNICODE)
_BLOCKS = 4
_BLOCK_BITS = 64 // _BLOCKS
_BLOCK_MASK = (1 << _BLOCK_BITS) - 1
SHINGLE = 3
MIN_SHINGLES = 8  # below this a page has too little text for a meaningful SimHash


def normalise_text(text: str) -> str:
    return " ".join(text.lower().split())


def fingerprint(text: str) -> str:
    """Hex BLAKE2b-128 of the normalised text: equal for texts that differ only in case or spacing."""
    return hashlib.blake2b(normalise_text(text).encode("utf-8"), digest_size=16).hexdigest()


_WORD_HASHES: dict[str, int] = {}  # word -> 64-bit hash: words recur across pages, so each is hashed once
_WORD_HASHES_MAX = 500_000  # cleared past this, so an endless crawl's vocabulary cannot grow it forever
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _word_hashes(words: list[str]) -> np.ndarray:
    values = list(map(_WORD_HASHES.get, words))
    if None in values:
        if len(_WORD_HASHES) >= _WORD_HASHES_MAX:
            _WORD_HASHES.clear()
        for i, value in enumerate(values):
            if value is None:
                digest = hashlib.blake2b(words[i].encode("utf-8"), digest_size=8).digest()
                values[i] = _WORD_HASHES[words[i]] = int.from_bytes(digest, "little")
    return np.array(values, dtype=np.uint64)


def _shingle_hashes(words: list[str]) -> np.ndarray:
    """A 64-bit hash per word 3-shingle: the words' hashes rotated by position (so order counts), XORed
    and mixed by SplitMix64's finaliser. Vectorised: a hash call per shingle cost half a parse."""
    hashes = _word_hashes(words)
    count = len(words) - SHINGLE + 1
    h = hashes[:count].copy()
    for offset in range(1, SHINGLE):
        part = hashes[offset : offset + count]
        shift = np.uint64(21 * offset)
        h ^= (part << shift) | (part >> (np.uint64(64) - shift))
    h ^= h >> np.uint64(30)
    h *= _MIX1
    h ^= h >> np.uint64(27)
    h *= _MIX2
    h ^= h >> np.uint64(31)
    return h


def simhash(text: str) -> int:
    """Charikar's SimHash over word 3-shingles (each distinct shingle counted once); 0 for tiny texts."""
    words = _WORD.findall(text.lower())
    if len(words) - SHINGLE + 1 < MIN_SHINGLES:
        return 0
    shingles = np.unique(_shingle_hashes(words)).astype("<u8")
    if len(shingles) < MIN_SHINGLES:
        return 0
    bits = np.unpackbits(shingles.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    majority = bits.sum(axis=0, dtype=np.int64) * 2 > len(shingles)
    return int(np.packbits(majority, bitorder="little").view("<u8")[0])


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()


@dataclass(frozen=True)
class DedupVerdict:
    """`duplicate_of`: id of an exact duplicate seen before; `near_duplicate_of`: of a near duplicate."""

    duplicate_of: int | None = None
    near_duplicate_of: int | None = None

    @property
    def is_duplicate(self) -> bool:
        return self.duplicate_of is not None


class DedupIndex:
    """Exact and near-duplicate index over the last `max_size` original documents."""

    def __init__(self, max_size: int = 200_000, max_distance: int = 3) -> None:
        if not 0 <= max_distance < _BLOCKS:
            raise ValueError(f"max_distance must be in 0..{_BLOCKS - 1} for a {_BLOCKS}-block SimHash index")
        self.max_size = max_size
        self.max_distance = max_distance
        self._exact: OrderedDict[str, tuple[int, int]] = OrderedDict()  # fingerprint -> (doc id, simhash)
        self._blocks: list[dict[int, list[tuple[int, int]]]] = [{} for _ in range(_BLOCKS)]

    def __len__(self) -> int:
        return len(self._exact)

    def check(self, fp: str, sh: int) -> DedupVerdict:
        """Whether a page with fingerprint `fp` and SimHash `sh` duplicates an indexed document."""
        hit = self._exact.get(fp)
        if hit is not None:
            return DedupVerdict(duplicate_of=hit[0])
        if sh == 0:
            return DedupVerdict()
        best: tuple[int, int] | None = None
        for table, key in zip(self._blocks, _block_keys(sh), strict=True):
            for doc_id, other in table.get(key, ()):
                distance = hamming(sh, other)
                if distance <= self.max_distance and (best is None or distance < best[0]):
                    best = (distance, doc_id)
        return DedupVerdict(near_duplicate_of=best[1] if best else None)

    def add(self, doc_id: int, fp: str, sh: int) -> None:
        if fp in self._exact:
            return
        self._exact[fp] = (doc_id, sh)
        if sh:
            for table, key in zip(self._blocks, _block_keys(sh), strict=True):
                table.setdefault(key, []).append((doc_id, sh))
        while len(self._exact) > self.max_size:
            self._forget_oldest()

    def discard(self, fp: str) -> None:
        """Forget the document indexed under `fp` (its page changed or is gone)."""
        held = self._exact.pop(fp, None)
        if held is not None:
            self._unblock(*held)

    def _forget_oldest(self) -> None:
        _, (doc_id, sh) = self._exact.popitem(last=False)
        self._unblock(doc_id, sh)

    def _unblock(self, doc_id: int, sh: int) -> None:
        if not sh:
            return
        for table, key in zip(self._blocks, _block_keys(sh), strict=True):
            bucket = table.get(key)
            if bucket is None:
                continue
            bucket[:] = [entry for entry in bucket if entry[0] != doc_id]
            if not bucket:
                del table[key]


def _block_keys(sh: int) -> list[int]:
    return [(sh >> (i * _BLOCK_BITS)) & _BLOCK_MASK for i in range(_BLOCKS)]
