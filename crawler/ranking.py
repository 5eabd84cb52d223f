"""Ranking signals and their linear combination (thesis 4.1, eq. 4.1), and link scores for search (4.2).

A result's score is `sum_i w_i * signal_i`, each signal normalised per query to [0, 1] by its maximum over
the candidate set, so the user-settable weights mean the same for every query:
- `text`: FTS5 BM25 (title weighted above body),
- `confidence`: the classifier's normalised confidence (thesis 2.22), negatives counted as 0,
- `authority`: Bharat-Henzinger HITS authority on the crawl's link graph,
- `pagerank`: the extended ("intelligent surfer") PageRank of thesis 4.2 with confidence-weighted
  transitions (eq. 4.20) on the graph extended by virtual links between highly relevant documents (VLA).

Link scores are query-independent: `update_link_scores` computes them once per crawl round (globally and
per topic, the topic-specific prestige of 4.2) into the `link_scores` table that search joins.
"""

from __future__ import annotations

import re
import weakref
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields

import numpy as np

from crawler.errors import CrawlerError
from crawler.linkanalysis import LinkGraph, hits, pagerank
from crawler.query import SIGNALS
from crawler.repository import Repository

GLOBAL_SCOPE = ""  # link_scores.topic of the whole graph's scores
CRITICAL_PATH = 3  # VLA: relevant documents further apart than this get a virtual link (thesis used 3)
RELEVANT_PER_TOPIC = 50  # how many of a topic's most confident documents count as highly relevant
_WEIGHT_ITEM = re.compile(r"^\s*(\w+)\s*[=:]\s*(-?[0-9.]+(?:e-?[0-9]+)?)\s*$")


class RankingError(CrawlerError, ValueError):
    """Weights or ranking parameters that cannot be used; the message says the accepted form."""


@dataclass(frozen=True)
class RankingWeights:
    """Weights of the normalised signals; the thesis's default is unit weights (4.1.4)."""

    text: float = 1.0
    confidence: float = 1.0
    authority: float = 1.0
    pagerank: float = 1.0

    def as_array(self) -> np.ndarray:
        return np.array([getattr(self, name) for name in SIGNALS], dtype=np.float64)

    @classmethod
    def from_array(cls, values: Sequence[float]) -> RankingWeights:
        if len(values) != len(SIGNALS):
            raise RankingError(f"need {len(SIGNALS)} weights ({', '.join(SIGNALS)}), got {len(values)}")
        return cls(*(float(v) for v in values))

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, float]) -> RankingWeights:
        unknown = set(data) - {f.name for f in fields(cls)}
        if unknown:
            raise RankingError(f"unknown ranking signal(s) {sorted(unknown)}: use {', '.join(SIGNALS)}")
        return cls(**{k: float(v) for k, v in data.items()})

    @classmethod
    def parse(cls, text: str) -> RankingWeights:
        """ "text=1,confidence=0.5" (signals left out keep their default); for the CLI's --weights."""
        values: dict[str, float] = {}
        for item in filter(None, (part.strip() for part in text.split(","))):
            match = _WEIGHT_ITEM.match(item)
            if not match:
                raise RankingError(
                    f"cannot read weight {item!r}: write SIGNAL=NUMBER, e.g. text=1,authority=0.5"
                )
            value = float(match.group(2))
            if not abs(value) <= MAX_WEIGHT:  # 1e308 twice is infinity, which no JSON answer can carry
                raise RankingError(f"weight {item!r} is out of range: at most {MAX_WEIGHT:g} either way")
            values[match.group(1)] = value
        return cls.from_dict(values)


MAX_WEIGHT = 1e6  # the largest weight --weights takes, either sign
TEXT_ONLY = RankingWeights(1.0, 0.0, 0.0, 0.0)
TEXT_AND_CONFIDENCE = RankingWeights(1.0, 1.0, 0.0, 0.0)


def normalise_per_query(values: np.ndarray) -> np.ndarray:
    """Negative values to 0, then divided by the maximum over the candidates (all zero stays zero)."""
    clipped = np.clip(np.nan_to_num(np.asarray(values, dtype=np.float64)), 0.0, None)
    top = float(clipped.max()) if clipped.size else 0.0
    return clipped / top if top > 0 else clipped


def signal_matrix(raw: Mapping[str, Sequence[float | None]]) -> np.ndarray:
    """Candidates x SIGNALS matrix of normalised signals from raw per-signal columns (None counts as 0)."""
    columns = []
    for name in SIGNALS:
        column = np.array([0.0 if v is None else float(v) for v in raw.get(name, ())], dtype=np.float64)
        columns.append(normalise_per_query(column))
    size = max((c.size for c in columns), default=0)
    return np.column_stack([c if c.size == size else np.zeros(size) for c in columns]).reshape(
        size, len(SIGNALS)
    )


def combine(signals: np.ndarray, weights: RankingWeights) -> np.ndarray:
    """Eq. 4.1: the weighted sum of each candidate's normalised signals."""
    return np.asarray(signals, dtype=np.float64) @ weights.as_array()


# -- link scores ---------------------------------------------------------------------------------------------


def _ranking_schema_v1(db) -> None:
    db.executescript(
        """
        CREATE TABLE IF NOT EXISTS link_scores (
            doc_id INTEGER NOT NULL,
            topic TEXT NOT NULL,
            authority REAL NOT NULL,
            pagerank REAL NOT NULL,
            PRIMARY KEY (topic, doc_id)
        ) WITHOUT ROWID;
        """
    )


MIGRATIONS = [_ranking_schema_v1]


_READY: weakref.WeakSet[Repository] = weakref.WeakSet()


def ensure_schema(repo: Repository) -> None:
    """Create the link_scores table once per open repository (search calls this on every query)."""
    if repo not in _READY:
        repo.migrate("ranking", MIGRATIONS)
        _READY.add(repo)


def shortest_distances(adjacency: Sequence[Sequence[int]], start: int, limit: int) -> dict[int, int]:
    """Breadth-first link distances from `start` up to `limit` hops (directed)."""
    seen = {start: 0}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if seen[node] >= limit:
            continue
        for nxt in adjacency[node]:
            if nxt not in seen:
                seen[nxt] = seen[node] + 1
                queue.append(nxt)
    return seen


def virtual_links(
    n_nodes: int,
    edges: Iterable[tuple[int, int]],
    relevant: Sequence[int],
    critical_path: int = CRITICAL_PATH,
) -> list[tuple[int, int]]:
    """VLA (thesis 4.2, Fig. 4.3): a link u -> v for every pair of relevant nodes with no path of at most
    `critical_path` links from u to v, so that relevant documents form a close community. Only links are
    added, never removed (removal could cut sequentially crawled chains)."""
    adjacency: list[list[int]] = [[] for _ in range(n_nodes)]
    for s, t in edges:
        adjacency[int(s)].append(int(t))
    added = []
    for u in relevant:
        near = shortest_distances(adjacency, int(u), critical_path)
        added.extend((int(u), int(v)) for v in relevant if v != u and int(v) not in near)
    return added


@dataclass(frozen=True)
class LinkScores:
    """Per graph node (ids as in `graph.ids`): HITS authority and extended PageRank, both max-scaled to 1."""

    ids: tuple[int, ...]
    authority: np.ndarray
    pagerank: np.ndarray
    virtual_links: int


def score_graph(
    graph: LinkGraph,
    confidence: np.ndarray,
    relevant: Sequence[int] = (),
    critical_path: int = CRITICAL_PATH,
) -> LinkScores:
    """HITS authority on the crawled graph; extended PageRank on the graph plus VLA virtual links between
    the `relevant` nodes (indices), with confidence-weighted transitions (eq. 4.19/4.20)."""
    authority = hits(graph).authority if graph.size else np.zeros(0)
    edges = list(zip(graph.sources.tolist(), graph.targets.tolist(), strict=True))
    added = virtual_links(graph.size, edges, relevant, critical_path)
    extended = graph
    if added:
        edge_ids = [(graph.ids[s], graph.ids[t]) for s, t in edges + added]
        extended = LinkGraph.build(dict(zip(graph.ids, graph.hosts, strict=True)), edge_ids)
    rank = pagerank(extended, confidence=confidence) if graph.size else np.zeros(0)
    return LinkScores(graph.ids, _max_scaled(authority), _max_scaled(rank), len(added))


def _max_scaled(values: np.ndarray) -> np.ndarray:
    top = float(values.max()) if values.size else 0.0
    return values / top if top > 0 else values


def load_link_graph(repo: Repository, topic: str | None = None) -> tuple[LinkGraph, np.ndarray]:
    """The crawl's document graph (originals only; links resolved by URL) and each node's confidence;
    with `topic`, only the topic's accepted documents and its descendants' (the topic's own subgraph)."""
    where, params = "duplicate_of IS NULL", []
    if topic is not None:
        clause, params = topic_clause("topic", topic, descendants=True)
        where += f" AND accepted = 1 AND {clause}"
    rows = repo.db.execute(f"SELECT id, host, confidence FROM documents WHERE {where}", params).fetchall()
    hosts = {int(i): h for i, h, _ in rows}
    confidence_of = {int(i): (c if c is not None else 0.0) for i, _, c in rows}
    edges = repo.db.execute(
        "SELECT l.source_id, d.id FROM links l JOIN documents d ON d.url = l.target_url "
        "WHERE l.kind = 'a' AND l.nofollow = 0"
    ).fetchall()
    graph = LinkGraph.build(hosts, [(int(s), int(t)) for s, t in edges])
    confidence = np.array([confidence_of[i] for i in graph.ids], dtype=np.float64)
    return graph, confidence


def most_relevant(confidence: np.ndarray, k: int = RELEVANT_PER_TOPIC) -> list[int]:
    """Indices of the k most confident positive nodes (ties by index): the VLA's relevant set."""
    positive = np.flatnonzero(confidence > 0)
    order = np.lexsort((positive, -confidence[positive]))
    return positive[order[:k]].tolist()


def update_link_scores(
    repo: Repository,
    topics: Iterable[str] = (),
    relevant_per_topic: int = RELEVANT_PER_TOPIC,
    critical_path: int = CRITICAL_PATH,
) -> dict[str, LinkScores]:
    """Recompute and store link scores for the whole graph and for each topic's subgraph."""
    ensure_schema(repo)
    results: dict[str, LinkScores] = {}
    for scope in (GLOBAL_SCOPE, *topics):
        graph, confidence = load_link_graph(repo, scope or None)
        scores = score_graph(graph, confidence, most_relevant(confidence, relevant_per_topic), critical_path)
        results[scope] = scores
        with repo.transaction() as db:
            db.execute("DELETE FROM link_scores WHERE topic = ?", [scope])
            db.conn.executemany(
                "INSERT INTO link_scores (doc_id, topic, authority, pagerank) VALUES (?, ?, ?, ?)",
                zip(
                    scores.ids,
                    [scope] * len(scores.ids),
                    scores.authority.tolist(),
                    scores.pagerank.tolist(),
                    strict=True,
                ),
            )
    return results


def topic_clause(column: str, topic: str, descendants: bool) -> tuple[str, list[str]]:
    """SQL for "column is the topic (or one of its descendants)", usable by the topic index.

    Keys escape "/" inside names, so every descendant key starts with "topic/" and sorts below "topic0".
    """
    if not descendants:
        return f"{column} = ?", [topic]
    return f"({column} = ? OR ({column} >= ? AND {column} < ?))", [topic, topic + "/", topic + "0"]
