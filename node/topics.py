"""A running node's topics: imported from bookmarks, focused on by the crawl, given indicator keywords,
and listed with the quality of their classifiers.

`Topics` is the service's `topics`. The crawl's focus (`crawler.focus.TopicFocus`, with the apprentice
when `crawler.apprentice_enabled`) is trained on the stored taxonomy off the event loop, and attached while
the crawl is held, so the frontier has one writer. A topic's quality is its meta-classifier's accuracy on
held-out documents (`node.heldout_cache.HeldOutCurves`), measured in the background.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from crawler.errors import TaxonomyError
from crawler.focus import SEED_PRIORITY
from crawler.repository import Repository
from crawler.taxonomy import TOPICS_LISTED_API, clean_keywords, load_keywords, save_keywords, unknown_topic
from node.errors import NodeServiceError, not_found, shown
from node.heldout import FOLDS, accuracy_at
from node.heldout_cache import HeldOutCurves
from node.metrics import RUNNING
from node.stored_state import harvest_counts, harvest_rate, subtopic_pattern, table_exists, topic_keys
from node.wording import counted

if TYPE_CHECKING:
    from node.service import NodeService

log = logging.getLogger(__name__)


class Topics:
    """The topics of one node (`NodeService.topics`)."""

    def __init__(self, service: NodeService) -> None:
        self.service = service
        self.held_out = HeldOutCurves(service.data.repository, self._featurizer)

    # -- API: the topics and their quality ----------------------------------------------------------------
    async def keys(self) -> list[str]:
        return await self.service.db(topic_keys)

    async def require(self, key: str) -> None:
        """404 naming where the topic keys are listed, for the CLI's users and the API's alike."""
        known = await self.keys()
        if key not in known:
            raise not_found(unknown_topic(key, known, listed=TOPICS_LISTED_API))

    async def listing(self) -> dict[str, Any]:
        service = self.service
        rows = await service.db(topic_rows)
        for row in rows:
            row["crawl"] = service.crawl_state(row["key"])
        if service.cooperation is not None and hasattr(service.cooperation, "topic_overview"):
            from node.cooperation import store

            overview = await service.cooperation.topic_overview()
            built = await service.db(store.meta_topics)
            for row in rows:
                known = overview.get(row["key"], {})
                if known.get("model_version") is not None:
                    row["model_version"] = known["model_version"]
                row["quality"] = self._held_out_quality(row["key"], known.get("meta"), built)
        else:  # the held-out accuracy is a meta-classifier's, and those are built with peers
            why = "no meta-classifier: " + (
                "this node runs offline, and meta-classifiers are built with peers"
                if service.network is None
                else "the cooperation layer did not start (see node.log)"
            )
            for row in rows:
                row["quality"] = {"accuracy": None, "measured_on": "", "why": why}
        return {"topics": rows}

    async def meta(self, topic: str) -> dict[str, Any]:
        """The topic's meta-classifier (cooperation layer) with its loss/accuracy curve measured on held-out
        documents beside the one on its training documents."""
        answer = await self.service.cooperate("meta", topic)
        answer["curve_on"] = "training documents: the local model trained on them, so it is optimistic"
        answer["held_out"] = await self.held_out.measure(topic, await self._curve_key(topic, answer))
        return answer

    def _featurizer(self) -> Any:
        return getattr(self.service.cooperation, "featurizer", None)

    async def _curve_key(self, topic: str, meta: dict[str, Any]) -> str:
        """What a held-out curve depends on: the topic's meta-classifier, and which rival topics have one."""
        from node.cooperation import store

        # a rival's new meta-classifier changes the curve too
        return curve_key(
            meta.get("models"), meta.get("build"), meta.get("curve"), await self.service.db(store.meta_topics)
        )

    def _held_out_quality(self, topic: str, meta: dict[str, Any] | None, built: Any) -> dict[str, Any]:
        """A topic's classifier quality: its meta-classifier's held-out accuracy at the loss set, or, while
        that is being measured in the background, why it is missing (`measuring`: ask again soon). `meta`:
        the topic's meta summary (`store.topic_overview`), `built`: `store.meta_topics`."""
        if meta is None:
            why = "no meta-classifier yet: build one (Meta screen: b; `topicswarm meta build`)"
            return {"accuracy": None, "measured_on": "", "why": why}
        key = curve_key(meta["members"], meta["build"], meta["curve"], built)
        held = self.held_out.ready(topic, key)
        if held is None:
            if self.service.nursery is not None:
                self.held_out.start(self.service.nursery, topic, key)
            why = f"being measured: {FOLDS}-fold cross-validation of its meta-classifier, shown when done"
            return {"accuracy": None, "measured_on": "", "why": why, "measuring": True}
        accuracy = accuracy_at(held["curve"], float(meta.get("loss") or 0.0))
        measured_on = (
            f"{held['folds']}-fold cross-validation on {held['documents']} labelled documents "
            f"at loss {float(meta.get('loss') or 0.0):.2f}"
        )
        return {
            "accuracy": accuracy,
            "measured_on": measured_on if accuracy is not None else "",
            "why": held["why"] if accuracy is None else "",
        }

    # -- API: import and keywords -------------------------------------------------------------------------
    async def import_taxonomy(
        self, bookmarks_html: str | None = None, path: str | None = None, fetch: bool = True
    ) -> dict[str, Any]:
        """Read a taxonomy (in a worker thread: a folder tree or a large file would hold the node's loop),
        fetch its bookmarked pages, store it, and seed the crawl from its bookmarks. With `fetch` False the
        answer comes before the pages are fetched: they are fetched in the background, and the crawl
        focuses on the topics once they are."""
        from crawler.taxonomy import FAILED, failure_counts, parse_bookmarks, read_taxonomy

        service = self.service
        if bookmarks_html is not None:
            read = partial(parse_bookmarks, bookmarks_html, name="bookmarks_html")
        elif path is not None:
            if not Path(path).is_absolute():
                raise NodeServiceError("bad_request", f"give the bookmarks' path in full, not {shown(path)}")
            read = partial(read_taxonomy, Path(path))
        else:
            raise NodeServiceError("bad_request", 'send {"bookmarks_html": TEXT} or {"path": PATH}')
        try:
            taxonomy = await trio.to_thread.run_sync(read)
        except (TaxonomyError, OSError) as exc:
            raise NodeServiceError("bad_topics", str(exc)) from exc
        if fetch:
            taxonomy = await self.fetch_training_pages(taxonomy)
        from crawler.taxonomy import store_taxonomy

        taxonomy, renamed = await service.db(store_taxonomy, taxonomy)
        await service.adopt_topics(taxonomy.topics)
        seeds = 0
        await self.refresh_focus()
        for topic, urls in taxonomy_seeds(taxonomy).items():
            seeds += await service.add_seeds(urls, topic=topic, priority=SEED_PRIORITY)
        if service.cooperation is not None and hasattr(service.cooperation, "topics_changed"):
            await service.cooperation.topics_changed(list(taxonomy.topics))
        if not fetch:
            assert service.nursery is not None  # the API serves inside `run`
            service.nursery.start_soon(self.resume_stored)
        service.poke()
        imported = f"imported {counted(len(taxonomy.topics), 'topic')}, {counted(seeds, 'seed')}"
        service.publish("log", {"message": imported})
        return {
            "imported": list(taxonomy.topics),
            "seeds": seeds,
            "documents": len(taxonomy.documents),
            "failed": sum(1 for d in taxonomy.documents if d.status == FAILED),
            "failed_by_error": failure_counts(taxonomy),
            "skipped": list(taxonomy.skipped),
            "renamed": renamed,
        }

    async def set_keywords(self, key: str, keywords: Sequence[str]) -> dict[str, Any]:
        try:
            cleaned = clean_keywords(keywords)
        except TaxonomyError as exc:
            raise NodeServiceError("bad_request", str(exc)) from exc
        await self.require(key)
        await self.service.db(save_keywords, key, cleaned)
        await self._refocus_indicators()
        topics = (await self.listing())["topics"]
        return next(t for t in topics if t["key"] == key)

    async def fetch_training_pages(self, taxonomy: Any) -> Any:
        from crawler.fetch import Fetcher
        from crawler.taxonomy import fetch_documents

        settings = self.service.crawl_settings
        fetcher = Fetcher(settings)
        try:
            return await fetch_documents(taxonomy, fetcher, concurrency=settings.concurrent_requests)
        finally:
            await fetcher.aclose()

    async def resume_stored(self) -> None:
        """Topics imported while no node ran (`topicswarm topics import` before `node run`) are crawled
        too: bookmarks stored unfetched (`--no-fetch`) are fetched and the topics' bookmarks are queued as
        seeds (URLs seen before are skipped, so a restart queues nothing twice)."""
        from crawler.taxonomy import PENDING, load_taxonomy, store_taxonomy

        service = self.service
        taxonomy = await service.db(load_taxonomy)
        if taxonomy is None:
            return
        if any(d.status == PENDING for d in taxonomy.documents):
            taxonomy = await self.fetch_training_pages(taxonomy)
            await service.db(store_taxonomy, taxonomy)
            await self.refresh_focus()
        seeds = taxonomy_seeds(taxonomy)
        added = 0
        for topic, urls in seeds.items():
            added += await service.add_seeds(urls, topic=topic, priority=SEED_PRIORITY)
        if added:
            log.info("queued %d bookmarks of the stored topics as seeds", added)
        service.poke()

    # -- the crawl's focus --------------------------------------------------------------------------------
    def focus_policy(self, repo: Repository) -> Any:
        """The focus loop (`crawler.focus.TopicFocus`, `[focus]` settings) trained on the imported taxonomy,
        with the apprentice setting link priorities when `crawler.apprentice_enabled`; None without one."""
        from crawler.focus import TopicFocus
        from crawler.taxonomy import PENDING, load_taxonomy

        taxonomy = load_taxonomy(repo)
        if taxonomy is None:
            return None
        try:
            focus = TopicFocus(taxonomy, self.service.config.focus, indicators=load_keywords(repo))
        except ValueError as exc:  # no bookmark could be fetched: nothing to train on
            if any(d.status == PENDING for d in taxonomy.documents):  # `resume_stored` fetches them
                log.info("the bookmarks are fetched first: the crawl focuses once they are")
            else:
                log.warning("crawling without focus: %s", exc)
            return None
        if not self.service.crawl_settings.apprentice_enabled:
            return focus
        from crawler.apprentice_focus import ApprenticeFocus

        return ApprenticeFocus(focus)

    async def refresh_focus(self) -> None:
        """At start and after an import: the crawler focuses on the stored topics (trained off the loop)."""
        service = self.service
        assert service.crawler is not None
        policy = await service.db(self.focus_policy)
        if policy is not None:
            async with await service.hold_crawl():
                policy.attach(service.crawler)
                service.crawler.policy = policy

    async def _refocus_indicators(self) -> None:
        """The crawl's topic model trained again with the topics' indicator keywords as stored now: pages
        classified from then on need them (the crawl waits while it trains)."""
        service = self.service
        policy = service.crawler.policy if service.crawler is not None else None
        if not hasattr(policy, "set_indicators"):
            return
        indicators = await service.db(load_keywords)
        async with await service.hold_crawl():
            await trio.to_thread.run_sync(policy.set_indicators, indicators)

    async def record_focus_stats(self) -> None:
        """Harvest rates of the focus loop into topic_stats, on the engine's connection: called after a run
        ends and before the engine counts as idle, so no frontier edit uses that connection meanwhile."""
        crawler = self.service.crawler
        assert crawler is not None
        record = getattr(crawler.policy, "record_stats", None)
        if record is not None:
            await trio.to_thread.run_sync(record)


def curve_key(members: Any, build: Any, curve: Any, built: Any) -> str:
    """The key a held-out curve is kept under: the meta-classifier it measured (its members, build and
    training curve) and which topics have one (a rival's new meta-classifier changes the curve too)."""
    return json.dumps([members, build, curve, built], sort_keys=True)


def taxonomy_seeds(taxonomy: Any) -> dict[str, list[str]]:
    """Topic -> URLs of its bookmarks (positive examples), the crawl's start points."""
    from crawler.taxonomy import POSITIVE

    by_topic: dict[str, list[str]] = {}
    for doc in taxonomy.documents:
        if doc.polarity == POSITIVE and doc.url:
            by_topic.setdefault(doc.topic, []).append(doc.url)
    return by_topic


def topic_rows(repo: Repository) -> list[dict[str, Any]]:
    """The API's topic list: the taxonomy with local/pooled counts, harvest rate (with the pages it is of,
    `fetched`: a rate of 0 over none measures nothing), keywords."""
    if not table_exists(repo, "topics"):
        return []
    keywords = load_keywords(repo)
    counts = harvest_counts(repo)
    rows = []
    for key, name, parent in repo.db.execute("SELECT key, name, parent FROM topics ORDER BY key").fetchall():
        local, pooled = repo.db.execute(
            "SELECT coalesce(sum(origin IS NULL), 0), coalesce(sum(origin IS NOT NULL), 0) FROM documents "
            "WHERE accepted = 1 AND (topic = ? OR topic LIKE ? ESCAPE '\\')",
            [key, subtopic_pattern(key)],
        ).fetchone()
        rows.append(
            {
                "key": key,
                "name": name,
                "parent": parent or None,
                "local": int(local),
                "pooled": int(pooled),
                "harvest_rate": harvest_rate(*counts.get(key, (0, 0))),
                "fetched": counts.get(key, (0, 0))[1],
                "quality": {"accuracy": None},
                "keywords": list(keywords.get(key, ())),
                "crawl": RUNNING,
                "model_version": None,
            }
        )
    return rows
