"""The BINGO! focus loop (thesis 2.3.3, 2.7-2.10): a `FocusPolicy` for `crawler.engine.Crawler`.

Pages are classified top-down by the taxonomy's topic model; a page in a foreign language (stopword check)
is rejected. Links of an accepted page join its topic's queue with the priority of the chosen strategy;
links of a rejected page are tunnelled in the queue they came from, with the priority of the last accepted
page decayed by `tunnel_decay` per hop, up to `tunnel_depth` hops.

Learning phase (the first `learning_pages` pages): sharp focus (a page counts only if it lands in the topic
of the queue it came from) and only the seeds' hosts; links to other hosts are parked. Harvesting phase:
soft focus (any topic) and every host, with the parked links released. The learning phase also ends when
the crawl has nothing left to serve before `learning_pages` (the seeds' hosts hold fewer pages, or what is
left belongs to paused topics): parked links would otherwise never be fetched.

Every `retrain_every` pages (and at the phase switch) the re-organisation step runs: per topic, HITS in
the Bharat-Henzinger form over the topic's pages and their neighbours picks archetypes (thesis 1.7's
relaxed rule), the topic model is retrained on bookmarks plus archetypes (feature selection included),
and the outgoing links of the best hubs move to the front of the queue.

The settings (`FocusSettings`, the `[focus]` section of the node's config) live in `crawler.focus_settings`.

Thread use: the engine calls `score_pages` in a worker thread while nothing else touches the repository
(re-organisation reads and writes it there), and `link_priority` / `link_topic` on the event loop, where
frontier changes decided by the re-organisation are applied.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from crawler.focus_settings import STRATEGIES as STRATEGIES  # re-exported: callers import it from here
from crawler.focus_settings import FocusSettings as FocusSettings
from crawler.frontier import Frontier, FrontierEntry, url_key
from crawler.language import LanguageCheck
from crawler.linkanalysis import LinkGraph, hits, select_archetypes, top_by
from crawler.parse import Link
from crawler.policy import CrawledPage, PageVerdict
from crawler.repository import Repository
from crawler.taxonomy import (
    ARCHETYPE,
    FETCHED,
    POSITIVE,
    Taxonomy,
    TrainingDocument,
    add_training_documents,
    ensure_schema,
)
from crawler.urls import host_of
from metamodels.features import FeatureConfig, Featurizer
from metamodels.memo import TrainingMemo
from metamodels.topic_model import (
    TopicModel,
    TopicModelSettings,
    topic_prefixes,
    train_topic_model_from_texts,
)

LEARNING, HARVESTING = "learning", "harvesting"
SEED_PRIORITY = 1e9  # bookmarks first
HUB_PRIORITY = 1e6  # hubs' links to the front, behind the bookmarks
MIN_PRIORITY = 1e-6
PARKED_LIMIT = 100_000
BEYOND_TUNNEL_LIMIT = 100_000  # distinct links past the tunnel depth remembered (beyond: "at least")


def strategy_priority(
    strategy: str, depth: int, confidence: float, bookmark_confidence: float = 1.0
) -> float:
    """prio(l) of a link found on a page at `depth` (seeds: 0) classified with `confidence` (thesis 2.7)."""
    level = depth + 1
    conf = max(confidence, MIN_PRIORITY)
    if strategy == "bfs":
        return 1.0 / level
    if strategy == "dfs":
        return float(level)
    if strategy == "classifier":
        return conf
    if strategy == "classifier_bfs":
        return conf / level
    if strategy == "classifier_dfs":
        return conf * level
    if strategy == "bookmark":
        return max(bookmark_confidence, MIN_PRIORITY) / level
    raise ValueError(f"unknown strategy {strategy!r}")


def inherited_priority(entry: FrontierEntry, strategy: str) -> float:
    """What a rejected page passes on to the links it tunnels: its own priority, that of the last accepted
    page on its path decayed, unless that was a boost (a bookmark's, or a hub's links moved to the front):
    a boost says when to fetch the page, not how good its path is, and passed on it put every page a
    couple of tunnelled hops from a hub ahead of every accepted page's links. A boosted page passes on
    what an unjudged link at its depth gets. A page queued behind the rest after a failed request (a
    negative priority, `Crawler._waits_for_its_host`) does not pass that on: it says nothing of its path."""
    if entry.depth > 0 and entry.priority < HUB_PRIORITY:
        return max(entry.priority, 0.0)
    return strategy_priority(strategy, entry.depth, 1.0)


def related(topic: str | None, other: str | None) -> bool:
    """Same topic, or one inside the other's subtree."""
    if topic is None or other is None:
        return False
    return topic == other or topic.startswith(other + "/") or other.startswith(topic + "/")


def in_subtree(topic: str | None, ancestor: str) -> bool:
    """`topic` is `ancestor` or one of its descendants."""
    return topic is not None and (topic == ancestor or topic.startswith(ancestor + "/"))


@dataclass
class TopicCounter:
    fetched: int = 0
    accepted: int = 0
    confidence: float = 0.0

    @property
    def harvest_rate(self) -> float:
        return self.accepted / self.fetched if self.fetched else 0.0

    @property
    def mean_confidence(self) -> float:
        return self.confidence / self.fetched if self.fetched else 0.0


@dataclass
class _Pending:
    """Frontier changes decided in the worker thread, applied on the event loop."""

    boost: set[str] = field(default_factory=set)
    release_parked: bool = False
    requeue: list[FrontierEntry] = field(default_factory=list)


class TopicFocus:
    """The focus policy. `attach(crawler)` before `crawler.run`; `seeds()` gives the bookmarks per topic."""

    def __init__(
        self,
        taxonomy: Taxonomy,
        settings: FocusSettings | None = None,
        feature_config: FeatureConfig | None = None,
        model_settings: TopicModelSettings | None = None,
        indicators: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        self.settings = settings or FocusSettings()
        self.taxonomy = taxonomy
        self.indicators = dict(indicators or {})  # topic -> the user's keywords a page of it must hold
        self.featurizer = Featurizer(feature_config or FeatureConfig())
        s = self.settings
        self.model_settings = model_settings or TopicModelSettings(
            threshold=s.threshold, min_topic_features=s.min_topic_features, balanced=s.balanced_classes
        )
        self.language = LanguageCheck(s.language, s.min_language_score) if s.language else None
        self.archetypes: dict[str, dict[str, str]] = {}  # topic -> url -> text
        # the last training's parts: a re-organisation retrains only the topics whose training data changed
        self.training_memo = TrainingMemo()
        self.model = self._train()
        self.seed_hosts = {host_of(d.url) for d in taxonomy.documents if d.url and d.polarity == POSITIVE}
        self.phase = LEARNING if s.learning_pages > 0 else HARVESTING
        self.counters: dict[str | None, TopicCounter] = {}
        self.recent: dict[str | None, TopicCounter] = {}
        self.reorganisations = 0
        self.language_rejections = 0
        self._scored = 0
        self._since_reorganisation = 0
        self._origin_conf: dict[str, float] = {}
        self._parked: list[FrontierEntry] = []
        self._beyond_tunnel: set[int] = set()  # url keys of links given up at the tunnel depth
        self._beyond_tunnel_overflow = False
        self._ended_early = False  # the learning phase ended on a dry frontier: retrain at the next batch
        self._pending = _Pending()
        self.crawler: Any = None
        self.repo: Repository | None = None

    # -- set-up -------------------------------------------------------------------------------------------
    def attach(self, crawler: Any) -> None:
        """Focus `crawler`'s crawl. The learning phase counts the pages the crawler's repository already
        holds: a restarted node (or one that imported topics) went back to learning for `learning_pages`
        more, keeping to its seeds' hosts again however far its crawl had gone."""
        self.crawler = crawler
        self.repo = crawler.repo
        ensure_schema(crawler.repo)
        stats = getattr(crawler, "stats", None)
        self._scored = max(self._scored, int(getattr(stats, "total_pages", 0)))
        if self.phase == LEARNING and self._scored >= self.settings.learning_pages:
            self.phase = HARVESTING

    def seeds(self) -> dict[str, list[str]]:
        """Topic -> URLs of its bookmarks, the crawl's start points."""
        result: dict[str, list[str]] = {}
        for d in self.taxonomy.documents:
            if d.url and d.polarity == POSITIVE:
                result.setdefault(d.topic, []).append(d.url)
        return result

    def _training_texts(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        positives, negatives = self.taxonomy.training_texts()
        for topic, docs in self.archetypes.items():
            positives.setdefault(topic, []).extend(docs.values())
        known = set(positives)
        negatives = {t: v for t, v in negatives.items() if t == "" or t in known}
        return positives, negatives

    def _train(self) -> TopicModel:
        positives, negatives = self._training_texts()
        if not positives:
            raise ValueError("no training document has text: fetch the bookmarks first (topics import)")
        topics = {prefix for topic in positives for prefix in topic_prefixes(topic)}
        indicators = {t: words for t, words in self.indicators.items() if t in topics}
        return train_topic_model_from_texts(
            self.featurizer,
            positives,
            negatives,
            settings=self.model_settings,
            indicators=indicators,
            memo=self.training_memo,
        )

    def set_indicators(self, indicators: Mapping[str, Sequence[str]]) -> None:
        """New indicator keywords: the topic model is trained again on the same documents (call while the
        crawl is held: pages being scored use the model)."""
        self.indicators = dict(indicators)
        self.model = self._train()

    # -- the engine's hooks -------------------------------------------------------------------------------
    def score_pages(self, pages: Sequence[CrawledPage]) -> list[PageVerdict]:
        self._maybe_reorganise()
        texts = [f"{p.parsed.title}\n{p.parsed.text}" for p in pages]
        verdicts = self.model.classify_texts(texts)
        result = []
        for page, text, verdict in zip(pages, texts, verdicts, strict=True):
            accepted = verdict.accepted
            if accepted and self.language is not None and not self.language.accepts(text):
                accepted = False
                self.language_rejections += 1
            queue = page.entry.topic
            if accepted and self._off_queue(verdict.topic, queue):
                accepted = False  # sharp focus
            if page.depth == 0:
                self._origin_conf[page.entry.url] = max(verdict.confidence, MIN_PRIORITY)
            for counters in (self.counters, self.recent):
                c = counters.setdefault(queue, TopicCounter())
                c.fetched += 1
                c.accepted += int(accepted and (queue is None or related(verdict.topic, queue)))
                c.confidence += verdict.confidence if accepted else 0.0
            result.append(PageVerdict(verdict.topic if accepted else None, verdict.confidence, accepted))
        self._scored += len(pages)
        self._since_reorganisation += len(pages)
        return result

    def score_entries(self, feed: CrawledPage, texts: Sequence[str]) -> list[PageVerdict]:
        """A feed's entries judged by their words (title and summary) as pages are, with nothing counted:
        an entry is the promise of a page, not a page. In the learning phase an entry counts only in the
        feed's queue's topic, as a page does."""
        if not self.settings.judge_feed_entries:
            return [PageVerdict(None, 0.0, False) for _ in texts]
        queue = feed.entry.topic
        return [
            PageVerdict(v.topic, v.confidence, True)
            if v.accepted and not self._off_queue(v.topic, queue)
            else PageVerdict(None, v.confidence, False)
            for v in self.model.classify_texts(list(texts))
        ]

    def _off_queue(self, topic: str | None, queue: str | None) -> bool:
        """Sharp focus (the learning phase): a page counts only in the topic of the queue it came from."""
        return self.phase == LEARNING and queue is not None and not related(topic, queue)

    def link_topic(self, page: CrawledPage, verdict: PageVerdict) -> str | None:
        return verdict.topic if verdict.accepted else page.entry.topic

    def link_priority(self, page: CrawledPage, link: Link, verdict: PageVerdict) -> float | None:
        self._apply_pending()
        entry = page.entry
        s = self.settings
        if verdict.accepted:
            origin = entry.origin or entry.url
            priority = strategy_priority(
                s.strategy, entry.depth, verdict.confidence, self._origin_conf.get(origin, 1.0)
            )
        else:
            if entry.tunnel + 1 > s.tunnel_depth:
                if len(self._beyond_tunnel) < BEYOND_TUNNEL_LIMIT:
                    self._beyond_tunnel.add(url_key(link.url))
                else:
                    self._beyond_tunnel_overflow = True
                return None
            priority = inherited_priority(entry, s.strategy) * s.tunnel_decay
        if self.phase == LEARNING and host_of(link.url) not in self.seed_hosts:
            if len(self._parked) < PARKED_LIMIT:
                self._parked.append(
                    FrontierEntry(
                        url=link.url,
                        host=host_of(link.url),
                        priority=priority,
                        depth=entry.depth + 1,
                        topic=self.link_topic(page, verdict),
                        tunnel=0 if verdict.accepted else entry.tunnel + 1,
                        source=page.url,
                        origin=entry.origin or entry.url,
                    )
                )
            return None
        return priority

    # -- re-organisation ----------------------------------------------------------------------------------
    def _maybe_reorganise(self) -> None:
        s = self.settings
        switch = self.phase == LEARNING and self._scored >= s.learning_pages
        switch, self._ended_early = switch or self._ended_early, False
        due = s.retrain and self._since_reorganisation >= s.retrain_every
        if not (switch or due):
            return
        if s.retrain and self.repo is not None:
            self.reorganise(learning_done=switch)
        if switch:
            self.phase = HARVESTING
            self._pending.release_parked = True
        self._since_reorganisation = 0

    def reorganise(self, learning_done: bool = False) -> dict[str, int]:
        """Link analysis, archetypes, retraining, hubs (thesis 2.10); returns archetypes added per topic."""
        assert self.repo is not None
        docs, graph = _crawl_graph(self.repo)
        added: dict[str, int] = {}
        new_docs: list[TrainingDocument] = []
        boost: set[str] = set()
        if docs:
            index = {doc_id: i for i, doc_id in enumerate(graph.ids)}
            topic_of = np.array([docs[i]["topic"] or "" for i in graph.ids], dtype=object)
            accepted = np.array([bool(docs[i]["accepted"]) for i in graph.ids])
            confidence = np.array([float(docs[i]["confidence"] or 0.0) for i in graph.ids])
            seeds_by_topic = self.seeds()
            url_index = {docs[i]["url"]: index[i] for i in graph.ids}
            for topic in self.model.topics:
                members = np.flatnonzero(accepted & (topic_of == topic))
                if members.size == 0:
                    continue
                sub = _neighbourhood(graph, members)
                scores = hits(sub)
                local = {int(node): k for k, node in enumerate(sub.ids)}
                authority = np.zeros(graph.size)
                hub = np.zeros(graph.size)
                authority[list(local)] = scores.authority
                hub[list(local)] = scores.hub
                seeds = [url_index[u] for u in seeds_by_topic.get(topic, []) if u in url_index]
                mean_conf = float(confidence[seeds].mean()) if seeds else 0.0
                mean_auth = float(authority[seeds].mean()) if seeds else 0.0
                chosen = select_archetypes(
                    authority,
                    hub,
                    confidence,
                    members,
                    mean_conf,
                    mean_auth,
                    self.settings.n_auth,
                    self.settings.n_conf,
                    self.settings.n_hub,
                    hub_candidates=np.array(list(local), dtype=np.int64),
                )
                picked = list(chosen.chosen)
                if learning_done and len(seeds_by_topic.get(topic, [])) <= self.settings.sparse_seeds:
                    picked = top_by(members, confidence, self.settings.n_conf).tolist()
                kept = self.archetypes.setdefault(topic, {})
                for i in picked:
                    doc = docs[graph.ids[i]]
                    if doc["url"] in kept or len(kept) >= self.settings.max_archetypes or not doc["text"]:
                        continue
                    kept[doc["url"]] = f"{doc['title']}\n{doc['text']}"
                    new_docs.append(
                        TrainingDocument(
                            topic,
                            POSITIVE,
                            url=doc["url"],
                            title=doc["title"],
                            text=doc["text"],
                            status=FETCHED,
                            source=ARCHETYPE,
                        )
                    )
                    added[topic] = added.get(topic, 0) + 1
                hub_ids = [graph.ids[i] for i in chosen.hubs]
                boost.update(_out_links(self.repo, hub_ids))
        if new_docs:
            add_training_documents(self.repo, new_docs)
            self.model = self._train()
            if self.settings.reconsider:
                self._pending.requeue.extend(self.reconsider(docs))
        self._pending.boost |= boost
        self.reorganisations += 1
        self.record_stats()
        return added

    def reconsider(self, docs: dict[int, dict[str, Any]]) -> list[FrontierEntry]:
        """Classify the rejected pages again with the retrained model (thesis 1.7: documents "can optionally
        be reconsidered"); store the new verdicts and return the out-links of the pages now accepted."""
        assert self.repo is not None
        rejected = [d for d in docs.values() if not d["accepted"] and d["text"]]
        if not rejected:
            return []
        verdicts = self.model.classify_texts([f"{d['title']}\n{d['text']}" for d in rejected])
        if self.language is not None:
            verdicts = [
                v if self.language.accepts(d["text"]) else None
                for d, v in zip(rejected, verdicts, strict=True)
            ]
        now_accepted = [
            (d, v) for d, v in zip(rejected, verdicts, strict=True) if v is not None and v.accepted
        ]
        if not now_accepted:
            return []
        with self.repo.transaction() as db:
            db.conn.executemany(
                "UPDATE documents SET topic = ?, confidence = ?, accepted = 1 WHERE id = ?",
                [(v.topic, v.confidence, d["id"]) for d, v in now_accepted],
            )
        entries = []
        for d, v in now_accepted:
            priority = strategy_priority(self.settings.strategy, d["depth"], v.confidence)
            for url in sorted(_out_links(self.repo, [d["id"]])):  # a set's order changes between processes
                entries.append(
                    FrontierEntry(
                        url=url,
                        host=host_of(url),
                        priority=priority,
                        depth=d["depth"] + 1,
                        topic=v.topic,
                        source=d["final_url"],
                        origin=d["url"],
                    )
                )
        return entries

    def beyond_tunnel(self) -> tuple[int, bool]:
        """Links of rejected pages given up at `tunnel_depth` and never queued another way since the
        policy started, and whether there may be more than that (the remembered set is bounded): what a
        deeper tunnel would add when a crawl ends with its budget left. Links queued since are forgotten."""
        if self.crawler is not None:
            self._beyond_tunnel = self.crawler.frontier.unseen_keys(self._beyond_tunnel)
        return len(self._beyond_tunnel), self._beyond_tunnel_overflow

    def frontier_dry(self) -> bool:
        """The engine's hook when nothing can be served: in the learning phase with links parked, the phase
        ends here (the retraining of its switch runs with the next batch of pages) and they are queued.
        Pausing the one topic whose queue held the seeds' hosts' pages had stopped every topic's crawl, and
        seeds on small sites ended a crawl with other sites' links never fetched. True when it queued any."""
        if self.phase != LEARNING or not self._parked or self.crawler is None:
            return False
        self.phase = HARVESTING
        self._ended_early = True
        frontier = self.crawler.frontier
        parked, self._parked = self._parked, []
        return sum(frontier.add(entry) for entry in parked if not frontier.seen(entry.url)) > 0

    def _apply_pending(self) -> None:
        """On the event loop: hub links to the front, parked links released (after the phase switch)."""
        if self.crawler is None:
            return
        pending, self._pending = self._pending, _Pending()
        frontier = self.crawler.frontier
        if pending.boost:
            frontier.reprioritize(pending.boost, HUB_PRIORITY, raise_only=True)
        if pending.release_parked:
            parked, self._parked = self._parked, []
            for entry in parked:
                if not frontier.seen(entry.url):
                    frontier.add(entry)
        for entry in pending.requeue:
            if self.phase == LEARNING and entry.host not in self.seed_hosts:
                continue
            if not frontier.seen(entry.url) and self.crawler.allows(entry.url):
                frontier.add(entry)

    # -- statistics ---------------------------------------------------------------------------------------
    def record_stats(self) -> None:
        """Store the harvest rate of each topic queue since the last call (call off concurrent writes)."""
        if self.repo is None or not self.recent:
            return
        now = time.time()
        rows = [
            (now, topic or "", c.fetched, c.accepted, c.harvest_rate, c.mean_confidence)
            for topic, c in sorted(self.recent.items(), key=lambda item: item[0] or "")
        ]
        with self.repo.transaction() as db:
            db.conn.executemany(
                "INSERT INTO topic_stats (at, topic, fetched, accepted, harvest_rate, mean_confidence) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )
        self.recent = {}

    def progress_text(self) -> str:
        """Harvest rate per topic queue, for the crawl's progress line."""
        parts = [
            f"{topic.rpartition('/')[2]} {c.harvest_rate:.2f} ({c.fetched})"
            for topic, c in sorted(self.counters.items(), key=lambda item: item[0] or "")
            if topic is not None
        ]
        return f"{self.phase}: harvest " + ", ".join(parts) if parts else self.phase


def boost_entries(frontier: Frontier, urls: set[str], priority: float) -> int:
    """Raise queued entries of `urls` to `priority` (never lower them); returns how many moved."""
    return frontier.reprioritize(urls, priority, raise_only=True)


def _crawl_graph(repo: Repository) -> tuple[dict[int, dict[str, Any]], LinkGraph]:
    """The documents this crawl fetched (non-duplicates) and their link graph, from the repository. Rows
    other peers sent (`origin` set) are left out: they hold a preview rather than the page, and a peer's
    verdict and confidence rather than this node's, and the most confident of them had become archetypes
    (on devweb runs of 4 nodes, up to 42 of a node's 53; on WebKB 16 of 25), so nodes trained on snippets
    of their peers' pages."""
    rows = repo.db.execute(
        "SELECT id, url, final_url, host, topic, confidence, accepted, title, text, depth FROM documents "
        "WHERE duplicate_of IS NULL AND origin IS NULL"
    ).fetchall()
    names = ("id", "url", "final_url", "host", "topic", "confidence", "accepted", "title", "text", "depth")
    docs = {row[0]: dict(zip(names, row, strict=True)) for row in rows}
    by_url: dict[str, int] = {}
    for doc_id, doc in docs.items():
        by_url.setdefault(doc["final_url"], doc_id)
        by_url[doc["url"]] = doc_id
    edges = [
        (source, by_url[target])
        for source, target in repo.db.execute("SELECT source_id, target_url FROM links WHERE kind = 'a'")
        if target in by_url and source in docs
    ]
    graph = LinkGraph.build({doc_id: doc["host"] for doc_id, doc in docs.items()}, edges)
    return docs, graph


def _neighbourhood(graph: LinkGraph, members: np.ndarray) -> LinkGraph:
    """The base set of thesis 1.5: the topic's pages plus their successors and predecessors."""
    keep = np.zeros(graph.size, dtype=bool)
    keep[members] = True
    inside = keep.copy()
    keep[graph.targets[inside[graph.sources]]] = True
    keep[graph.sources[inside[graph.targets]]] = True
    nodes = np.flatnonzero(keep)
    hosts = {int(i): graph.hosts[i] for i in nodes}
    mask = keep[graph.sources] & keep[graph.targets]
    edges = list(zip(graph.sources[mask].tolist(), graph.targets[mask].tolist(), strict=True))
    return LinkGraph.build(hosts, edges)  # its node ids are indices into `graph`


def _out_links(repo: Repository, doc_ids: list[int]) -> set[str]:
    if not doc_ids:
        return set()
    marks = ", ".join("?" * len(doc_ids))
    return {
        row[0]
        for row in repo.db.execute(
            f"SELECT target_url FROM links WHERE kind = 'a' AND source_id IN ({marks})", doc_ids
        )
    }


def focus_progress(policy: Any) -> str:
    text = getattr(policy, "progress_text", None)
    return text() if text is not None else ""
