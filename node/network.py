"""The node's side of the peer-to-peer network: start it, join through bootstrap addresses, report figures.

Imported only when the node runs networked (libp2p takes seconds to import). Uses the p2p service
(`p2p.service`) when it is installed, else a bare libp2p host (identity, listen, bootstrap dials) so the node
still has a peer id, addresses and connections to show.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

import trio

if TYPE_CHECKING:
    from node.service import NodeService

log = logging.getLogger(__name__)

LOOPBACK_LISTEN = "/ip4/127.0.0.1/tcp/0"


def p2p_settings(service: NodeService) -> Any:
    """The `[p2p]` config section when the config has one, else the defaults; CLI listen/bootstrap on top."""
    import dataclasses

    from p2p.settings import P2PSettings

    settings = getattr(service.config, "p2p", None) or P2PSettings()
    changes: dict[str, Any] = {}
    if service.listen:
        changes["listen_addrs"] = tuple(service.listen)
    if service.bootstrap:
        changes["bootstrap"] = (*settings.bootstrap, *service.bootstrap)
    return dataclasses.replace(settings, **changes) if changes else settings


class BareNetwork:
    """A libp2p host without the p2p service: peer id, addresses, connections."""

    def __init__(self, host: Any) -> None:
        self.host = host
        self.first_seen: dict[str, float] = {}

    @property
    def peer_id(self) -> str:
        return str(self.host.peer_id)

    def addrs(self) -> list[str]:
        return self.host.addrs()

    def connected(self) -> list[Any]:
        return list(self.host.host.get_network().connections)

    def peers_online(self) -> int:
        return len(self.connected())

    def traffic(self) -> dict[str, int]:
        return {"in": 0, "out": 0}

    def peer_rows(self) -> list[dict[str, Any]]:
        now = time.time()
        rows = []
        store = self.host.host.get_peerstore()
        for peer in self.connected():
            self.first_seen.setdefault(str(peer), now)
            rows.append(
                {
                    "peer_id": str(peer),
                    "addrs": [str(a) for a in store.addrs(peer)],
                    "last_seen": now,
                    "shared_topics": [],
                    "bytes_in": 0,
                    "bytes_out": 0,
                    "rejected": [],
                }
            )
        return rows


async def start_network(service: NodeService, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Run the node's network until cancelled; `task_status.started(network)` once it listens."""
    from p2p.identity import load_or_create_identity

    settings = p2p_settings(service)
    key_pair = load_or_create_identity(service.data.identity)
    try:
        from p2p import service as p2p_service
    except ImportError:
        p2p_service = None
    if p2p_service is not None and hasattr(p2p_service, "run_node_network"):
        await p2p_service.run_node_network(settings, key_pair, task_status=task_status)  # pragma: no cover
        return
    from p2p.host import NetworkError, start_host

    async with start_host(settings, key_pair) as host:
        network = BareNetwork(host)
        for addr in settings.bootstrap:
            try:
                await host.connect_addr(addr)
            except NetworkError as exc:
                log.warning("bootstrap %s failed: %s", addr, exc)
                service.publish("log", {"message": f"bootstrap {addr} failed: {exc}"})
        task_status.started(network)
        await trio.sleep_forever()
