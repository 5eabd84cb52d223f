"""Exact duplicates by normalised-text fingerprint, near duplicates by SimHash, in a bounded index."""

from __future__ import annotations

import random

import pytest

from crawler.dedup import DedupIndex, DedupVerdict, fingerprint, hamming, simhash

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda"]


def random_text(seed: int, n: int = 2000) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) + str(rng.randrange(50)) for _ in range(n))


def test_fingerprint_ignores_case_and_whitespace_but_not_words():
    assert fingerprint("Hello   World\n") == fingerprint("hello world")
    assert fingerprint("hello world") != fingerprint("hello there world")


def test_simhash_of_a_small_edit_is_close_and_of_another_text_far():
    text = random_text(1)
    edited = text.replace(text.split()[200], "changed", 1)
    assert hamming(simhash(text), simhash(edited)) <= 3
    assert hamming(simhash(text), simhash(random_text(2))) > 10


def test_simhash_is_stable_across_processes():
    # Stored in the repository, so it must not depend on Python's per-process string hash seed.
    assert simhash("one two three four five six seven eight nine ten eleven twelve") == simhash(
        "one two three four five six seven eight nine ten eleven twelve"
    )
    assert simhash("too short") == 0


def test_index_reports_exact_and_near_duplicates():
    index = DedupIndex(max_size=100)
    original = random_text(3)
    index.add(1, fingerprint(original), simhash(original))
    copy = original.upper()
    assert index.check(fingerprint(copy), simhash(copy)).duplicate_of == 1
    near = original.replace(original.split()[10], "other", 1)
    verdict = index.check(fingerprint(near), simhash(near))
    assert verdict.duplicate_of is None and verdict.near_duplicate_of == 1
    unrelated = random_text(4)
    assert index.check(fingerprint(unrelated), simhash(unrelated)).near_duplicate_of is None


def test_index_forgets_the_oldest_beyond_its_bound():
    index = DedupIndex(max_size=3)
    texts = [random_text(10 + i) for i in range(5)]
    for doc_id, text in enumerate(texts):
        index.add(doc_id, fingerprint(text), simhash(text))
    assert len(index) == 3
    assert index.check(fingerprint(texts[0]), simhash(texts[0])).duplicate_of is None
    assert index.check(fingerprint(texts[0]), simhash(texts[0])).near_duplicate_of is None
    assert index.check(fingerprint(texts[4]), simhash(texts[4])).duplicate_of == 4


def test_a_discarded_document_is_neither_an_exact_nor_a_near_duplicate_any_more():
    index = DedupIndex(max_size=100)
    old, kept = random_text(20), random_text(21)
    index.add(1, fingerprint(old), simhash(old))
    index.add(2, fingerprint(kept), simhash(kept))
    index.discard(fingerprint(old))
    index.discard(fingerprint("never indexed"))
    near = old.replace(old.split()[10], "other", 1)
    assert index.check(fingerprint(old), simhash(old)) == DedupVerdict()
    assert index.check(fingerprint(near), simhash(near)) == DedupVerdict()
    assert len(index) == 1 and index.check(fingerprint(kept), simhash(kept)).duplicate_of == 2


def test_distance_beyond_the_block_index_guarantee_is_refused():
    with pytest.raises(ValueError):
        DedupIndex(max_distance=4)
