"""Pooled results (thesis 3.3): a node serves its own crawl results of a topic to the topic's community and
pulls theirs into its repository by cursor, marked with their origin, then seeds its frontier from the best.

Traffic: a peer is offered only the results the restrictive filter keeps (`share_kept_only`), never its own;
a pull sends a Bloom filter of the URLs held (`held_filter_fp_rate`), and after a pull that brought nothing
it first probes whether there is anything new; peers pull each other in turns; a peer with nothing new is
asked less and less often (`Backoff`).
"""

from __future__ import annotations

import logging
import math
import time
from typing import TYPE_CHECKING

from crawler.repository import Repository
from node.cooperation import store
from node.cooperation.backoff import Backoff
from node.cooperation.part import LayerPart
from node.cooperation.previews import result_previews
from node.stored_state import topic_keys
from p2p.errors import P2PError, WireError
from p2p.message_limits import MAX_TITLE_LEN
from p2p.messages.results import CrawlResult, HeldFilter, ResultSyncRequest, ResultSyncResponse
from p2p.protocols import ResultPage
from p2p.signing import sign_results

if TYPE_CHECKING:
    from node.cooperation.service import Cooperation

log = logging.getLogger(__name__)

CONFIDENCE_STEP = 2.0**-12
"""A shared result's confidence travels in steps of 1/4096 (and its fetch time in whole seconds): a float64
with a short mantissa ends in zero bytes the frame compression removes, about 9 of a result's 200 bytes."""

HOLDS_EVERYTHING = HeldFilter(b"\xff", 1)
"""A held-URL filter that claims every URL: a result sync with it sends no result, only the cursor."""

HELD_SCAN = 4
"""A result page with a held-URL filter looks at up to this many times its limit of documents to fill it."""


class ResultSync(LayerPart):
    """The pooled-results half of one node's cooperation layer (`Cooperation.results`)."""

    def __init__(self, layer: Cooperation) -> None:
        super().__init__(layer)
        self._synced: dict[tuple[str, str], Backoff] = {}  # (peer, topic) -> when to ask again
        self._pulled: dict[tuple[str, str], int] = {}  # (peer, topic) -> round of the last pull

    # -- serving --------------------------------------------------------------------------------------------
    async def answer(self, peer: str, request: ResultSyncRequest) -> list[ResultSyncResponse]:
        """The result protocol's answer, served here rather than through the p2p layer's result provider
        (which is not told who asks) so that the asking peer's own results are not sent back to it."""
        page = await self.serve(request.topic, request.cursor, request.limit, peer, request.held)
        return [ResultSyncResponse(request.topic, tuple(page.items), page.next_cursor, page.more)]

    async def serve(
        self, topic: str, cursor: int, limit: int, peer: str | None = None, held: HeldFilter | None = None
    ) -> ResultPage:
        """This node's own results of a topic after the cursor, signed, previews cut to `preview_chars`;
        without those the asking peer synced here as its own, and without the URLs its `held` filter says
        it holds (up to `HELD_SCAN` times `limit` documents are looked at to fill the page, so a filter
        that claims everything costs a bounded amount of work)."""
        layer = self.layer
        limit = min(limit, self.settings.results_per_sync)
        kept_only = self.settings.share_kept_only and layer.has_meta(topic)
        scan = limit + 1 if held is None else HELD_SCAN * limit + 1
        best = self.settings.share_results
        found = await layer.db(store.own_results, topic, cursor, scan, peer, kept_only=kept_only, best=best)
        rows, next_cursor, looked_at = [], cursor, 0
        for doc_id, row in found:
            if len(rows) == limit:
                break
            next_cursor, looked_at = doc_id, looked_at + 1
            if held is None or row["url"] not in held:
                rows.append((doc_id, row))
        more = looked_at < len(found) or len(found) == scan
        sent = [
            row
            for _, row in rows
            if len(row["url"]) <= 2048 and row["url"].startswith(("http://", "https://"))
        ]
        previews = await layer.db(result_previews, sent, self.settings.preview_chars)
        results = [
            CrawlResult(
                url=row["url"],
                title=(row["title"] or "")[:MAX_TITLE_LEN],
                preview=shown,
                topic=row["topic"],  # the subtopic it is filed in: the asker files it there too when it can
                confidence=short_float(row["confidence"], CONFIDENCE_STEP),
                fingerprint=row["fingerprint"],
                origin=layer.peer_id,
                fetched_at=short_float(row["fetched_at"], 1.0),
            )
            for row, shown in zip(sent, previews, strict=True)
        ]
        return ResultPage(sign_results(layer.key, results), next_cursor, more)

    # -- pulling --------------------------------------------------------------------------------------------
    async def sync(self) -> int:
        """Pull new crawl results of shared topics from every community peer, in turns (`my_turn`);
        returns new pooled documents. A (peer, topic) that had nothing new is asked again after a growing
        number of rounds."""
        layer = self.layer
        added = 0
        for topic in await layer.topics():
            for peer in layer.community(topic):
                backoff = self._synced.setdefault((peer, topic), Backoff())
                if layer.rounds < backoff.skip_until:
                    continue
                last = self._pulled.get((peer, topic))
                if not self.my_turn(peer) and last is not None and layer.rounds - last < 2:
                    continue
                self._pulled[(peer, topic)] = layer.rounds
                got = await self.pull(peer, topic, probe=not backoff.news)
                backoff.pulled(got, layer.rounds, self.settings.max_backoff_rounds)
                added += got or 0
        if added and layer.service is not None:
            await self._seed_from_hubs()
        return added

    def my_turn(self, peer: str) -> bool:
        """Two peers pulling each other's results at the same time both send what the other crawled too;
        in turns (alternating wall-clock slots of `sync_interval`, the smaller peer id in the odd ones)
        the later pull knows what the earlier one brought and leaves it out (`store.own_results`). A pull
        that missed its turn in the last round goes ahead anyway, so rounds that drift across slots
        cannot starve a peer."""
        slot = int(time.time() // self.settings.sync_interval)
        return (slot + (self.layer.peer_id < peer)) % 2 == 0

    async def pull(
        self, peer: str, topic: str, *, with_filter: bool = True, probe: bool = False
    ) -> int | None:
        """Pooled documents added from one page of the peer's results; None when it had nothing new.
        `with_filter` sends the Bloom filter of held URLs, so the peer leaves out what this node holds.
        With `probe` (`sync` probes after a pull that brought no results), a request whose filter
        claims every URL asks first whether the peer has any result after the cursor at all: its answer
        carries no result but moves the cursor when there is one (that cursor is not kept), and only then
        does the pull with the real filter follow. On devweb 50 of 86 pulls came back empty carrying 12 of
        22 KB of filters, while a burst of results after a quiet spell, pulled without a filter, came
        back with up to 83 duplicates (~200 B each); a probe costs about 170 B."""
        layer = self.layer
        cursor = await layer.db(store.cursor_of, peer, topic)
        probing = probe and with_filter and self.settings.held_filter_fp_rate > 0
        if probing and not await self._has_news(peer, topic, cursor):
            return None
        held = await self.held_filter(peer, topic) if with_filter else None
        try:
            page = await layer.protocols.fetch_results(
                peer, topic, cursor, self.settings.results_per_sync, held
            )
        except P2PError as exc:
            log.info("result sync: %s", exc)
            return None
        good = []
        for item in page.items:
            if item.result.origin != peer:
                layer.protocols.guard.reject(
                    peer, WireError("wrong_origin", "a peer may only sync its own results")
                )
                continue
            good.append(item.result)
        if not page.items and page.next_cursor == cursor:
            return None
        if layer.ledger.is_blocked(peer):  # blocked while its results were on the way
            return None
        added = await layer.db(store.pool_results, peer, topic, good, page.next_cursor)
        if added:
            layer.publish("peer", {"peer": peer, "topic": topic, "pooled": added})
        return added

    async def _has_news(self, peer: str, topic: str, cursor: int) -> bool:
        """Whether the peer has a result of the topic after `cursor` for this node (see `pull`)."""
        try:
            page = await self.layer.protocols.fetch_results(peer, topic, cursor, 1, HOLDS_EVERYTHING)
        except P2PError as exc:
            log.info("result sync probe: %s", exc)
            return False
        return bool(page.items) or page.next_cursor != cursor

    async def held_filter(self, peer: str, topic: str) -> HeldFilter | None:
        """The Bloom filter of URLs `peer` could send for `topic` that this node holds already (none when
        `held_filter_fp_rate` is 0 or nothing is held). When more are held than `held_filter_max_bytes`
        holds at that rate, the newest go in: older ones may come back as duplicates, but no more new
        results are lost to false positives than the rate says."""
        fp_rate, max_bytes = self.settings.held_filter_fp_rate, self.settings.held_filter_max_bytes
        if fp_rate <= 0:
            return None

        def build(repo: Repository) -> HeldFilter | None:
            urls = store.held_urls(repo, topic, peer, HeldFilter.capacity(fp_rate, max_bytes))
            return HeldFilter.build(urls, fp_rate, max_bytes) if urls else None

        return await self.layer.db(build)

    async def _seed_from_hubs(self) -> None:
        """Queue the URLs of the peers' most confident pooled pages of each topic in the local frontier."""

        def best(repo: Repository) -> dict[str, list[str]]:
            seeds: dict[str, list[str]] = {}
            for topic in topic_keys(repo):
                rows = repo.db.execute(
                    "SELECT url FROM documents WHERE origin IS NOT NULL AND topic = ? "
                    "AND url NOT IN (SELECT url FROM frontier) ORDER BY confidence DESC LIMIT ?",
                    [topic, self.settings.hub_seeds],
                ).fetchall()
                if rows:
                    seeds[topic] = [r[0] for r in rows]
            return seeds

        for topic, urls in (await self.layer.db(best)).items():
            try:
                await self.layer.service.add_seeds(urls, topic=topic)
            except Exception as exc:  # seeding is a bonus; never fail a round for it
                log.info("hub seeds: %s", exc)

    def forget(self, peer: str) -> None:
        """A blocked peer: its pull schedule goes (`Cooperation.forget_peer`)."""
        for memory in (self._synced, self._pulled):
            for key in [key for key in memory if key[0] == peer]:
                del memory[key]


def short_float(value: float | None, step: float) -> float:
    """`value` rounded to a multiple of `step` (a power of two), 0.0 when missing or not finite."""
    value = float(value or 0.0)
    return round(value / step) * step if math.isfinite(value) else 0.0
