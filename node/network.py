"""The node's side of the peer-to-peer network: start it, join through bootstrap addresses, report figures.

Imported only when the node runs networked (libp2p takes seconds to import). The network is the p2p layer's
`P2PService` (host, membership, topic communities, guarded request/response protocols), which the
cooperation layer plugs its providers and handlers into.
"""

from __future__ import annotations

import logging
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


async def start_network(service: NodeService, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Run the node's `P2PService` until cancelled; `task_status.started(service)` once it has joined."""
    from p2p.identity import load_or_create_identity
    from p2p.service import run_service

    settings = p2p_settings(service)
    key_pair = load_or_create_identity(service.data.identity)
    await run_service(settings, key_pair, task_status=task_status)
