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

from p2p.schemas import MAX_ADDRS_PER_PEER

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
