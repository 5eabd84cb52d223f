"""The peers a node's user shut out, and the `peers` answer that lists them beside the neighbours.

`PeerBlocks` is the service's `peer_blocks`. Its list is blocked.json (`node.network` reads and writes the
file): loaded at start, before the network refuses anyone, and saved before anything else a block or an
unblock changes.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from crawler.repository import Repository
from node.errors import NodeServiceError, not_found, shown
from node.stored_state import table_exists

if TYPE_CHECKING:
    from node.service import NodeService


class PeerBlocks:
    """The user's blocked peers of one node (`NodeService.peer_blocks`)."""

    def __init__(self, service: NodeService) -> None:
        self.service = service
        self.blocked: dict[str, float] = {}  # peer id -> when the user blocked it (blocked.json)

    def load(self) -> None:
        from node.network import read_blocked_peers

        self.blocked = read_blocked_peers(self.service.data.blocked_peers)

    async def peers(self) -> dict[str, Any]:
        service = self.service
        blocked = [{"peer_id": peer, "blocked_at": at} for peer, at in self.blocked.items()]
        if service.network is None:
            return {"peers": [], "blocked": blocked, "nearby": []}
        if service.cooperation is not None and hasattr(service.cooperation, "peers"):
            rows = await service.cooperation.peers()
        else:
            rows = service.network.peer_rows()
        return {"peers": rows, "blocked": blocked, "nearby": await self.nearby()}

    async def nearby(self) -> list[dict[str, Any]]:
        """Communities the neighbours are in and this node is not, each with the node's topics it may be
        another name for: peers meet on a topic only when their keys are equal to the letter."""
        from crawler.topic_rename import alike_topics

        own = await self.service.topics.keys()
        rows = []
        for key, members in self.service.network.nearby_communities().items():
            peers = [peer for peer in members if peer not in self.blocked]
            if peers:
                rows.append({"key": key, "peers": len(peers), "alike": alike_topics(key, own)})
        return rows

    async def block(self, text: str) -> dict[str, Any]:
        """The user shuts a peer out (`text`: its id, or the start of an id the node knows): saved in
        blocked.json before anything else, refused by the network from now on (and at every start), and
        what it sent removed (`Cooperation.forget_peer`; offline, from the repository alone)."""
        from node.cooperation import store

        service = self.service
        peer = await self._peer_named(text)
        if peer == service.peer_id:
            raise NodeServiceError("bad_request", "a node cannot block itself")
        self._save({**self.blocked, peer: self.blocked.get(peer, time.time())})
        if service.network is not None and hasattr(service.network, "block"):
            await service.network.block(peer)
        if service.cooperation is not None and hasattr(service.cooperation, "forget_peer"):
            forgotten = await service.cooperation.forget_peer(peer)
        else:  # offline: a repository that never cooperated has no cooperation tables yet

            def forget(repo: Repository) -> dict[str, Any]:
                store.ensure_schema(repo)
                return store.forget_peer(repo, peer)

            forgotten = await service.db(forget)
            forgotten["meta_rebuilt"] = []
            forgotten.pop("topics")
        service.publish(
            "log", {"message": f"blocked peer {peer}: {forgotten['results_removed']} results removed"}
        )
        service.publish("peer", {"peer": peer, "blocked": True})
        return {"peer_id": peer, "blocked": True, **forgotten}

    async def unblock(self, text: str) -> dict[str, Any]:
        """Let a blocked peer in again; it comes back as any peer does (its models and results are
        fetched anew)."""
        service = self.service
        peer = self._blocked_named(text)
        self._save({p: at for p, at in self.blocked.items() if p != peer})
        if service.network is not None and hasattr(service.network, "unblock"):
            service.network.unblock(peer)
        service.publish("peer", {"peer": peer, "blocked": False})
        return {"peer_id": peer, "blocked": False}

    def _save(self, blocked: dict[str, float]) -> None:
        """Save the list first: a change the file does not hold would be lost at the next start."""
        from node.network import save_blocked_peers

        try:
            save_blocked_peers(self.service.data.blocked_peers, blocked)
        except OSError as exc:
            raise NodeServiceError(
                "blocked_peers", f"the blocked peers could not be saved: {exc}", 507
            ) from exc
        self.blocked = blocked

    async def _peer_named(self, text: str) -> str:
        """The peer `text` names: a full peer id, or the start of exactly one id the node knows (a
        neighbour, or the origin of a model or result it holds)."""
        from p2p.errors import WireError
        from p2p.value_checks import check_peer_id

        service = self.service
        text = text.strip()
        if not text:
            raise NodeServiceError(
                "bad_request", "name a peer: its id, or the start of it (see `topicswarm peers`)"
            )
        known = set(await service.db(_peer_origins))
        if service.cooperation is not None and hasattr(service.cooperation, "known_peers"):
            known.update(service.cooperation.known_peers())
        elif service.network is not None and hasattr(service.network, "peer_rows"):
            known.update(row["peer_id"] for row in service.network.peer_rows())
        candidates = known | set(self.blocked)
        candidates.discard(service.peer_id)  # the node's own id: named only in full (and then refused)
        matches = sorted(peer for peer in candidates if peer.startswith(text))
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise NodeServiceError(
                "bad_request", f"{shown(text)} starts {len(matches)} peer ids: give more of it"
            )
        if text == service.peer_id:
            return text
        try:
            return check_peer_id(text, "peer")
        except WireError as exc:
            raise not_found(
                f"no peer id known here starts with {shown(text)}: see `topicswarm peers`"
            ) from exc

    def _blocked_named(self, text: str) -> str:
        text = text.strip()
        matches = [peer for peer in self.blocked if text and peer.startswith(text)]
        if len(matches) != 1:
            what = "no blocked peer" if not matches else f"{len(matches)} blocked peers"
            raise NodeServiceError(
                "bad_request" if matches else "not_found",
                f"{what} ids start with {text!r}: see the blocked list of `topicswarm peers`",
                400 if matches else 404,
            )
        return matches[0]


def _peer_origins(repo: Repository) -> list[str]:
    """Peers whose models or results the repository holds."""
    rows = repo.db.execute("SELECT DISTINCT origin FROM documents WHERE origin IS NOT NULL").fetchall()
    peers = {row[0] for row in rows}
    if table_exists(repo, "coop_models"):
        peers.update(row[0] for row in repo.db.execute("SELECT DISTINCT origin FROM coop_models"))
    return sorted(peers - {"local"})
