"""Full-text search over the repository: FTS5 with BM25 ranking (title weighted above body) and snippets.

User input must never crash a search: FTS5 query syntax errors become `SearchError` with a hint, and
`syntax="plain"` (the CLI's default) reads the query as a search engine does (`crawler.query`: words,
"phrases", -exclusions, site:) and quotes every word, so any text is a valid query.
Plain words match whole words (stemmed); where that finds few results, `ranked_search` also matches them as
the starts of words ("postgres" finds the PostgreSQL pages, whole-word matches ranked first) and says so in
`SearchResults.prefix`.
"""

from __future__ import annotations

import functools
import json
import re
import sqlite3
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from crawler.dedup import fingerprint, simhash
from crawler.errors import SearchError
from crawler.preview import TopicTermWeights, preview, repeated_lines, term_probes
from crawler.query import HIGHLIGHT, MIN_PREFIX, ORIGINS, SIGNALS, VERDICTS, PlainQuery, parse_query
from crawler.ranking import (
    GLOBAL_SCOPE,
    RankingWeights,
    combine,
    ensure_schema,
    signal_matrix,
    topic_clause,
)
from crawler.repository import DocumentRecord, Repository
from crawler.repository_schema import BM25_WEIGHTS
from crawler.taxonomy import TOPICS_LISTED_API, load_taxonomy, unknown_topic
from crawler.urls import host_of

SNIPPET_TOKENS = 24
MAX_QUERY_CHARS = 1000  # a query longer than this is refused: no one types it, and FTS5's cost grows fast
QUERY_SECONDS = 10.0  # a query running longer is interrupted: the API waits on the repository meanwhile
PROGRESS_STEPS = 10_000  # SQLite virtual machine steps between two looks at the clock
WIDEN_BELOW = 10  # fewer results than this for the words as typed: the starts of words are searched too


@dataclass(frozen=True)
class Hit:
    doc_id: int
    url: str
    title: str
    snippet: str  # query terms wrapped in [ and ]
    score: float  # BM25 (higher is better here; SQLite's rank is its negative)
    topic: str | None = None
    confidence: float | None = None


def text_document(
    url: str, title: str, text: str, *, near_duplicates: bool = True, **fields: object
) -> DocumentRecord:
    """A document record for text that was not fetched (benchmarks, imports, tests): host from the URL,
    exact fingerprint, and SimHash unless `near_duplicates` is off (it is the costly part)."""
    values = {
        "final_url": url,
        "host": host_of(url),
        "status": 200,
        "content_type": "text/html",
        "fingerprint": fingerprint(text),
        "simhash": simhash(text) if near_duplicates else 0,
        "fetched_at": time.time(),
        "depth": 0,
    }
    values.update(fields)
    return DocumentRecord(url=url, title=title, text=text, **values)


def _parsed(query: str, syntax: str) -> PlainQuery | None:
    """The plain query, or None for FTS5 syntax (which must have something to match); a query longer than
    `MAX_QUERY_CHARS` is an error. A plain query may be empty: `ranked_search` then browses."""
    if len(query) > MAX_QUERY_CHARS:
        raise SearchError(f"the query is {len(query)} characters long: at most {MAX_QUERY_CHARS}, please")
    if syntax != "plain":
        if not query.strip():
            raise SearchError("the query is empty: give at least one word")
        return None
    return parse_query(query)


def _refuse_empty(parsed: PlainQuery | None) -> None:
    if parsed is not None and parsed.empty:
        raise SearchError(
            "the query is empty: give at least one word to look for"
            + (" (-word and site: only narrow a search)" if parsed != PlainQuery() else "")
        )


def search(
    repo: Repository,
    query: str,
    limit: int = 10,
    *,
    syntax: str = "fts5",
    include_duplicates: bool = False,
    topic: str | None = None,
) -> list[Hit]:
    """The best `limit` documents for `query`; `syntax="plain"` treats the query as words, not FTS5 syntax.

    Exact duplicates are left out (they carry no text); near duplicates are left out unless
    `include_duplicates`, so one page reachable under several URLs shows once.
    """
    parsed = _parsed(query, syntax)
    _refuse_empty(parsed)
    where = ["documents_fts MATCH ?"]
    params: list[object] = [parsed.match() if parsed else query.strip()]
    if parsed:
        sites, site_params = parsed.site_filter()
        where.extend(sites)
        params.extend(site_params)
    if not include_duplicates:
        where.append("d.duplicate_of IS NULL AND d.near_duplicate_of IS NULL")
    if topic is not None:
        where.append("d.topic = ?")
        params.append(topic)
    sql = (
        "SELECT d.id, d.url, d.title, "
        f"snippet(documents_fts, 1, '[', ']', ' … ', {SNIPPET_TOKENS}) AS snip, "
        "documents_fts.rank AS rank, d.topic, d.confidence "
        "FROM documents_fts JOIN documents d ON d.id = documents_fts.rowid "
        f"WHERE {' AND '.join(where)} ORDER BY documents_fts.rank LIMIT ?"
    )
    params.append(int(limit))
    rows = _run(repo, sql, params, query)
    return [
        Hit(
            doc_id=int(doc_id),
            url=url,
            title=title,
            snippet=" ".join((snip or "").split()),
            score=-float(rank),
            topic=topic_,
            confidence=confidence,
        )
        for doc_id, url, title, snip, rank, topic_, confidence in rows
    ]


# -- ranked search (thesis chapter 4): filters, linear combination of signals, previews, collapsing ---------

CANDIDATES = 100  # BM25's best candidates re-ranked by the combination (more when paging deeper)
NEAR_DUPLICATE_BITS = 3  # SimHash Hamming distance within which two results show as one (as dedup does)
LOCAL = "local"
BM25_BUDGET = 2000  # documents BM25 is computed for per query; past it, candidates come from cheap tiers
SITE_SAMPLE = 8  # recent pages of a hit's host whose shared lines are its site's template
TEMPLATE_CHARS = 3000  # characters read from each sampled page's start and from its end
PREVIEW_HEAD = 8000  # characters of a page's start a search preview reads (and lines around query terms)
PREVIEW_WINDOW = 1500  # characters of a page whose passages a preview weighs (stemming all is slow)


@dataclass(frozen=True)
class RankedHit:
    """One result of `ranked_search` in the control API's shape, plus the signals behind its score."""

    doc_id: int
    url: str
    title: str
    topic: str | None
    confidence: float | None
    origin: str  # "local" or the peer id a pooled document came from
    origins: tuple[str, ...]  # every source of this result (merged across peers and near duplicates)
    score: float
    preview: str
    verdict: str | None
    signals: dict[str, float]  # normalised per query (crawler.query.SIGNALS)
    duplicates: tuple[int, ...] = ()  # doc ids collapsed into this result

    def to_api(self) -> dict[str, object]:
        return {
            "doc_id": self.doc_id,
            "url": self.url,
            "title": self.title,
            "topic": self.topic,
            "confidence": self.confidence,
            "origin": self.origin,
            "origins": list(self.origins),
            "score": self.score,
            "preview": self.preview,
            "verdict": self.verdict,
            "signals": self.signals,
            "duplicates": list(self.duplicates),
        }


@dataclass(frozen=True)
class SearchResults:
    hits: tuple[RankedHit, ...]
    total: int  # matching results after filters and collapsing (counted to `CANDIDATES` depth exactly)
    prefix: bool = False  # the words as typed matched few results: words they start are matched too
    browsed: bool = False  # no words to look for: the most confident results under the filters

    def to_api(self) -> dict[str, object]:
        return {
            "hits": [h.to_api() for h in self.hits],
            "total": self.total,
            "prefix": self.prefix,
            "browsed": self.browsed,
        }


@dataclass(frozen=True)
class _Candidate:
    doc_id: int
    url: str
    key: str  # final URL or canonical: one result per page across peers
    title: str
    topic: str | None
    confidence: float | None
    verdict: str | None
    origin: str
    origins: tuple[str, ...]
    simhash: int


def _filters(
    topic: str | None, include_descendants: bool, verdict: str, origin: str
) -> tuple[list[str], list[object]]:
    if verdict not in VERDICTS:
        raise SearchError(f"verdict must be one of {', '.join(VERDICTS)}, not {verdict!r}")
    if origin not in ORIGINS:
        raise SearchError(f"origin must be one of {', '.join(ORIGINS)}, not {origin!r}")
    where = ["d.duplicate_of IS NULL"]
    params: list[object] = []
    if topic is not None:
        clause, topic_params = topic_clause("d.topic", topic, include_descendants)
        where.append(f"d.accepted = 1 AND {clause}")
        params.extend(topic_params)
    if verdict == "accepted":
        # accepted by the crawl's focus (a page no topic accepted is stored with accepted = 0 and no
        # topic) and not dismissed by the restrictive verdict, which judges only topic documents
        where.append("d.accepted = 1 AND (d.verdict IS NULL OR d.verdict = 'accepted')")
    elif verdict == "abstained":
        where.append("d.verdict = 'abstained'")
    if origin == "local":
        where.append("d.origin IS NULL")
    elif origin == "pooled":
        where.append("d.origin IS NOT NULL")
    return where, params


def _run(repo: Repository, sql: str, params: list[object], query: str) -> list[tuple]:
    """The rows of one search statement, interrupted after `QUERY_SECONDS`: 3,333 FTS5 prefix terms took
    144 s on 60 documents, with the node's API waiting on the repository all along."""
    deadline = time.monotonic() + QUERY_SECONDS
    repo.db.conn.set_progress_handler(lambda: time.monotonic() > deadline, PROGRESS_STEPS)
    try:
        return repo.db.execute(sql, params).fetchall()
    except sqlite3.OperationalError as exc:
        message = str(exc)
        if message == "interrupted":
            raise SearchError(
                f"the query took more than {QUERY_SECONDS:.0f} s and was stopped: search for fewer words"
            ) from exc
        if not any(sign in message for sign in ("locked", "busy", "disk", "readonly", "corrupt")):
            raise SearchError(
                f"cannot understand the query {query!r} ({message}); put phrases in double quotes, "
                "or search for plain words"
            ) from exc
        raise
    finally:
        repo.db.conn.set_progress_handler(None, 0)


def _check_topic(repo: Repository, topic: str) -> None:
    """A filter topic the repository's topics do not hold is an error: it found nothing, and the answer
    advised widening the verdict. (A crawl without topics has nothing to check against.)"""
    try:
        known, found = repo.db.execute(
            "SELECT count(*), count(*) FILTER (WHERE key = ?) FROM topics", [topic]
        ).fetchone()
    except sqlite3.OperationalError:  # no topics table: nothing was ever imported
        return
    if known and not found:  # only now every key, for the ones the user may have meant
        keys = [key for (key,) in repo.db.execute("SELECT key FROM topics")]
        raise SearchError(unknown_topic(topic, keys, listed=TOPICS_LISTED_API))


def ranked_search(
    repo: Repository,
    query: str,
    *,
    topic: str | None = None,
    include_descendants: bool = True,
    verdict: str = "accepted",
    origin: str = "any",
    weights: RankingWeights | None = None,
    limit: int = 10,
    offset: int = 0,
    syntax: str = "plain",
    collapse: bool = True,
    previews: bool = True,
    context: str | None = None,
    bm25_budget: int = BM25_BUDGET,
) -> SearchResults:
    """The query's results ranked by the linear combination of normalised signals (thesis eq. 4.1).

    BM25 picks the best `CANDIDATES` matching documents under the filters (topic or its subtree,
    `verdict` as `VERDICTS` says: by default pages the focus accepted into a topic that the restrictive
    verdict did not dismiss; local/pooled origin); the combination re-ranks them; near duplicates and
    copies of one page from several peers show once with their origins merged.
    `context` (default: the filter topic) is the topic whose view ranks without filtering: only documents
    accepted into its subtree keep their confidence, and its topic-specific link scores are used.
    A query with more than `bm25_budget` matches takes its BM25 candidates from bounded tiers
    (`_candidate_tiers`); a budget of at least the repository's size ranks exactly.
    Plain words that match fewer than `WIDEN_BELOW` results under the filters are searched again as
    the starts of words too, and those results are kept when they are more (`prefix` in the results).
    A plain query with no words to match (none at all, or only -word and site: filters) browses: the
    documents under the filters, the most confident of them (in `context`'s view) ranked by the same
    combination, whose text signal is then 0 for all; a user looks through a topic or a peer's results
    without guessing their words.
    """
    weights = weights or RankingWeights()
    parsed = _parsed(query, syntax)
    browsing = parsed is not None and parsed.empty
    match = parsed.match() if parsed else query.strip()
    if limit < 0 or offset < 0:
        raise SearchError("limit and offset must not be negative")
    ensure_schema(repo)
    if topic is not None:
        _check_topic(repo, topic)
    where, params = _filters(topic, include_descendants, verdict, origin)
    if parsed:
        sites, site_params = parsed.site_filter()
        where, params = where + sites, params + site_params
    depth = max(CANDIDATES, 3 * (offset + limit))
    context = context if context is not None else topic
    confidence_sql, confidence_params = "d.confidence", []
    if context is not None:
        clause, confidence_params = topic_clause("d.topic", context, descendants=True)
        confidence_sql = f"CASE WHEN d.accepted = 1 AND {clause} THEN d.confidence ELSE 0 END"
    topic_filter = topic_clause("topic", topic, include_descendants) if topic is not None else None
    filters = (where, params)
    prefix = False
    if browsing:
        assert parsed is not None
        order = (confidence_sql, confidence_params)
        ranked, total = _browsed_candidates(repo, parsed.excluded_match(), filters, order, depth, query)
    else:
        ranked, total = _bm25_candidates(repo, match, filters, topic_filter, depth, query, bm25_budget)
        widened = parsed.match(prefix=True) if parsed and total < WIDEN_BELOW else match
        if widened != match:
            budget = bm25_budget
            more, more_total = _bm25_candidates(repo, widened, filters, topic_filter, depth, query, budget)
            if more_total > total:
                ranked, total, prefix = more, more_total, True
    text_of = dict(ranked)
    ids = list(text_of)
    sql = (
        "SELECT d.id, d.url, COALESCE(d.canonical, d.final_url), d.title, d.topic, d.confidence, d.verdict, "
        "d.origin, d.origins, d.simhash, 0, "
        f"COALESCE(lt.authority, lg.authority), COALESCE(lt.pagerank, lg.pagerank), {confidence_sql} "
        "FROM documents d "
        "LEFT JOIN link_scores lt ON lt.topic = ? AND lt.doc_id = d.id "
        "LEFT JOIN link_scores lg ON lg.topic = ? AND lg.doc_id = d.id "
        "WHERE d.id IN (SELECT value FROM json_each(?))"
    )
    scope = context if context is not None else GLOBAL_SCOPE
    values = [*confidence_params, scope, GLOBAL_SCOPE, json.dumps(ids)]
    found = {row[0]: row for row in _run(repo, sql, values, query)}
    rows = [found[i] for i in ids if i in found]
    candidates = [_candidate(row) for row in rows]
    signals = signal_matrix(
        {
            "text": [-text_of[row[0]] for row in rows],
            "confidence": [row[13] for row in rows],
            "authority": [row[11] for row in rows],
            "pagerank": [row[12] for row in rows],
        }
    )
    scores = combine(signals, weights)
    order = sorted(range(len(rows)), key=lambda i: (-scores[i], i))
    groups = (
        collapse_results([candidates[i] for i in order]) if collapse else [[candidates[i]] for i in order]
    )
    position = {c.doc_id: i for i, c in enumerate(candidates)}
    page = groups[offset : offset + limit]
    wanted = parsed.wanted_text if parsed else query
    previews_of = _previews(repo, wanted, [g[0] for g in page], prefix) if previews else {}
    hits = []
    for group in page:
        best = group[0]
        i = position[best.doc_id]
        hits.append(
            RankedHit(
                doc_id=best.doc_id,
                url=best.url,
                title=best.title,
                topic=best.topic,
                confidence=best.confidence,
                origin=best.origin,
                origins=merge_origins(group),
                score=float(scores[i]),
                preview=previews_of.get(best.doc_id, ""),
                verdict=best.verdict,
                signals={name: float(v) for name, v in zip(SIGNALS, signals[i], strict=True)},
                duplicates=tuple(c.doc_id for c in group[1:]),
            )
        )
    shown_total = len(groups) if len(rows) < depth else max(total, len(groups))
    return SearchResults(tuple(hits), shown_total, prefix, browsing)


def _candidate(row: tuple) -> _Candidate:
    doc_id, url, key, title, topic, confidence, verdict, origin, origins, simhash = row[:10]
    return _Candidate(
        doc_id=int(doc_id),
        url=url,
        key=key or url,
        title=title,
        topic=topic,
        confidence=confidence,
        verdict=verdict,
        origin=origin or LOCAL,
        origins=tuple(json.loads(origins or "[]")),
        simhash=int(simhash) % (1 << 64),
    )


def _bm25_candidates(
    repo: Repository,
    match: str,
    filters: tuple[list[str], list[object]],
    topic: tuple[str, list[object]] | None,
    depth: int,
    query: str,
    budget: int = BM25_BUDGET,
) -> tuple[list[tuple[int, float]], int]:
    """The best `depth` (doc id, BM25) pairs under the filters, best first, and the number of results.

    Listing a query's matches is cheap in FTS5; computing BM25 is what costs (about a microsecond per
    document), so a query with more than `budget` matches is scored on a bounded candidate set
    (`_candidate_tiers`). Scores are FTS5's BM25 with corpus-wide statistics either way, so they do not
    depend on the bound. Past the budget the total is estimated from the share of candidates that pass the
    filters."""
    where, params = filters
    matches = _run(repo, "SELECT count(*) FROM documents_fts WHERE documents_fts MATCH ?", [match], query)
    n_matches = int(matches[0][0])
    restriction, bound_params, scored = "", [], n_matches
    if n_matches > budget:
        restriction, bound_params, scored = _candidate_tiers(repo, match, topic, query, budget)
    sql = (  # materialised: BM25 is computed while FTS5 iterates, the count runs over the scored rows
        "WITH scored AS MATERIALIZED ("
        f"SELECT f.rowid AS id, bm25(documents_fts, {BM25_WEIGHTS}) AS r, d.near_duplicate_of IS NULL AS one "
        "FROM documents_fts f JOIN documents d INDEXED BY documents_search ON d.id = f.rowid "
        f"WHERE documents_fts MATCH ? {restriction} AND {' AND '.join(where)}"
        ") SELECT id, r, sum(one) OVER () FROM scored ORDER BY r LIMIT ?"
    )
    rows = _run(repo, sql, [match, *bound_params, *params, depth], query)
    passed = int(rows[0][2]) if rows else 0
    total = passed if scored >= n_matches else round(n_matches * passed / max(scored, 1))
    return [(int(doc_id), float(rank)) for doc_id, rank, _ in rows], total


def _browsed_candidates(
    repo: Repository,
    excluded: str,
    filters: tuple[list[str], list[object]],
    order: tuple[str, list[object]],
    depth: int,
    query: str,
) -> tuple[list[tuple[int, float]], int]:
    """The `depth` most confident (doc id, 0.0) pairs under the filters, surest first (the newest among
    equals), leaving out the documents FTS5 matches to `excluded`; and the number of results."""
    where, params = filters
    conditions, values = list(where), list(params)
    if excluded:
        conditions.append("d.id NOT IN (SELECT rowid FROM documents_fts WHERE documents_fts MATCH ?)")
        values.append(excluded)
    confidence, confidence_params = order
    sql = (
        "WITH listed AS MATERIALIZED ("
        f"SELECT d.id AS id, {confidence} AS c, d.near_duplicate_of IS NULL AS one FROM documents d "
        f"WHERE {' AND '.join(conditions)}"
        ") SELECT id, sum(one) OVER () FROM listed ORDER BY c DESC, id DESC LIMIT ?"
    )
    rows = _run(repo, sql, [*confidence_params, *values, depth], query)
    total = int(rows[0][1]) if rows else 0
    return [(int(doc_id), 0.0) for doc_id, _ in rows], total


def _candidate_tiers(
    repo: Repository, match: str, topic: tuple[str, list[object]] | None, query: str, budget: int
) -> tuple[str, list[object], int]:
    """SQL restricting BM25 to at most `budget` of a query's matches, its parameters, and how many
    matches it keeps (general tiers, nothing depends on particular queries):
    - a filter topic small enough: all its documents, so the topic's ranking stays exact;
    - otherwise the matches in the title (weighted `BM25_WEIGHTS[0]` times the body, a title hit outscores
      all but the most repetitive bodies, so BM25's best documents for a common term are there), then the
      most recently stored matches up to the budget."""
    if topic is not None:
        clause, topic_params = topic
        size = _run(repo, f"SELECT count(*) FROM documents WHERE {clause}", topic_params, query)
        if int(size[0][0]) <= budget:
            restriction = f"AND +f.rowid IN (SELECT id FROM documents WHERE {clause})"
            return restriction, list(topic_params), int(size[0][0])
    newest = "SELECT rowid FROM documents_fts WHERE documents_fts MATCH ? ORDER BY rowid DESC LIMIT ?"
    try:
        titled = [r[0] for r in _run(repo, newest, [f"{{title}} : ({match})", budget], query)]
    except SearchError:  # an expression that cannot take a column filter: the recency tier alone
        titled = []
    ids = dict.fromkeys(titled)
    if len(ids) < budget:
        ids.update(dict.fromkeys(r[0] for r in _run(repo, newest, [match, budget], query)))
    chosen = list(ids)[:budget]
    return "AND +f.rowid IN (SELECT value FROM json_each(?))", [json.dumps(chosen)], len(chosen)


def collapse_results(ranked: list[_Candidate]) -> list[list[_Candidate]]:
    """Groups of results that are one page (same final URL or canonical, or SimHash within
    `NEAR_DUPLICATE_BITS`), each led by its best-ranked member, in rank order."""
    groups: list[list[_Candidate]] = []
    by_key: dict[str, int] = {}
    fingerprints: list[tuple[int, int]] = []  # (simhash, group index)
    for cand in ranked:
        index = by_key.get(cand.key)
        if index is None and cand.simhash:
            index = next(
                (g for h, g in fingerprints if (h ^ cand.simhash).bit_count() <= NEAR_DUPLICATE_BITS), None
            )
        if index is None:
            index = len(groups)
            groups.append([])
            if cand.simhash:
                fingerprints.append((cand.simhash, index))
        by_key.setdefault(cand.key, index)
        groups[index].append(cand)
    return groups


def merge_origins(group: list[_Candidate]) -> tuple[str, ...]:
    """Every source of a collapsed result, in first-seen order: each member's origin and known origins."""
    merged = dict.fromkeys(o for cand in group for o in (cand.origin, *cand.origins))
    return tuple(merged)


def _previews(repo: Repository, query: str, shown: list[_Candidate], prefix: bool = False) -> dict[int, str]:
    if not shown:
        return {}
    ids = [c.doc_id for c in shown]
    rows = repo.db.execute(
        f"SELECT id, text, topic, host FROM documents WHERE id IN ({', '.join('?' * len(ids))})", ids
    ).fetchall()
    by_topic = topic_weights(repo)  # once per search: it checks the training set in the database
    templates = {host: site_template(repo, host) for host in {row[3] for row in rows}}
    return {
        int(i): query_preview(repo, text, topic, query, by_topic, templates[host], prefix=prefix)
        for i, text, topic, host in rows
    }


def site_template(repo: Repository, host: str) -> set[str]:
    """The lines that recent pages of `host` share (its menus, headers and footers), for previews to
    skip; empty while the host has too few pages to tell. Near-duplicate copies do not count, and only
    each page's start and end are read, where a template's lines are."""
    rows = repo.db.execute(
        "SELECT substr(text, 1, ?) || char(10) || substr(text, -?) FROM documents "
        "WHERE host = ? AND text != '' AND near_duplicate_of IS NULL ORDER BY id DESC LIMIT ?",
        [TEMPLATE_CHARS, TEMPLATE_CHARS, host, SITE_SAMPLE],
    ).fetchall()
    if len(rows) < 2:
        return set()
    return repeated_lines([row[0] for row in rows], min_documents=2 if len(rows) <= 4 else 3)


# -- previews ------------------------------------------------------------------------------------------------


@functools.cache
def _featurizer():  # built on first use: importing scikit-learn costs a second at CLI start
    from metamodels.features import FeatureConfig, Featurizer

    return Featurizer(FeatureConfig())


def _stemmed_terms(text: str) -> list[str]:
    return _featurizer().terms(text)


_TOPIC_WEIGHTS: dict[tuple[str, int], Mapping[str, dict[str, float]]] = {}
_WORD_OR_GAP = re.compile(r"(\w+)", re.UNICODE)


def query_terms(query: str) -> set[str]:
    """The query's stemmed terms (as the features stem them), for highlighting and preview weights."""
    return set(_stemmed_terms(query))


def topic_weights(repo: Repository) -> Mapping[str, dict[str, float]]:
    """Per topic, the MI weights of its terms from the taxonomy's training documents (`TopicTermWeights`:
    each topic's when first asked for); cached until the training set changes (feedback and retraining add
    documents)."""
    if not repo.db["training_documents"].exists():
        return {}
    count = int(repo.db.execute("SELECT count(*) FROM training_documents").fetchone()[0])
    key = (str(repo.path), count)
    if key not in _TOPIC_WEIGHTS:
        taxonomy = load_taxonomy(repo)
        weights: Mapping[str, dict[str, float]] = {}
        if taxonomy is not None:
            positives, negatives = taxonomy.training_texts()
            weights = TopicTermWeights(_stemmed_terms, positives, negatives, drop_repeated_lines=True)
        _TOPIC_WEIGHTS.clear()
        _TOPIC_WEIGHTS[key] = weights
    return _TOPIC_WEIGHTS[key]


def query_preview(
    repo: Repository,
    text: str,
    topic: str | None,
    query: str,
    by_topic: Mapping[str, dict[str, float]] | None = None,
    template: Collection[str] = frozenset(),
    *,
    prefix: bool = False,
) -> str:
    """Topic-specific preview (sentences ranked by the topic's MI weights, thesis 2.20) that shows the
    passages with query terms first (a query-biased snippet: sentences of running text before headings
    and menu lines), with the query terms highlighted; `by_topic` is `topic_weights(repo)` when the
    caller already has it; lines of the site's `template` (`site_template`) are not shown. With `prefix`
    the query's words stand for the words they start (`prefixed_terms`)."""
    terms = query_terms(query)
    scope = preview_scope(text, term_probes(terms))
    if prefix:
        terms = prefixed_terms(terms, scope)
    by_topic = topic_weights(repo) if by_topic is None else by_topic
    weights = dict(by_topic.get(topic or "", {}))
    boost = 2.0 * max(weights.values(), default=0.0) + 1.0  # a query term outweighs any topic term
    weights.update(dict.fromkeys(terms, boost))
    shown = preview(
        scope, weights, _stemmed_terms, preferred=terms, budget=PREVIEW_WINDOW, skip_lines=template
    )
    return highlight(shown, terms)


def prefixed_terms(terms: set[str], text: str) -> set[str]:
    """The stemmed terms of `text` that start with one of `terms` of `MIN_PREFIX` letters or more (the
    words a prefix search matched there), with `terms` themselves."""
    starts = tuple(t for t in terms if len(t) >= MIN_PREFIX)
    if not starts:
        return terms
    return terms | {term for term in set(_stemmed_terms(text)) if term.startswith(starts)}


def preview_scope(text: str, probes: set[str], head: int = PREVIEW_HEAD, around: int = PREVIEW_WINDOW) -> str:
    """The part of a long text a search preview reads: its whole lines within the first `head`
    characters, and whole lines around the first place of each query term that does not show there
    (`probes`: `term_probes`), so a preview costs about the same on a page of a megabyte."""
    if len(text) <= head:
        return text
    cut = text.rfind("\n", 0, head)
    cut = cut if cut > 0 else head
    lowered = text.lower()
    parts, done = [text[:cut]], cut
    for at in sorted({lowered.find(probe, cut) for probe in probes if probe not in lowered[:cut]} - {-1}):
        start = max(text.rfind("\n", 0, max(at - around // 2, 0)) + 1, done)
        end = text.find("\n", at + around // 2)
        done = end if end >= 0 else len(text)
        if start < done:
            parts.append(text[start:done])
    return "\n\n".join(parts)


def highlight(text: str, terms: set[str], marks: tuple[str, str] = HIGHLIGHT) -> str:
    """`text` with every word whose stem is one of `terms` wrapped in `marks`."""
    if not terms:
        return text
    opening, closing = marks
    parts = _WORD_OR_GAP.split(text)
    marked: dict[str, bool] = {}  # words repeat: stem each once
    for i in range(1, len(parts), 2):
        word = parts[i]
        if word not in marked:
            marked[word] = bool(terms.intersection(_stemmed_terms(word)))
        if marked[word]:
            parts[i] = f"{opening}{parts[i]}{closing}"
    return "".join(parts)
