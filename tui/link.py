"""The UI's link to its node: the project's `AsyncNodeClient` with answers turned into typed records.

Errors stay the client's (`NodeUnreachable`, `Unauthorised`, `NodeError`); screens show them, never raise.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from node.client import AsyncNodeClient
from node.wording import crawl_answer_text
from tui.records import (
    CrawlFigures,
    Document,
    Hit,
    LossSetting,
    MetaState,
    MetricSample,
    NearbyCommunity,
    Peer,
    Proposal,
    ReceivedModel,
    SearchResults,
    Status,
    Topic,
)


class NodeLink:
    """Typed calls to the node of one data directory; the client is opened lazily and reopened on demand."""

    def __init__(self, data_dir: Path, client: AsyncNodeClient | None = None) -> None:
        self.data_dir = data_dir
        self._client = client
        self.nearby: list[NearbyCommunity] = []  # from the last `peers` answer

    @property
    def client(self) -> AsyncNodeClient:
        if self._client is None:
            self._client = AsyncNodeClient.from_data_dir(self.data_dir)
        return self._client

    async def reset(self) -> None:
        """Forget the client (the node restarted on another port, or went away)."""
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    async def close(self) -> None:
        await self.reset()

    async def status(self) -> Status:
        return Status.from_json(await self.client.status())

    async def metrics(self, since: float = 0.0) -> list[MetricSample]:
        answer = await self.client.metrics(since)
        return [MetricSample.from_json(s) for s in answer.get("samples", [])]

    async def topics(self) -> list[Topic]:
        answer = await self.client.topics()
        return [Topic.from_json(t) for t in answer.get("topics", [])]

    async def import_bookmarks(self, path: str) -> tuple[list[str], int]:
        answer = await self.client.import_topics(path=path)
        return [str(k) for k in answer.get("imported", [])], int(answer.get("seeds", 0))

    async def set_keywords(self, topic: str, keywords: list[str]) -> Topic:
        return Topic.from_json(await self.client.set_keywords(topic, keywords))

    async def stop_node(self) -> int:
        """Stop the node (as Ctrl-C would); its pid."""
        return int((await self.client.stop_node())["pid"])

    async def crawl(self, action: str, topic: str | None = None) -> str:
        """The node's answer as `topicswarm crawl` words it: the state set, the requests in flight it let
        finish or cancelled, and why the crawl will not fetch when it will not."""
        return crawl_answer_text(await self.client.crawl(action, topic), topic)

    async def search(
        self,
        q: str,
        *,
        topic: str | None = None,
        origin: str = "any",
        verdict: str = "accepted",
        limit: int = 50,
        offset: int = 0,
    ) -> SearchResults:
        answer = await self.client.search(
            q, topic=topic, origin=origin, verdict=verdict, limit=limit, offset=offset
        )
        hits = tuple(Hit.from_json(h) for h in answer.get("hits", []))
        total = int(answer.get("total", len(hits)))
        widened_total = None
        if not total and (topic or origin != "any" or verdict != "any"):  # filters to blame, or not?
            widened_total = int((await self.client.search(q, verdict="any", limit=0)).get("total", 0))
        prefix, browsed = answer.get("prefix") is True, answer.get("browsed") is True
        return SearchResults(q, hits, total, prefix, widened_total, browsed)

    async def document(self, doc_id: int) -> Document:
        return Document.from_json(await self.client.document(doc_id))

    async def feedback(
        self, doc_id: int, *, relevant: bool | None = None, opened: bool = False, query: str = ""
    ) -> str:
        """The URL the node fetches to train on (a peer's result holds only its preview), else ""."""
        answer = await self.client.feedback(doc_id, relevant=relevant, opened=opened, query=query or None)
        return str(answer.get("fetching") or "") if isinstance(answer, dict) else ""

    async def revisit(self, url: str) -> dict[str, Any]:
        """{"due", "not_revisited", "state", "detail"?}: the stored page made due for a fresh copy now."""
        return await self.client.revisit([url])

    async def peers(self) -> list[Peer]:
        """The neighbours, then the peers the user blocked (`Peer.blocked`)."""
        answer = await self.client.peers()
        self.nearby = [
            NearbyCommunity.from_json(c) for c in answer.get("nearby") or [] if isinstance(c, dict)
        ]
        blocked = [Peer.blocked_from_json(p) for p in answer.get("blocked") or [] if isinstance(p, dict)]
        return [Peer.from_json(p) for p in answer.get("peers", [])] + blocked

    async def block_peer(self, peer_id: str) -> dict[str, Any]:
        return await self.client.block_peer(peer_id)

    async def unblock_peer(self, peer_id: str) -> dict[str, Any]:
        return await self.client.unblock_peer(peer_id)

    async def models(self, topic: str | None = None) -> list[ReceivedModel]:
        answer = await self.client.models(topic)
        return [ReceivedModel.from_json(m) for m in answer.get("models", [])]

    async def meta(self, topic: str) -> MetaState:
        return MetaState.from_json(await self.client.meta(topic))

    async def build_meta(self, topic: str, loss: float | None) -> dict[str, Any]:
        return dict(await self.client.build_meta(topic, loss))

    async def set_loss(self, topic: str, loss: float) -> LossSetting:
        return LossSetting.from_json(await self.client.set_loss(topic, loss))

    async def refine(self, topic: str, k: int | None) -> list[Proposal]:
        answer = await self.client.refine(topic, k)
        return [Proposal.from_json(p) for p in answer.get("proposals", [])]

    async def proposals(self, topic: str | None = None) -> list[Proposal]:
        answer = await self.client.proposals(topic)
        return [Proposal.from_json(p) for p in answer.get("proposals", [])]

    async def accept(self, proposal_id: str, name: str | None = None) -> Proposal:
        return Proposal.from_json(await self.client.accept_proposal(proposal_id, name))

    async def reject(self, proposal_id: str) -> Proposal:
        return Proposal.from_json(await self.client.reject_proposal(proposal_id))

    async def stats_events(self) -> AsyncIterator[tuple[str, Any]]:
        """(kind, payload): `stats` payloads become CrawlFigures, other kinds stay the node's JSON."""
        async for kind, data in self.client.events():
            yield kind, CrawlFigures.from_json(data) if kind == "stats" else data
