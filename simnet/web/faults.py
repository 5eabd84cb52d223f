"""Injectable faults of the simulated web, each switchable per host (site name) or path prefix."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields

from simnet.web.errors import FaultSpecError

# kind -> what a crawler sees; parameters in brackets are Fault fields.
FAULT_KINDS: dict[str, str] = {
    "slow": "the answer starts after [delay] seconds",
    "server_error": "answers [status] (default 503) instead of the page",
    "reset": "the connection is reset (TCP RST) before any answer",
    "truncated": "Content-Length declares the whole page but only half is sent before the connection closes",
    "huge": "an HTML page of [size] bytes (default 32 MiB)",
    "gzip_bomb": "Content-Encoding gzip that inflates to [size] bytes (default 256 MiB)",
    "redirect_loop": "302 to a sibling URL that redirects back, for ever",
    "trap": "endless calendar pages under [path_prefix] (default /calendar/), linked from every page",
    "wrong_type": "HTML pages served as [content_type] (default application/octet-stream)",
    "binary_as_html": "random binary bytes served as text/html",
    "robots": "robots.txt disallows [path_prefix] and sets Crawl-delay [crawl_delay] if given "
    "(with neither, Disallow: /)",
    "robots_5xx": "robots.txt answers [status] (default 503)",
    "robots_429": "robots.txt answers 429 Too Many Requests",
}
ROBOTS_KINDS = frozenset({"robots", "robots_5xx", "robots_429"})
DEFAULT_TRAP_PREFIX = "/calendar/"


@dataclass(frozen=True)
class Fault:
    kind: str
    host: str | None = None  # site name; None for every site (never the hub)
    path_prefix: str | None = None  # None for every path
    delay: float = 2.0
    status: int | None = None
    size: int | None = None
    content_type: str = "application/octet-stream"
    crawl_delay: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise FaultSpecError(f"unknown fault kind {self.kind!r}; kinds: {', '.join(FAULT_KINDS)}")
        if self.path_prefix is not None and not self.path_prefix.startswith("/"):
            raise FaultSpecError(f"a fault's path_prefix starts with '/', not {self.path_prefix!r}")

    def applies_to_host(self, site: str) -> bool:
        return self.host is None or self.host == site

    def applies_to(self, site: str, path: str) -> bool:
        return self.applies_to_host(site) and (self.path_prefix is None or path.startswith(self.path_prefix))

    @property
    def trap_prefix(self) -> str:
        return self.path_prefix or DEFAULT_TRAP_PREFIX

    @property
    def disallowed(self) -> str:
        """The robots Disallow path: the path prefix; else "/" unless only a Crawl-delay was asked for."""
        if self.path_prefix:
            return self.path_prefix
        return "" if self.crawl_delay is not None else "/"

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v != getattr(DEFAULTS, k, None) or k == "kind"}

    @classmethod
    def from_dict(cls, data: dict) -> Fault:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise FaultSpecError(f"unknown fault fields {sorted(unknown)}; fields: {sorted(known)}")
        return cls(**data)


DEFAULTS = Fault("slow")


@dataclass(frozen=True)
class FaultPlan:
    faults: tuple[Fault, ...] = field(default_factory=tuple)

    def __init__(self, faults: Iterable[Fault] = ()):
        object.__setattr__(self, "faults", tuple(faults))

    def for_request(self, site: str, path: str) -> Fault | None:
        """The first page fault applying to a request (robots.txt and trap pages are handled apart)."""
        if path == "/robots.txt":
            return None
        for fault in self.faults:
            if fault.kind not in ROBOTS_KINDS and fault.kind != "trap" and fault.applies_to(site, path):
                return fault
        return None

    def robots_fault(self, site: str) -> Fault | None:
        for fault in self.faults:
            if fault.kind in ROBOTS_KINDS and fault.applies_to_host(site):
                return fault
        return None

    def trap(self, site: str) -> Fault | None:
        for fault in self.faults:
            if fault.kind == "trap" and fault.applies_to_host(site):
                return fault
        return None

    def disallowed_prefixes(self, site: str) -> tuple[str, ...]:
        """Paths robots.txt forbids on a site (what a polite crawler must never request)."""
        fault = self.robots_fault(site)
        if fault is None or fault.kind != "robots" or not fault.disallowed:
            return ()
        return (fault.disallowed,)

    def to_list(self) -> list[dict]:
        return [fault.to_dict() for fault in self.faults]

    @classmethod
    def from_list(cls, items: Iterable[dict]) -> FaultPlan:
        return cls(Fault.from_dict(item) for item in items)


def parse_fault(spec: str) -> Fault:
    """`KIND[:HOST[:PATH_PREFIX]][,key=value...]`, e.g. `slow:python,delay=0.5` or `robots:sqlite:/c3ref/`.

    HOST `*` or empty means every site.
    """
    head, *options = spec.split(",")
    kind, _, rest = head.partition(":")
    host, _, path_prefix = rest.partition(":")
    values: dict = {"kind": kind.strip()}
    if host.strip() not in ("", "*"):
        values["host"] = host.strip()
    if path_prefix.strip():
        values["path_prefix"] = path_prefix.strip()
    types = {f.name: f.type for f in fields(Fault)}
    for option in options:
        key, eq, value = option.partition("=")
        key = key.strip()
        if not eq or key not in types or key in ("kind", "host", "path_prefix"):
            raise FaultSpecError(
                f"bad fault option {option!r} in {spec!r}; use key=value with key in "
                "delay, status, size, content_type, crawl_delay"
            )
        try:
            values[key] = {"delay": float, "crawl_delay": float, "status": int, "size": int}.get(key, str)(
                value
            )
        except ValueError as exc:
            raise FaultSpecError(f"bad value for {key} in {spec!r}: {exc}") from None
    return Fault(**values)
