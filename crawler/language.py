"""Language check by stopword counting (thesis 2.14).

English-trained classifiers accept French or German pages for their shared web vocabulary ("homepage",
"server"), so each page's tokens vote: a stopword of the desired language counts +1, a stopword of another
language -1, a word of both or of none 0. A page scoring below `min_score` (d_STOP) is rejected; short
pages without real sentences fall below it too, which the thesis counts as a useful side effect.
Stopword lists come from the `stop-words` package (Snowball-derived lists of many languages).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from stop_words import get_stop_words

from metamodels.features import tokenize

# The thesis's twelve Snowball languages.
LANGUAGES = (
    "english",
    "german",
    "french",
    "spanish",
    "italian",
    "portuguese",
    "dutch",
    "swedish",
    "norwegian",
    "danish",
    "finnish",
    "russian",
)


@dataclass(frozen=True)
class LanguageCheck:
    """`language`: the crawl's language; `min_score`: d_STOP; `max_tokens`: tokens looked at per page."""

    language: str = "english"
    min_score: int = 3
    max_tokens: int = 2000

    def __post_init__(self) -> None:
        if self.language not in LANGUAGES:
            raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, not {self.language!r}")

    def score(self, text: str) -> int:
        """dCount: desired-language stopwords minus foreign ones."""
        votes = _votes(self.language)
        return sum(votes.get(token, 0) for token in tokenize(text)[: self.max_tokens])

    def accepts(self, text: str) -> bool:
        return self.score(text) >= self.min_score


@lru_cache(maxsize=len(LANGUAGES))
def _votes(language: str) -> dict[str, int]:
    own = set(get_stop_words(language))
    foreign: set[str] = set()
    for other in LANGUAGES:
        if other != language:
            foreign.update(get_stop_words(other))
    votes = dict.fromkeys(foreign - own, -1)
    votes.update(dict.fromkeys(own - foreign, 1))
    return votes
