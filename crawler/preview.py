"""Topic-specific previews (thesis 2.2, 2.20): the sentences of a page that carry most of its topic's
discriminative terms, ranked by the terms' mutual information with the topic."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from metamodels.mi import term_mutual_information

PREVIEW_CHARS = 500  # BINGO!'s preview column width
# Inside running text a sentence ends at these marks, not after a number ("13.2. Transaction Isolation");
# bullets and pipes separate breadcrumb and menu items that share a line.
_SENTENCE_END = re.compile(r"(?<=[.!?\u3002\uff01\uff1f\u2026])(?<![0-9]\.)\s+|\s*[\u2022\u00b7|]\s*")
_ITEM_SEPARATOR = re.compile(r"\s*[\u2022\u00b7|]\s*")
_ENDS_SENTENCE = re.compile(r"[.!?\u3002\uff01\uff1f\u2026][\"'\u201d\u2019)\]]*$")
_INNER_END = re.compile(r"[^\W\d_A-Z][.!?]\s|[)\]][.!?]\s")  # a sentence ends inside the line ("(ACID). It")
_LETTERS = re.compile(r"[^\W\d_]+")
LABEL_WORDS = 4  # a line of at most this many words that ends no sentence is a label: menu item, heading
TITLE_SHARE = 0.7  # ...and so is a longer one whose words mostly start capitalised ("About The SQLite C API")
SHORT_PARAGRAPH_WORDS = 8  # running text this short without a sentence end is a label too ("When to use it")


@dataclass(frozen=True)
class Passage:
    """A unit a preview may show: a sentence of running text (`content`), or a label line (menu item,
    heading, list or table-of-contents entry), which a preview shows only when no sentence fits."""

    text: str
    content: bool


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


def passages(text: str) -> list[Passage]:
    """The page's sentences and label lines in page order.

    Extracted text has a line per block (`crawler.parse`), but a block's own source line breaks stay too, so
    a line is not a block: lines join into running text while the text goes on (the previous line ends no
    sentence and the line is no label between labels), and a label line stands alone. A menu thus becomes a
    run of labels instead of the start of the next sentence (jusText's observation: navigation is short
    blocks without function words or sentence ends, and comes in runs)."""
    lines = [" ".join(line.split()) for line in text.split("\n")]
    labels = [bool(line) and _is_label(line) for line in lines]
    # a line that ends no sentence among labels is one of them (a list entry in sentence case)
    bounded = [True, *labels, True]
    labels = [
        label or bool(line and not _ENDS_SENTENCE.search(line) and bounded[i] and bounded[i + 2])
        for i, (line, label) in enumerate(zip(lines, labels, strict=True))
    ]
    found: list[Passage] = []
    running: list[str] = []
    for i, line in enumerate(lines):
        if not line:
            _add_running(found, running)
            continue
        if labels[i] and not _continues_running(lines, labels, i, running):
            _add_running(found, running)
            found.extend(Passage(part, False) for part in _pieces(line, _ITEM_SEPARATOR))
        else:
            running.append(line)
    _add_running(found, running)
    return found


def _continues_running(lines: list[str], labels: list[bool], i: int, running: list[str]) -> bool:
    """Whether label-like line `i` is part of running text: the next line goes on in lower case ("SQLite
    implements / serializable transactions"), or it sits inside an unfinished sentence ("appear to be /
    Atomic, Consistent, Isolated, and Durable / (ACID).")."""
    following = lines[i + 1] if i + 1 < len(lines) else ""
    if following[:1].islower():
        return True
    unfinished = bool(running) and not _ENDS_SENTENCE.search(running[-1])
    return unfinished and bool(following) and not labels[i + 1]


def _is_label(line: str) -> bool:
    if _ENDS_SENTENCE.search(line) or _INNER_END.search(line) or line[0].islower() or line[-1] in ",;":
        return False
    words = _LETTERS.findall(line)
    if len(words) <= LABEL_WORDS:
        return True
    return sum(word[0].isupper() for word in words) >= TITLE_SHARE * len(words)


def _add_running(found: list[Passage], running: list[str]) -> None:
    if not running:
        return
    text = " ".join(running)
    running.clear()
    if not _ENDS_SENTENCE.search(text) and len(_LETTERS.findall(text)) <= SHORT_PARAGRAPH_WORDS:
        found.extend(Passage(part, False) for part in _pieces(text, _ITEM_SEPARATOR))
        return
    found.extend(Passage(part, True) for part in _pieces(text))


def _pieces(text: str, separator: re.Pattern[str] = _SENTENCE_END) -> list[str]:
    return [s.strip() for s in separator.split(text) if s and len(s.strip()) > 1]


def split_sentences(text: str) -> list[str]:
    return [p.text for p in passages(text)]


def preview(
    text: str,
    weights: Mapping[str, float],
    terms_of: Callable[[str], list[str]],
    max_sentences: int = 2,
    max_chars: int = PREVIEW_CHARS,
    *,
    preferred: Collection[str] = (),
    budget: int | None = None,
) -> str:
    """The `max_sentences` passages with the highest MI weight of their distinct terms (divided by the
    square root of their length, so one long run-on block does not win by size), in page order.

    Sentences of running text come before label lines (a heading or menu item carries topic terms densely
    but says little; once a sentence is on the topic, only labels with a preferred term may join it),
    passages with a `preferred` term (a query's) before all others: a search hit's preview shows why it
    matched. `budget` bounds the characters whose terms are computed (stemming a
    whole long page is slow): passages that contain a preferred term as a substring first, then sentences,
    then labels, each in page order."""
    found = passages(text)
    if not found:
        return ""
    preferred = set(preferred)
    indexed = list(enumerate(found))
    if budget is not None:
        indexed = _within_budget(indexed, preferred, budget)
    scored = []
    for index, passage in indexed:
        terms = terms_of(passage.text)
        distinct = set(terms)
        score = sum(weights.get(term, 0.0) for term in distinct) / math.sqrt(max(len(terms), 1))
        rank = (bool(distinct & preferred), score > 0, passage.content, score)
        scored.append((rank, -index, passage.text))
    ranked = sorted(scored, reverse=True)
    if ranked[0][0][3] <= 0:
        ranked = ranked[:1]  # nothing on the topic: the page's first sentence (or first line) alone
    elif any(
        rank[1] and rank[2] for rank, _, _ in ranked
    ):  # a sentence on the topic: labels only with a query term
        ranked = [item for item in ranked if item[0][1] and (item[0][2] or item[0][0])]
    best = ranked[:max_sentences]
    chosen = " ... ".join(s for _, _, s in sorted(best, key=lambda item: -item[1]))
    return chosen if len(chosen) <= max_chars else chosen[: max_chars - 1].rstrip() + "\u2026"


def _within_budget(
    indexed: list[tuple[int, Passage]], preferred: set[str], budget: int
) -> list[tuple[int, Passage]]:
    def order(item: tuple[int, Passage]) -> tuple[bool, bool, int]:
        index, passage = item
        lowered = passage.text.lower()
        return (not any(term in lowered for term in preferred), not passage.content, index)

    kept, used = [], 0
    for item in sorted(indexed, key=order):
        if used >= budget:
            break
        kept.append(item)
        used += len(item[1].text)
    return sorted(kept, key=lambda item: item[0])
