"""URL normalisation, host keys, trap heuristics and the `allowed_hosts` filter.

Every URL enters the crawler through `normalize_url`, so one page has one spelling: the frontier's
duplicate check, the robots cache and the politeness key all depend on it. Normalisation is idempotent
(`normalize_url(normalize_url(u)) == normalize_url(u)`).
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from collections.abc import Callable, Iterable
from functools import lru_cache
from urllib.parse import quote, urljoin, urlsplit

from crawler.settings import CrawlSettings

DEFAULT_PORTS = {"http": 80, "https": 443}
_DEFAULTS = CrawlSettings()
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})?")  # an escape, or a lone percent sign (group None)
_HOST_CHARS = re.compile(r"[a-z0-9._-]+\Z")
_PATH_SAFE = "/:@!$&'()*+,;=%"
_QUERY_SAFE = "/?:@!$&'()*+,;=%"
_PATH_PARAM = re.compile(r";([^/;=?]+)=[^/;?]*")  # ;name=value in a path segment (;jsessionid=...)


def normalize_url(url: str, base: str | None = None, settings: CrawlSettings = _DEFAULTS) -> str | None:
    """The absolute, normalised form of `url` (resolved against `base`), or None if it cannot be crawled.

    Lowercases scheme and host, drops default ports, user info and the fragment, resolves dot segments,
    normalises percent-encoding (unreserved characters decoded, other escapes upper-case, raw non-ASCII
    encoded as UTF-8), optionally sorts the query (`url_sort_query`). None for non-http(s) URLs, malformed
    ones, and those over `url_max_length` or with a host over `host_max_length`.
    """
    try:
        reference = _as_browsers_read(url)
        absolute = urljoin(base, reference) if base else reference
        parts = urlsplit(absolute)
        scheme = parts.scheme.lower()
        if scheme not in DEFAULT_PORTS:
            return None
        host = _normalize_host(parts.hostname)
        port = parts.port
    except (ValueError, UnicodeError):
        return None
    if host is None or len(host) > settings.host_max_length:
        return None
    netloc = host if port is None or port == DEFAULT_PORTS[scheme] else f"{host}:{port}"
    path = _normalize_escapes(parts.path, _PATH_SAFE)
    query = _normalize_escapes(parts.query, _QUERY_SAFE)
    if settings.url_strip_params:  # before dot segments: "/..;jsessionid=1/" is one
        path, query = _strip_params(path, query, settings.url_strip_params)
    path = _remove_dot_segments(path) or "/"
    if settings.url_sort_query and query:
        query = "&".join(sorted(query.split("&")))
    normalized = f"{scheme}://{netloc}{path}?{query}" if query else f"{scheme}://{netloc}{path}"
    return normalized if len(normalized) <= settings.url_max_length else None


def _as_browsers_read(url: str) -> str:
    """An href as WHATWG's URL parser reads it for http(s): tabs and line breaks anywhere are dropped (an
    href broken across lines), and a backslash before the query is a slash (a Windows-authored relative
    path with backslashes for separators)."""
    url = url.strip()
    if "\t" in url or "\n" in url or "\r" in url:
        url = url.translate(_TAB_AND_NEWLINE)
    if "\\" in url:
        ends = [i for i in (url.find("?"), url.find("#")) if i >= 0]
        cut = min(ends) if ends else len(url)
        url = url[:cut].replace("\\", "/") + url[cut:]
    return url


_TAB_AND_NEWLINE = str.maketrans("", "", "\t\n\r")


def strip_params(url: str, patterns: tuple[str, ...]) -> str:
    """A normalised URL without the query and ;path parameters `patterns` names (`url_strip_params`)."""
    if not patterns or ("?" not in url and ";" not in url):
        return url
    parts = urlsplit(url)
    path, query = _strip_params(parts.path, parts.query, patterns)
    if (path, query) == (parts.path, parts.query):
        return url
    path = _remove_dot_segments(path) or "/"
    return (
        f"{parts.scheme}://{parts.netloc}{path}?{query}"
        if query
        else f"{parts.scheme}://{parts.netloc}{path}"
    )


def _strip_params(path: str, query: str, patterns: tuple[str, ...]) -> tuple[str, str]:
    stripped = _stripped_names(patterns)
    if ";" in path:
        path = _PATH_PARAM.sub(lambda m: "" if stripped(m.group(1)) else m.group(0), path)
    if query:
        query = "&".join(part for part in query.split("&") if not stripped(part.split("=", 1)[0]))
    return path, query


@lru_cache(maxsize=8)
def _stripped_names(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """Whether a parameter name is one `url_strip_params` drops (case-insensitive; "x*": a prefix)."""
    names = frozenset(p.lower() for p in patterns if not p.endswith("*"))
    prefixes = tuple(p[:-1].lower() for p in patterns if p.endswith("*"))
    return lambda name: (name := name.lower()) in names or (bool(prefixes) and name.startswith(prefixes))


def host_of(url: str) -> str:
    """`host:port` in lower case with the port always spelled out: the politeness and robots key."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")
    port = parts.port or DEFAULT_PORTS.get(scheme, 0)
    if ":" in host:
        host = f"[{host}]"
    return f"{host}:{port}"


def origin_of(url: str) -> str:
    """`scheme://host[:port]` of a URL, where its robots.txt lives."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def has_repeated_segments(url: str, max_repeats: int = _DEFAULTS.url_max_repeated_segments) -> bool:
    """True when one path segment occurs more than `max_repeats` times (`/a/b/a/b/a/b/...` link loops)."""
    segments = [s for s in urlsplit(url).path.split("/") if s]
    if len(segments) <= max_repeats:
        return False
    return Counter(segments).most_common(1)[0][1] > max_repeats


def has_overlong_query(url: str, max_length: int = _DEFAULTS.url_max_query_length) -> bool:
    """True when the query string is longer than `max_length` (session ids and parameter pile-ups)."""
    return len(urlsplit(url).query) > max_length


def looks_like_trap(url: str, settings: CrawlSettings = _DEFAULTS) -> bool:
    """Syntactic trap signs; endless but well-formed link spaces need the depth limit and host budget."""
    return has_repeated_segments(url, settings.url_max_repeated_segments) or has_overlong_query(
        url, settings.url_max_query_length
    )


def _normalize_host(hostname: str | None) -> str | None:
    if not hostname:
        return None
    host = hostname.rstrip(".").lower()
    if ":" in host:  # IPv6 literal: urlsplit already removed the brackets
        return f"[{host}]"
    if not host.isascii():
        host = host.encode("idna").decode("ascii")
    return host if _HOST_CHARS.match(host) and ".." not in host else None


def _decode_unreserved(match: re.Match[str]) -> str:
    if match.group(1) is None:
        return "%25"
    char = chr(int(match.group(1), 16))
    return char if char in _UNRESERVED else "%" + match.group(1).upper()


def _normalize_escapes(part: str, safe: str) -> str:
    if not part:
        return part
    if "%" in part:
        part = _ESCAPE.sub(_decode_unreserved, part)  # one pass, so a decoded char never forms a new escape
    return quote(part, safe=safe)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 5.2.4 for an absolute path (urljoin only resolves them for relative references)."""
    if "." not in path:
        return path
    segments = path.split("/")
    out: list[str] = []
    for segment in segments[1:]:
        if segment == "..":
            if out:
                out.pop()
        elif segment != ".":
            out.append(segment)
    result = "/" + "/".join(out)
    if segments[-1] in (".", "..") and not result.endswith("/"):
        result += "/"
    return result


def host_filter(patterns: Iterable[str]) -> Callable[[str], bool]:
    """A URL predicate for `allowed_hosts`: exact names, '.suffix' for subdomains, or IP networks."""
    names: set[str] = set()
    suffixes: list[str] = []
    networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
    for pattern in patterns:
        pattern = pattern.strip().lower()
        if "/" in pattern:
            networks.append(ipaddress.ip_network(pattern, strict=False))
        elif pattern.startswith("."):
            suffixes.append(pattern)
        elif pattern:
            names.add(pattern)

    decided: dict[str, bool] = {}  # per host name: parsing addresses for every link was a cost

    def allowed(url: str) -> bool:
        host = (urlsplit(url).hostname or "").lower()
        verdict = decided.get(host)
        if verdict is None:
            if len(decided) >= 100_000:
                decided.clear()
            verdict = decided[host] = allowed_host(host)
        return verdict

    def allowed_host(host: str) -> bool:
        if host in names or any(host.endswith(s) or host == s[1:] for s in suffixes):
            return True
        if networks:
            try:
                address = ipaddress.ip_address(host)
            except ValueError:
                return False
            return any(address in network for network in networks)
        return False

    return allowed


__all__ = [
    "DEFAULT_PORTS",
    "has_overlong_query",
    "has_repeated_segments",
    "host_filter",
    "host_of",
    "looks_like_trap",
    "normalize_url",
    "origin_of",
]
