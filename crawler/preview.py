"""Topic-specific previews (thesis 2.2, 2.20): the sentences of a page that carry most of its topic's
discriminative terms, ranked by the terms' mutual information with the topic."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from metamodels.mi import term_mutual_information

PREVIEW_CHARS = 500  # BINGO!'s preview column width
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n{2,}|\s*[\u2022|]\s*")


def topic_term_weights(
    terms_of: Callable[[str], list[str]],
    positives: Mapping[str, Sequence[str]],
    negatives: Mapping[str, Sequence[str]] | None = None,
    top: int = 500,
) -> dict[str, dict[str, float]]:
    """Per topic, its `top` terms by pointwise MI (thesis eq. 2.10) of a topic's subtree documents against
    every other training document. `terms_of` turns a text into its (stemmed) terms."""
    texts: list[str] = []
    owner: list[str | None] = []
    for topic, docs in positives.items():
        texts.extend(docs)
        owner.extend([topic] * len(docs))
    for docs in (negatives or {}).values():
        texts.extend(docs)
        owner.extend([None] * len(docs))
    documents = [terms_of(text) for text in texts]
    weights: dict[str, dict[str, float]] = {}
    for topic in positives:
        y = np.array([o is not None and (o == topic or o.startswith(topic + "/")) for o in owner], dtype=int)
        if y.all() or not y.any():
            continue
        scores = term_mutual_information(documents, y, kind="pointwise")
        best = sorted(((s, t) for t, s in scores.items() if s > 0), reverse=True)[:top]
        weights[topic] = {term: score for score, term in best}
    return weights


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s and len(s.strip()) > 1]


def preview(
    text: str,
    weights: Mapping[str, float],
    terms_of: Callable[[str], list[str]],
    max_sentences: int = 2,
    max_chars: int = PREVIEW_CHARS,
) -> str:
    """The `max_sentences` sentences with the highest MI weight of their distinct terms (divided by the
    square root of their length, so one long run-on block does not win by size), in page order."""
    sentences = split_sentences(text)
    if not sentences:
        return ""
    scored = []
    for index, sentence in enumerate(sentences):
        terms = terms_of(sentence)
        score = sum(weights.get(term, 0.0) for term in set(terms)) / math.sqrt(max(len(terms), 1))
        scored.append((score, -index, sentence))
    best = sorted(scored, reverse=True)[:max_sentences]
    if best[0][0] <= 0:
        best = [(0.0, 0, sentences[0])]
    chosen = " ... ".join(s for _, _, s in sorted(best, key=lambda item: -item[1]))
    return chosen if len(chosen) <= max_chars else chosen[: max_chars - 1].rstrip() + "\u2026"
