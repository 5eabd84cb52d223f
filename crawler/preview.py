"""Topic-specific previews (thesis 2.2, 2.20): the sentences of a page that carry most of its topic's
discriminative terms, ranked by the terms' mutual information with the topic."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from metamodels.mi import TermMatrix

PREVIEW_CHARS = 500  # BINGO!'s preview column width
# Inside running text a sentence ends at these marks, not after a number ("13.2. Transaction Isolation");
# bullets and pipes separate breadcrumb and menu items that share a line (_ITEM_SEPARATOR).
_SENTENCE_END = re.compile(r"(?<=[.!?\u3002\uff01\uff1f\u2026])(?<![0-9]\.)\s+")
_ITEM_SEPARATOR = re.compile(r"\s*[\u2022\u00b7|]\s*")
_STOPS = ".!?\u3002\uff01\uff1f\u2026"  # a line ending in one ends a sentence (closers may follow)
_CLOSERS = "\"'\u201d\u2019)]"
_INNER_END = re.compile(r"[^\W\d_A-Z][.!?]\s|[)\]][.!?]\s")  # a sentence ends inside the line ("(ACID). It")
_LETTERS = re.compile(r"[^\W\d_]+")
_SEPARATORS = "\u2022\u00b7|"  # a line ending in one is a list item: "Languages: en |" / "fr |" / "ko"
LABEL_WORDS = 4  # a line of at most this many words that ends no sentence is a label: menu item, heading
TITLE_SHARE = 0.7  # ...and so is a longer one whose words mostly start capitalised ("About The SQLite C API")
LIST_LINES = 3  # ...and each of this many lines or more that together end no sentence ("xatom() (os)")
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
    *,
    drop_repeated_lines: bool = False,
) -> dict[str, dict[str, float]]:
    """Every topic's weights of `TopicTermWeights`, computed at once (for a few topics, or all of them)."""
    weights = TopicTermWeights(terms_of, positives, negatives, top, drop_repeated_lines=drop_repeated_lines)
    return dict(weights)


class TopicTermWeights(Mapping[str, dict[str, float]]):
    """Per topic, its `top` terms by pointwise MI (thesis eq. 2.10) of a topic's subtree documents against
    every other training document; a topic's weights are computed when first asked for, so a search's
    previews pay for the topics of its hits, not for each of a taxonomy's hundreds of topics. `terms_of`
    turns a text into its (stemmed) terms. Topics whose documents are all or none of the training
    documents have no weights.

    `drop_repeated_lines` leaves out the lines that several training documents share
    (`without_repeated_lines`): otherwise a site's menu and footer words ("Purchase", "Software
    Foundation") rank among its topic's terms, and a preview picks the footer."""

    def __init__(
        self,
        terms_of: Callable[[str], list[str]],
        positives: Mapping[str, Sequence[str]],
        negatives: Mapping[str, Sequence[str]] | None = None,
        top: int = 500,
        *,
        drop_repeated_lines: bool = False,
    ) -> None:
        texts: list[str] = []
        owners: list[str] = []
        for topic, docs in positives.items():
            texts.extend(docs)
            owners.extend([topic] * len(docs))
        for docs in (negatives or {}).values():
            texts.extend(docs)
            owners.extend([""] * len(docs))  # a negative belongs to no topic's subtree
        if drop_repeated_lines:
            texts = without_repeated_lines(texts)
        self._matrix = TermMatrix.of([terms_of(text) for text in texts])
        self._owners = np.array(owners, dtype=str)
        self._topics = list(positives)
        self._top = top
        self._weights: dict[str, dict[str, float] | None] = {}

    def __getitem__(self, topic: str) -> dict[str, float]:
        if topic not in self._weights:
            self._weights[topic] = self._computed(topic)
        found = self._weights[topic]
        if found is None:
            raise KeyError(topic)
        return found

    def __iter__(self) -> Iterator[str]:
        return (topic for topic in self._topics if topic in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, topic: object) -> bool:
        try:
            self[topic]  # type: ignore[index]
        except KeyError:
            return False
        return True

    def _computed(self, topic: str) -> dict[str, float] | None:
        if topic not in self._topics:
            return None
        owners = self._owners
        y = (owners == topic) | np.char.startswith(owners, topic + "/")
        if y.all() or not y.any():
            return None
        scores = self._matrix.mutual_information(y.astype(int), kind="pointwise")
        best = sorted(((s, t) for t, s in scores.items() if s > 0), reverse=True)[: self._top]
        return {term: score for score, term in best}


def repeated_lines(texts: Iterable[str], min_documents: int = 2) -> set[str]:
    """The lines that `min_documents` or more of the texts share: the menus, headers and footers of a
    site's template, found by repetition across its pages (whitespace-normalised, as `passages` sees them)."""
    return _shared_lines([_normalised_lines(text) for text in texts], min_documents)


def without_repeated_lines(texts: Sequence[str], min_documents: int = 2) -> list[str]:
    """Each text without the lines that `min_documents` or more of the texts share (`repeated_lines`)."""
    lines_of = [_normalised_lines(text) for text in texts]  # once: splitting is most of the cost
    repeated = _shared_lines(lines_of, min_documents)
    return ["\n".join(ln for ln in lines if ln not in repeated) for lines in lines_of]


def _shared_lines(lines_of: Iterable[list[str]], min_documents: int) -> set[str]:
    shared = Counter(line for lines in lines_of for line in set(lines) if line)
    return {line for line, count in shared.items() if count >= min_documents}


def _normalised_lines(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.split("\n")]


def passages(text: str, skip_lines: Collection[str] = frozenset()) -> list[Passage]:
    """The page's sentences and label lines in page order.

    Extracted text has a line per block (`crawler.parse`), but a block's own source line breaks stay too, so
    a line is not a block: lines join into running text while the text goes on (the previous line ends no
    sentence and the line is no label between labels), and a label line stands alone. A menu thus becomes a
    run of labels instead of the start of the next sentence (jusText's observation: navigation is short
    blocks that end no sentence, and comes in runs; link density is not in the stored text). Lines in
    `skip_lines` (a site's
    template: `repeated_lines`) are left out, and so is running text made of them only."""
    lines = [_Line(line) for line in _normalised_lines(text)]
    for line in lines:
        line.skip = line.text in skip_lines
    ended = [False] + [line.item for line in lines]  # a line after a list item is one: the list's last
    for line, after_item in zip(lines, ended, strict=False):
        line.item = line.item or (after_item and bool(line.text))
    labels = [True] + [line.item or line.label for line in lines] + [True]
    for i, line in enumerate(lines):
        # a short line that ends no sentence among labels is one of them (a list entry in sentence case)
        line.label = labels[i + 1] or (labels[i] and labels[i + 2] and line.short)
    found: list[Passage] = []
    running: list[_Line] = []
    for i, line in enumerate(lines):
        if not line.text:
            _add_running(found, running)
        elif line.item or (line.label and not _continues_running(lines, i, running)):
            _add_running(found, running)
            if not line.skip:
                found.extend(Passage(part, False) for part in _pieces(line.text, None))
        elif line.skip and _starts_anew(lines, i, running):
            _add_running(found, running)  # a template sentence of its own: "Copyright 2024 The Foundation."
        else:
            running.append(line)
    _add_running(found, running)
    return found


def _starts_anew(lines: list[_Line], i: int, running: list[_Line]) -> bool:
    """Whether line `i` begins no sentence that the next line goes on with, after finished text."""
    if running and not running[-1].ends:
        return False
    following = lines[i + 1].text if i + 1 < len(lines) else ""
    return lines[i].ends or not following[:1].islower()


class _Line:
    """One line of extracted text and what its shape says; `item`, `label` and `skip` change with the
    page's other lines."""

    __slots__ = ("ends", "item", "label", "sentence", "short", "skip", "text", "titled", "words")

    def __init__(self, text: str) -> None:  # text: whitespace-normalised
        self.text = text
        self.words, self.titled, self.ends, self.sentence, self.item, self.label, self.short = _shape(text)
        self.skip = False


@lru_cache(maxsize=65_536)  # a site's menu and footer lines repeat on every page
def _shape(text: str) -> tuple[int, bool, bool, bool, bool, bool, bool]:
    """(words, titled, ends a sentence, ends one somewhere, list item, label, short phrase)."""
    if not text:
        return 0, True, False, False, False, False, False
    words = _LETTERS.findall(text)
    titled = sum(word[0].isupper() for word in words) >= TITLE_SHARE * len(words)
    ends = text.rstrip(_CLOSERS)[-1:] in _STOPS
    sentence = ends or _INNER_END.search(text) is not None
    if text[0].islower() or text[-1] in ",;":
        label = False
    elif sentence:  # "Copyright 2024 The Apache Software Foundation."
        label = titled and len(words) >= LABEL_WORDS
    else:
        label = titled or len(words) <= LABEL_WORDS
    short = not sentence and len(words) <= SHORT_PARAGRAPH_WORDS
    return len(words), titled, ends, sentence, text[-1] in _SEPARATORS, label, short


def _continues_running(lines: list[_Line], i: int, running: list[_Line]) -> bool:
    """Whether label-like line `i` is part of running text: it is no heading ("NAME", "Module:") and
    either the next line goes on with a word in lower case ("SQLite implements / serializable
    transactions"; "written in / Python / and C."; but "Summary / mod_charset_lite allows" starts anew) or
    it sits inside an unfinished sentence ("appear to be / Atomic, Consistent, Isolated, and Durable /
    (ACID).")."""
    line = lines[i]
    if line.text[-1] in ":\u00b6" or line.text.upper() == line.text:
        return False
    following = lines[i + 1] if i + 1 < len(lines) else None
    if following is None or not following.text:
        return False
    unfinished = bool(running) and not running[-1].ends
    single = line.words <= 1
    if following.text[0].islower() and not following.item:  # a word goes on; an identifier starts anew
        return unfinished or following.text.split(" ", 1)[0].isalpha()
    return unfinished and not single and not following.label


def _add_running(found: list[Passage], running: list[_Line]) -> None:
    if not running:
        return
    lines = list(running)
    running.clear()
    if all(line.skip for line in lines):
        return
    if not any(line.sentence for line in lines):
        if len(lines) >= LIST_LINES:  # lines that never end a sentence: an index or list, one entry a line
            found.extend(
                Passage(part, False) for line in lines if not line.skip for part in _pieces(line.text, None)
            )
            return
        text = " ".join(line.text for line in lines)
        if sum(line.words for line in lines) <= SHORT_PARAGRAPH_WORDS:  # "When to use SQLite"
            found.extend(Passage(part, False) for part in _pieces(text, None))
            return
    found.extend(Passage(part, True) for part in _pieces(" ".join(line.text for line in lines)))


def _pieces(text: str, separator: re.Pattern[str] | None = _SENTENCE_END) -> list[str]:
    """`text` cut at bullets and pipes, then at `separator` (sentence ends), without one-letter scraps."""
    parts = _ITEM_SEPARATOR.split(text) if any(mark in text for mark in _SEPARATORS) else [text]
    if separator is not None:
        parts = [piece for part in parts for piece in separator.split(part)]
    return [part.strip() for part in parts if len(part.strip()) > 1]


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
    skip_lines: Collection[str] = frozenset(),
) -> str:
    """The `max_sentences` passages with the highest MI weight of their distinct terms (divided by the
    square root of their length, so one long run-on block does not win by size), in page order.

    Sentences of running text come before label lines (a heading or menu item carries topic terms densely
    but says little: once a sentence is on the topic, only labels with a preferred term may join it), and
    passages with a `preferred` term (a query's) before all others: a search hit's preview shows why it
    matched. `budget` bounds the characters whose terms are computed (stemming a whole long page is slow):
    passages that mention a preferred term first, then sentences, then labels, each in page order (one
    passage longer than the budget, a run-on list, only when nothing else fits). `skip_lines` are left
    out unless nothing else is left."""
    found = (skip_lines and passages(text, skip_lines)) or passages(text)
    if not found:
        return ""
    preferred = set(preferred)
    probes = term_probes(preferred)

    def mentions(passage: Passage) -> bool:
        lowered = passage.text.lower()
        return any(probe in lowered for probe in probes)

    indexed = list(enumerate(found))
    if budget is not None:
        indexed = _within_budget(indexed, mentions, budget)
    memo: dict[str, tuple[bool, float]] = {}  # menus repeat their lines

    def ranked(index: int, passage: Passage) -> tuple[tuple[bool, bool, bool, float], int, str]:
        if passage.text not in memo:
            terms = terms_of(passage.text)
            distinct = set(terms)
            score = sum(weights.get(term, 0.0) for term in distinct) / math.sqrt(max(len(terms), 1))
            memo[passage.text] = (bool(distinct & preferred), score)
        matched, score = memo[passage.text]
        return (matched, score > 0, passage.content, score), -index, passage.text

    scored = [ranked(i, p) for i, p in indexed if p.content]
    on_topic = any(rank[1] for rank, _, _ in scored)
    labels = [(i, p) for i, p in indexed if not p.content and (not on_topic or mentions(p))]
    scored += [ranked(i, p) for i, p in labels]
    if on_topic:  # labels only with a query term
        scored = [item for item in scored if item[0][2] or item[0][0]]
    best = sorted(scored, reverse=True)
    # nothing on the topic: the page's first sentence (or first line) alone
    best = [item for item in best if item[0][1]][:max_sentences] or best[:1]
    chosen = " ... ".join(s for _, _, s in sorted(best, key=lambda item: -item[1]))
    return chosen if len(chosen) <= max_chars else chosen[: max_chars - 1].rstrip() + "\u2026"


def term_probes(terms: Iterable[str]) -> set[str]:
    """Lower-case substrings that a word with one of the stemmed `terms` contains: the stem less its last
    letter, which the stemmer may have changed ("queri" is not in "query", "quer" is)."""
    return {term[:-1] if len(term) > 3 else term for term in terms}


def _within_budget(
    indexed: list[tuple[int, Passage]], mentions: Callable[[Passage], bool], budget: int
) -> list[tuple[int, Passage]]:
    def order(item: tuple[int, Passage]) -> tuple[bool, bool, bool, int]:
        index, passage = item
        return (not mentions(passage), len(passage.text) > budget, not passage.content, index)

    kept, used = [], 0
    for item in sorted(indexed, key=order):
        size = len(item[1].text)
        if used + size > budget and kept:
            continue  # a shorter passage further on may still fit
        kept.append(item)
        used += size
    return sorted(kept, key=lambda item: item[0])
