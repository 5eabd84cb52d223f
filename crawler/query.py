"""The plain query language of search: words, "quoted phrases", -exclusions and site: filters.

People type queries as they do into a web search engine, not in FTS5's syntax, so any text must be a valid
query: every word is quoted before it reaches FTS5, and the few operators are the ones search engines taught
them:
- `word`: required (all words are);
- `"two words"`: the words in this order, next to each other (an unclosed quote runs to the end);
- `-word`, `-"two words"`: pages with it are left out;
- `site:docs.python.org`: only pages of that host or its subdomains; `site:host/path` only pages under the
  path on that host; several `site:` filters are alternatives; `-site:host` leaves a host out.

The names a search takes besides its words (verdicts, origins, ranking signals) live here too, so the
command line can offer them without loading the search.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from crawler.errors import SearchError

# What a search asks for besides its words (the search, the CLI's options and the API read them here):
# "accepted": accepted into a topic by the focus (every page of an unfocused crawl is) and kept or not yet
# judged by the restrictive verdict; "abstained": the restrictive verdict abstained; "any": no filter
VERDICTS = ("accepted", "abstained", "any")
ORIGINS = ("local", "pooled", "any")
SIGNALS = ("text", "confidence", "authority", "pagerank")  # what results are ranked by (crawler.ranking)
DEFAULT_USER = "local"  # whose feedback personalises the ranking when a search names nobody
HIGHLIGHT = ("[[", "]]")  # around query terms in previews; the CLI and TUI render them

MIN_PREFIX = 3  # shorter words stay whole-word matches in a prefix search: "a*" would match nearly every page
_WORD = re.compile(r"\w+", re.UNICODE)
_TOKEN = re.compile(r'(-?)(?:"([^"]*)(?:"|$)|(\S+))')  # [-]"a phrase" or [-]token
_SITE = re.compile(r"(?i)site:(.*)")
_LABEL = r"\w(?:[\w-]*\w)?"
_HOST = re.compile(rf"(?:{_LABEL}(?:\.{_LABEL})*|\[[0-9a-f:.]+\])(?::\d{{1,5}})?")


@dataclass(frozen=True)
class Site:
    """A `site:` filter: a host (with its subdomains, or the exact `host:port` when a port is given) and
    an optional path prefix."""

    host: str
    port: str | None = None
    path: str = ""

    def sql(self, host_column: str = "d.host", url_column: str = "d.url") -> tuple[str, list[object]]:
        """A condition on the repository's `host` ("name:port") and `url` columns, and its parameters."""
        if self.path:  # a path names one host: the URL starts with it (either scheme)
            prefixes = [
                f"{scheme}://{self.host}{':' + self.port if self.port else ''}{self.path}"
                for scheme in ("http", "https")
            ]
            clause = " OR ".join(f"substr({url_column}, 1, ?) = ?" for _ in prefixes)
            return f"({clause})", [value for p in prefixes for value in (len(p), p)]
        if self.port:
            return f"{host_column} = ?", [f"{self.host}:{self.port}"]
        return (
            f"(substr({host_column}, 1, ?) = ? OR instr({host_column}, ?) > 0)",
            [len(self.host) + 1, f"{self.host}:", f".{self.host}:"],
        )


@dataclass(frozen=True)
class PlainQuery:
    """A parsed plain query: what FTS5 must match, what it must not, and the site filters."""

    words: tuple[str, ...] = ()
    phrases: tuple[tuple[str, ...], ...] = ()
    excluded: tuple[tuple[str, ...], ...] = ()  # words and phrases
    sites: tuple[Site, ...] = ()
    excluded_sites: tuple[Site, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.words and not self.phrases

    @property
    def wanted_text(self) -> str:
        """The words a result has (for highlighting and previews): not the excluded ones, not the sites."""
        return " ".join([*self.words, *(word for phrase in self.phrases for word in phrase)])

    def match(self, prefix: bool = False) -> str:
        """The FTS5 expression: every word quoted, so any text is valid. With `prefix`, free words of
        `MIN_PREFIX` letters or more also match the words they start (`("w" OR "w"*)`, so that BM25 scores a
        whole-word match above a match of a longer word alone); phrases stay as written."""
        required = [_word(w, prefix) for w in self.words] + [_phrase(p) for p in self.phrases]
        if not required:
            return ""
        expression = (" AND " if prefix else " ").join(required)
        if not self.excluded:
            return expression
        return f"({expression})" + "".join(f" NOT {_phrase(words)}" for words in self.excluded)

    def excluded_match(self) -> str:
        """The FTS5 expression matching any excluded word or phrase ("" when none is): a query without
        words to match browses, and leaves out the pages this matches."""
        return " OR ".join(_phrase(words) for words in self.excluded)

    def site_filter(self) -> tuple[list[str], list[object]]:
        """SQL conditions (to be ANDed) and parameters for the `site:` filters."""
        where: list[str] = []
        params: list[object] = []
        if self.sites:
            clauses = [site.sql() for site in self.sites]
            where.append("(" + " OR ".join(clause for clause, _ in clauses) + ")")
            params.extend(value for _, values in clauses for value in values)
        for site in self.excluded_sites:
            clause, values = site.sql()
            where.append(f"NOT {clause}")
            params.extend(values)
        return where, params


def parse_query(text: str) -> PlainQuery:
    """`text` as a plain query (see the module's docstring); raises `SearchError` when a `site:` names
    no host. Characters that are not words are separators, as FTS5's tokenizer makes them."""
    words: list[str] = []
    phrases: list[tuple[str, ...]] = []
    excluded: list[tuple[str, ...]] = []
    sites: list[Site] = []
    excluded_sites: list[Site] = []
    for minus, quoted, bare in _TOKEN.findall(text):
        negated = minus == "-"
        site = _SITE.fullmatch(bare) if bare else None
        if site is not None:
            (excluded_sites if negated else sites).append(parse_site(site.group(1)))
            continue
        found = tuple(_WORD.findall(bare or quoted))
        if not found:
            continue
        if negated:
            excluded.append(found)
        elif len(found) > 1 and not bare:
            phrases.append(found)
        else:
            words.extend(found)  # a bare token such as "e-mail" is its words, as it was indexed
    return PlainQuery(
        tuple(dict.fromkeys(words)),
        tuple(dict.fromkeys(phrases)),
        tuple(dict.fromkeys(excluded)),
        tuple(sites),
        tuple(excluded_sites),
    )


def parse_site(value: str) -> Site:
    """`site:`'s value: `host`, `host:port`, `host/path` or a URL; the scheme does not matter."""
    value = re.sub(r"(?i)^[a-z][a-z0-9+.-]*://", "", value.strip())
    host_port, slash, path = value.partition("/")
    host_port = host_port.lower().rstrip(".")
    if not _HOST.fullmatch(host_port):
        raise SearchError(f"site: needs a host name such as site:docs.python.org, not {value!r}")
    host, port = host_port, None
    if re.search(r":\d+$", host_port):
        host, _, port = host_port.rpartition(":")
    return Site(host, port, slash + path if slash else "")


def _word(word: str, prefix: bool) -> str:
    return f'("{word}" OR "{word}"*)' if prefix and len(word) >= MIN_PREFIX else f'"{word}"'


def _phrase(words: tuple[str, ...]) -> str:
    return '"' + " ".join(words) + '"'
