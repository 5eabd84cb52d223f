"""The addresses a host gives others: its listen addresses, each unspecified one (0.0.0.0, ::) replaced by
the machine's own addresses.

libp2p reports a host that listens on every interface (the default, `/ip4/0.0.0.0/tcp/4001`) by that
address. Another machine that dials 0.0.0.0 reaches itself, so neighbour lists carried an address no other
machine could use: peers met only through their bootstrap addresses and the connections opened to them,
and a restarted node's saved neighbours (`peers.json`) could not be dialled.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Sequence

from p2p.errors import WireError
from p2p.message_limits import MAX_ADDRS_PER_PEER
from p2p.value_checks import check_peer_id

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

UNSPECIFIED = {"ip4": "0.0.0.0", "ip6": "::"}
PROTOCOLS = {socket.AF_INET: "ip4", socket.AF_INET6: "ip6"}


def interface_addresses() -> dict[str, list[str]]:
    """The machine's IP addresses by multiaddr protocol ("ip4", "ip6"): loopback only where the family has
    no other, IPv6 link-local left out (it needs an interface zone to be dialled)."""
    import psutil

    found: dict[str, list[IPAddress]] = {protocol: [] for protocol in UNSPECIFIED}
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            protocol = PROTOCOLS.get(address.family)
            if protocol is None:  # a hardware address
                continue
            try:
                ip = ipaddress.ip_address(address.address.split("%")[0])
            except ValueError:
                continue
            if not ip.is_link_local and not ip.is_unspecified:
                found[protocol].append(ip)
    return {
        protocol: [str(ip) for ip in ([ip for ip in ips if not ip.is_loopback] or ips)]
        for protocol, ips in found.items()
    }


def advertised(
    listen: Sequence[str], interfaces: Callable[[], dict[str, list[str]]] | None = None
) -> list[str]:
    """`listen` (multiaddrs) with each unspecified address replaced by the machine's addresses of its
    protocol (`interfaces()`, default `interface_addresses`, asked only then), same port; without
    duplicates, at most `MAX_ADDRS_PER_PEER` (what a neighbour entry holds)."""
    out: list[str] = []
    found: dict[str, list[str]] | None = None
    for addr in listen:
        parts = addr.split("/")
        if len(parts) > 2 and UNSPECIFIED.get(parts[1]) == parts[2]:
            found = (interfaces or interface_addresses)() if found is None else found
            out += ["/".join(["", parts[1], ip, *parts[3:]]) for ip in found.get(parts[1], [])]
        else:
            out.append(addr)
    return list(dict.fromkeys(out))[:MAX_ADDRS_PER_PEER]


LISTEN_EXAMPLE = "/ip4/0.0.0.0/tcp/4001"
NAMED = ("dns", "dns4", "dns6")  # a peer may be dialled by host name; a node listens on an IP address


def check_listen_addr(text: str) -> str:
    """`text` if it is an address a node can listen on (/ip4 or /ip6, then /tcp/PORT); ValueError saying
    the form otherwise (given "127.0.0.1:4001", the node failed deep in libp2p with a traceback)."""
    if not _is_tcp_addr(text, named=False):
        raise ValueError(f"{text!r} is not a listen address: give /ip4/HOST/tcp/PORT, e.g. {LISTEN_EXAMPLE}")
    return text


def check_peer_addr(text: str) -> str:
    """`text` if it is a peer's full address (a TCP address and /p2p/PEER_ID, as `node run` prints);
    ValueError saying the form otherwise (one without the peer id was dialled in vain every 15 s)."""
    head, marker, peer = text.rpartition("/p2p/")
    if not (marker and _is_peer_id(peer) and _is_tcp_addr(head, named=True)):
        raise ValueError(
            f"{text!r} is not a peer address: give the /ip4/HOST/tcp/PORT/p2p/PEER_ID another node's "
            "`node run` prints"
        )
    return text


def _is_peer_id(text: str) -> bool:
    """Whether text is a peer id (a node given "/p2p/12D3KooW" logged 'Invalid CID' every 12 s)."""
    try:
        check_peer_id(text, "peer")
    except WireError:
        return False
    return True


def _is_tcp_addr(text: str, named: bool) -> bool:
    """Whether text is /ip4|ip6/ADDRESS/tcp/PORT (or, `named`, /dns|dns4|dns6/HOST/tcp/PORT)."""
    parts = text.split("/")
    if len(parts) != 5 or parts[0] or parts[3] != "tcp" or not parts[4].isdigit() or int(parts[4]) > 65535:
        return False
    if named and parts[1] in NAMED:
        return bool(parts[2])
    try:
        return parts[1] in UNSPECIFIED and ipaddress.ip_address(parts[2]).version == int(parts[1][-1])
    except ValueError:
        return False
