"""Which proxy a web request goes through, so a node behind a company or campus proxy, or Tor, can crawl.

The `proxy` setting names one for every request: HTTP, or SOCKS5 (`socks5h://127.0.0.1:9050` for Tor, the
proxy resolving host names). Left empty, the environment's variables decide as curl, pip and Scrapy read
them (`HTTPS_PROXY` / `HTTP_PROXY` by the request's scheme, else `ALL_PROXY`, in either case; `NO_PROXY`
names hosts that go direct: names, `.domain` suffixes, IP addresses or networks, optionally with a port, or
`*`); `direct` ignores the environment. Loopback hosts always go direct, as browsers do: a proxy cannot
reach the node's own machine, and the simulated webs and peers live there.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable, Mapping

DIRECT = "direct"
PROXY_SCHEMES = ("http://", "https://", "socks5://", "socks5h://")  # socks5h: the proxy resolves names
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})

ProxyFor = Callable[[str, str, int | None], str | None]  # (scheme, host, port) -> proxy URL, None: direct


def check_proxy(setting: str) -> None:
    """Raise ValueError unless the `proxy` setting is empty, `direct` or an http(s) or SOCKS5 proxy URL."""
    if setting in ("", DIRECT):
        return
    if not setting.lower().startswith(PROXY_SCHEMES) or not setting.split("://", 1)[1].strip("/"):
        schemes = ", ".join(PROXY_SCHEMES)
        raise ValueError(f"proxy must be a URL starting {schemes}, 'direct' or empty, not {setting!r}")


def proxy_resolver(setting: str, environ: Mapping[str, str] | None = None) -> ProxyFor:
    """The proxy of each request, from the `proxy` setting or else the environment (see above)."""
    environ = os.environ if environ is None else environ
    check_proxy(setting)
    if setting == DIRECT:
        return lambda scheme, host, port: None
    by_scheme = {scheme: setting or _variable(environ, f"{scheme}_proxy") for scheme in ("http", "https")}
    fallback = "" if setting else _variable(environ, "all_proxy")
    bypass = [entry.strip().lower() for entry in _variable(environ, "no_proxy").split(",") if entry.strip()]

    def proxy_for(scheme: str, host: str, port: int | None) -> str | None:
        proxy = by_scheme.get(scheme) or fallback
        if not proxy or is_loopback(host) or bypassed(host, port, bypass):
            return None
        return proxy

    return proxy_for


def _variable(environ: Mapping[str, str], name: str) -> str:
    return (environ.get(name) or environ.get(name.upper()) or "").strip()


def is_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bypassed(host: str, port: int | None, entries: list[str]) -> bool:
    """Whether a `NO_PROXY` entry covers the host (and port, when the entry names one)."""
    host = host.strip("[]").lower()
    for entry in entries:
        if entry == "*":
            return True
        name, entry_port = _split_port(entry)
        if entry_port is not None and entry_port != port:
            continue
        if _in_network(host, name) or host == name.lstrip(".") or host.endswith("." + name.lstrip(".")):
            return True
    return False


def _split_port(entry: str) -> tuple[str, int | None]:
    if entry.startswith("["):  # [::1]:8080
        name, _, rest = entry[1:].partition("]")
        return name, int(rest[1:]) if rest[1:].isdigit() else None
    name, colon, port = entry.rpartition(":")
    if colon and port.isdigit() and ":" not in name:
        return name, int(port)
    return entry, None


def _in_network(host: str, entry: str) -> bool:
    try:
        return ipaddress.ip_address(host) in ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return False
