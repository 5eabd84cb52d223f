"""The node's side of the peer-to-peer network: start it, join through bootstrap addresses, report figures.

Imported only when the node runs networked (libp2p takes seconds to import). The network is the p2p layer's
`P2PService` (host, membership, topic communities, guarded request/response protocols), which the
cooperation layer plugs its providers and handlers into.
"""

from __future__ import annotations

import errno
import json
import logging
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from node.datadir import write_atomically
from node.errors import NodeServiceError

if TYPE_CHECKING:
    from node.service import NodeService
    from p2p.membership import Neighbour

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


PeersView = frozenset[tuple[str, tuple[str, ...]]]
"""What of a neighbour list a save compares: the peer ids and their addresses (contact times move always)."""

KNOWN_PEERS_SAVE_PERIOD = 5.0
"""Seconds between two looks at the neighbour list, saved when its peers or addresses changed (rarely, once
a community has settled): a node killed soon after it joined still rejoins through them."""


async def start_network(service: NodeService, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Run the node's `P2PService` until cancelled; `task_status.started(service)` once it has joined
    (through the bootstrap addresses, else through the peers it knew when it last ran, `known_peers`,
    which it saves while it runs and when it stops)."""
    from p2p.identity import load_or_create_identity
    from p2p.service import start_service

    settings = p2p_settings(service)
    key_pair = load_or_create_identity(service.data.identity)
    path = service.data.known_peers
    recalled, blocked = read_known_peers(path), list(service.peer_blocks.blocked)
    async with start_service(settings, key_pair, recalled=recalled, blocked=blocked) as p2p:
        task_status.started(p2p)
        saved: PeersView = frozenset()
        try:
            while True:
                await trio.sleep(KNOWN_PEERS_SAVE_PERIOD)
                saved = save_known_peers(path, p2p.neighbours(), saved)
        finally:
            save_known_peers(path, p2p.neighbours(), saved)


def read_known_peers(path: Path) -> list[Neighbour]:
    """The neighbours saved when the node last ran, read as strictly as a
    peer's neighbour list; none when the file is missing, unreadable or malformed (it only lets a node
    rejoin without --bootstrap: a warning says so). A malformed file is moved aside (`set_aside`)."""
    from p2p.errors import WireError
    from p2p.membership import from_message
    from p2p.messages.membership import NeighbourExchange

    try:
        return from_message(NeighbourExchange.from_wire(json.loads(path.read_text(encoding="utf-8"))))
    except FileNotFoundError:
        return []
    except OSError as exc:
        log.warning("peers of the last run not read from %s (%s): joining through bootstrap only", path, exc)
        return []
    except (ValueError, RecursionError, WireError) as exc:  # UnicodeDecodeError is a ValueError
        log.warning("%s is not a saved neighbour list (%s): %s", path, exc, set_aside(path))
        return []


UNREADABLE_SUFFIX = ".unreadable"
"""A malformed neighbour list is kept beside it under its name and this suffix (`set_aside`)."""


def set_aside(path: Path) -> str:
    """Move a malformed neighbour list to `path` + `UNREADABLE_SUFFIX`, kept as it was, and say what was
    done: a node that finds no neighbour never saves a list, so the file stayed and the warning came back
    at every start."""
    aside = path.with_name(path.name + UNREADABLE_SUFFIX)
    try:
        path.replace(aside)
    except OSError as exc:
        return f"ignored, and not moved aside ({exc}): remove it; joining through bootstrap only"
    return f"moved to {aside.name} as it was; joining through bootstrap only, the next save writes a new one"


def save_known_peers(path: Path, neighbours: Sequence[Neighbour], saved: PeersView) -> PeersView:
    """Write the neighbour list to `path` (atomically) when its peers or addresses differ from `saved`;
    what the file now holds. An empty list is not written: a node that found nobody keeps the peers it
    knew before. A failed write (a full disk) is logged and retried at the next save."""
    from p2p.membership import to_message

    view = frozenset((n.peer_id, tuple(n.addrs)) for n in neighbours)
    if not view or view == saved:
        return saved
    try:
        write_atomically(path, json.dumps(to_message(neighbours).to_wire(), indent=1) + "\n")
    except OSError as exc:
        log.warning("the neighbour list was not saved: %s", exc)
        return saved
    return view


def read_blocked_peers(path: Path) -> dict[str, float]:
    """The peers the user blocked (peer id -> when), none when the file is missing. A file that cannot be
    read is an error that names it: starting anyway would let in peers the user shut out."""
    from p2p.errors import WireError
    from p2p.value_checks import check_peer_id

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise NodeServiceError("blocked_peers", f"{path} cannot be read ({exc}): fix or remove it") from exc
    try:
        rows = json.loads(text)["blocked"]
        return {check_peer_id(row["peer_id"], "peer_id"): float(row["blocked_at"]) for row in rows}
    except (ValueError, KeyError, TypeError, RecursionError, WireError) as exc:
        raise NodeServiceError(
            "blocked_peers",
            f"{path} is not a list of blocked peers ({exc}): fix it, or remove it to unblock every peer",
        ) from exc


def save_blocked_peers(path: Path, blocked: dict[str, float]) -> None:
    """Write the blocked peers (atomically: a crash leaves the old list or the new one)."""
    rows = [{"peer_id": peer, "blocked_at": at} for peer, at in sorted(blocked.items(), key=lambda kv: kv[1])]
    write_atomically(path, json.dumps({"blocked": rows}, indent=1) + "\n")


def check_listen_addrs(service: NodeService) -> None:
    """Before the network starts: every listen port is free (see `refuse_taken_port`)."""
    for addr in p2p_settings(service).listen_addrs:
        refuse_taken_port(addr)


def refuse_taken_port(addr: str) -> None:
    """A listen address whose TCP port another process holds is an error that says what to do. libp2p
    listens with SO_REUSEPORT, so a second node on the default port 4001 used to start "fine" and share
    the port with the first, each getting a random half of the incoming connections."""

    parts = addr.strip("/").split("/")
    if len(parts) < 4 or parts[0] not in ("ip4", "ip6") or parts[2] != "tcp" or parts[3] in ("", "0"):
        return
    try:
        taken = port_in_use(parts[1], int(parts[3]))
    except (OSError, ValueError):
        return  # not ours to judge (an address of another machine...): libp2p says what is wrong
    if taken:
        raise NodeServiceError(
            "listen",
            f"port {parts[3]} of {addr} is in use (another node?): listen elsewhere with "
            f"`topicswarm node run --listen /{parts[0]}/{parts[1]}/tcp/PORT` or [p2p] listen_addrs "
            "in config.toml (port 0 picks a free one)",
        )


def port_in_use(host: str, port: int) -> bool:
    """Whether another process listens on TCP `host`:`port` (an IP address); other bind failures raise."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # SO_REUSEADDR: a port left in TIME_WAIT by a node that just stopped is free; one listened on is not
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return True
            raise
    return False
