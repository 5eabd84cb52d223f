"""Typed records of the control API's answers: the UI never passes the node's raw JSON between widgets.

Each record reads its answer leniently (missing fields get neutral defaults) so that a node one version
ahead or behind still shows what it can instead of crashing the UI.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def _f(value: Any, default: float = 0.0) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def _i(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return default


def _counts(value: Any) -> dict[str, int]:
    return {str(k): _i(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _rates(value: Any) -> dict[str, float]:
    return {str(k): _f(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list | tuple) else ()


@dataclass(frozen=True)
class CrawlFigures:
    """The crawl's live figures (a `stats` event, or `status.crawl`)."""

    state: str = "stopped"  # what the user set: running, paused, stopped
    active: bool = False
    pages: int = 0
    pages_per_s: float = 0.0  # over the last few seconds; 0 while nothing is fetched
    frontier_size: int = 0
    errors_by_kind: dict[str, int] = field(default_factory=dict)
    bytes_crawled: int = 0
    activity: str = ""  # crawling, pausing, stopping, finished, paused, stopped, waiting, idle
    detail: str = ""  # why it does not crawl, and what to do
    session_pages_per_s: float = 0.0  # pages since the node started over the seconds it crawled
    revisited: int = 0  # stored pages fetched again (crawler.revisits)
    changed: int = 0  # of which had changed
    hosts_waiting: int = 0  # hosts that failed repeatedly, their links waiting for a try
    links_waiting: int = 0
    in_flight: int = 0  # requests waiting for their answer

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CrawlFigures:
        active = bool(data.get("active", False))
        session = data.get("session") if isinstance(data.get("session"), dict) else {}
        revisits = data.get("revisits") if isinstance(data.get("revisits"), dict) else {}
        waiting = data.get("hosts_waiting") if isinstance(data.get("hosts_waiting"), dict) else {}
        return cls(
            state=str(data.get("state", "stopped")),
            active=active,
            pages=_i(data.get("pages")),
            pages_per_s=_f(data.get("pages_per_s")),
            frontier_size=_i(data.get("frontier_size")),
            in_flight=_i(data.get("in_flight")),
            errors_by_kind=_counts(data.get("errors_by_kind")),
            bytes_crawled=_i(data.get("bytes_crawled")),
            activity=str(data.get("activity") or ("crawling" if active else data.get("state", "stopped"))),
            detail=str(data.get("detail") or ""),
            session_pages_per_s=_f(session.get("pages_per_s")),
            revisited=_i(revisits.get("fetched")),
            changed=_i(revisits.get("changed")),
            hosts_waiting=_i(waiting.get("hosts")),
            links_waiting=_i(waiting.get("links")),
        )

    def headline(self) -> str:
        """ "crawling", or "crawl finished", "crawl paused", ... when the crawler does not run."""
        activity = self.activity or ("crawling" if self.active else self.state)
        return "crawling" if activity == "crawling" else f"crawl {activity}"

    def rate_text(self) -> str:
        """pages/s while crawling; the average since the node started once it stopped (a bare 0.0 would
        say nothing)."""
        if self.active:
            return f"{self.pages_per_s:.1f} pages/s"
        if self.session_pages_per_s:
            return f"averaged {self.session_pages_per_s:.1f} pages/s"
        return "0 pages/s"


@dataclass(frozen=True)
class Status:
    peer_id: str | None
    crawl: CrawlFigures
    harvest: dict[str, float]
    peers_online: int
    bytes_in: int
    bytes_out: int
    local_documents: int
    pooled_documents: int
    networked: bool
    cooperation: bool
    addrs: tuple[str, ...] = ()
    """Where other nodes join this one (`--bootstrap`)."""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Status:
        traffic = data.get("bytes_exchanged") or {}
        documents = data.get("documents") or {}
        return cls(
            peer_id=data.get("peer_id"),
            crawl=CrawlFigures.from_json(data.get("crawl") or {}),
            harvest=_rates(data.get("harvest")),
            peers_online=_i(data.get("peers_online")),
            bytes_in=_i(traffic.get("in")),
            bytes_out=_i(traffic.get("out")),
            local_documents=_i(documents.get("local")),
            pooled_documents=_i(documents.get("pooled")),
            networked=bool(data.get("networked", False)),
            cooperation=bool(data.get("cooperation", False)),
            addrs=_strings(data.get("addrs")),
        )


@dataclass(frozen=True)
class MetricSample:
    """One row of the node's metrics history."""

    t: float
    pages: int
    pages_per_s: float
    frontier_size: int
    errors: dict[str, int]
    peers_online: int
    bytes_in: int
    bytes_out: int
    harvest: dict[str, float]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MetricSample:
        return cls(
            t=_f(data.get("t")),
            pages=_i(data.get("pages")),
            pages_per_s=_f(data.get("pages_per_s")),
            frontier_size=_i(data.get("frontier_size")),
            errors=_counts(data.get("errors")),
            peers_online=_i(data.get("peers_online")),
            bytes_in=_i(data.get("bytes_in")),
            bytes_out=_i(data.get("bytes_out")),
            harvest=_rates(data.get("harvest")),
        )


def topic_choice(key: str, width: int) -> str:
    """A topic key as a drop-down shows it in `width` columns: its end, where a subtopic's name is
    ("Databases/Transactio" wrapped onto a second line as "ns")."""
    return key if len(key) <= width else "…" + key[-(width - 1) :]


def transport_address(addr: str, peer_id: str) -> str:
    """A peer's multiaddr without the "/p2p/<its id>" its id column already names: the part that says where
    it is (the whole one was cut at 100 columns in the Peers screen, its host and port with it)."""
    return addr.removesuffix(f"/p2p/{peer_id}")


def short_peer_id(peer_id: str) -> str:
    """A peer id as every screen shows it: its start and its end (every id starts "12D3KooW", so the start
    alone named every peer alike)."""
    return peer_id if len(peer_id) <= 14 else f"{peer_id[:6]}…{peer_id[-6:]}"


@dataclass(frozen=True)
class Topic:
    key: str
    name: str
    parent: str | None
    local: int
    pooled: int
    harvest_rate: float
    accuracy: float | None  # the topic's meta-classifier on held-out labelled documents
    keywords: tuple[str, ...]
    crawl: str
    model_version: str | None
    accuracy_on: str = ""  # how the accuracy was measured
    accuracy_why: str = ""  # why there is none
    measuring: bool = False  # the node is measuring the accuracy now: ask again soon
    fetched: int | None = None  # pages fetched for the topic (0: not crawled yet; None: the node did not say)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Topic:
        quality = data.get("quality") or {}
        accuracy = quality.get("accuracy") if isinstance(quality, dict) else None
        version = data.get("model_version")
        return cls(
            key=str(data.get("key", "")),
            name=str(data.get("name") or data.get("key", "")),
            parent=data.get("parent") or None,
            local=_i(data.get("local")),
            pooled=_i(data.get("pooled")),
            harvest_rate=_f(data.get("harvest_rate")),
            accuracy=None if accuracy is None else _f(accuracy),
            keywords=_strings(data.get("keywords")),
            crawl=str(data.get("crawl", "stopped")),
            model_version=None if version is None else str(version),
            accuracy_on=str(quality.get("measured_on") or "") if isinstance(quality, dict) else "",
            accuracy_why=str(quality.get("why") or "") if isinstance(quality, dict) else "",
            measuring=bool(quality.get("measuring")) if isinstance(quality, dict) else False,
            fetched=None if data.get("fetched") is None else _i(data.get("fetched")),
        )

    @property
    def harvest(self) -> str:
        """The harvest rate to show: none before a page was fetched for the topic (0.00 read as a failure)."""
        return "not crawled yet" if self.fetched == 0 else f"{self.harvest_rate:.2f}"


@dataclass(frozen=True)
class Hit:
    doc_id: int
    url: str
    title: str
    topic: str
    confidence: float
    origin: str
    origins: tuple[str, ...]
    score: float
    preview: str
    verdict: str

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Hit:
        return cls(
            doc_id=_i(data.get("doc_id")),
            url=str(data.get("url", "")),
            title=str(data.get("title") or data.get("url", "")),
            topic=str(data.get("topic") or ""),
            confidence=_f(data.get("confidence")),
            origin=str(data.get("origin") or "local"),
            origins=_strings(data.get("origins")),
            score=_f(data.get("score")),
            preview=str(data.get("preview") or ""),
            verdict=str(data.get("verdict") or ""),
        )

    @property
    def is_local(self) -> bool:
        return self.origin in ("local", "")


@dataclass(frozen=True)
class SearchResults:
    query: str
    hits: tuple[Hit, ...]
    total: int
    prefix: bool = False  # few pages had the words whole: the hits include words they start
    widened_total: int | None = None  # no hits: the results without the filters (None: not asked)
    browsed: bool = False  # no words to look for: the most confident results under the filters


@dataclass(frozen=True)
class Document:
    """A stored page as GET /api/documents/ID describes it: where it came from, how it was judged, and the
    first 2,000 characters of its text."""

    doc_id: int
    url: str
    title: str
    topic: str
    confidence: float | None
    accepted: bool
    verdict: str
    origin: str
    fetched_at: float
    lang: str
    size: int
    links: int
    depth: int
    text: str
    text_length: int
    duplicate_of: int | None
    feedback: tuple[str, ...]  # kinds given, oldest first: relevant, irrelevant, opened

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Document:
        confidence = data.get("confidence")
        duplicate = data.get("duplicate_of") or data.get("near_duplicate_of")
        feedback = data.get("feedback") if isinstance(data.get("feedback"), list) else []
        return cls(
            doc_id=_i(data.get("doc_id")),
            url=str(data.get("final_url") or data.get("url") or ""),
            title=str(data.get("title") or data.get("url") or ""),
            topic=str(data.get("topic") or ""),
            confidence=None if confidence is None else _f(confidence),
            accepted=bool(data.get("accepted")),
            verdict=str(data.get("verdict") or ""),
            origin=str(data.get("origin") or "local"),
            fetched_at=_f(data.get("fetched_at")),
            lang=str(data.get("lang") or ""),
            size=_i(data.get("bytes")),
            links=_i(data.get("links")),
            depth=_i(data.get("depth")),
            text=str(data.get("text_preview") or ""),
            text_length=_i(data.get("text_length")),
            duplicate_of=None if duplicate is None else _i(duplicate),
            feedback=tuple(str(f.get("kind", "")) for f in feedback if isinstance(f, dict)),
        )


@dataclass(frozen=True)
class Rejection:
    reason: str
    count: int


@dataclass(frozen=True)
class NearbyCommunity:
    """A community the neighbours are in and the node is not, with the node's topics it may be another
    name for (peers meet on a topic only when their keys are equal)."""

    key: str
    peers: int
    alike: tuple[str, ...]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> NearbyCommunity:
        return cls(str(data.get("key", "")), _i(data.get("peers")), _strings(data.get("alike")))


@dataclass(frozen=True)
class Peer:
    peer_id: str
    addrs: tuple[str, ...]
    last_seen: float
    shared_topics: tuple[str, ...]
    bytes_in: int
    bytes_out: int
    rejected: tuple[Rejection, ...]
    blocked: bool = False  # the user blocked it: last_seen is when

    @classmethod
    def blocked_from_json(cls, data: dict[str, Any]) -> Peer:
        """A row of the API's blocked list."""
        return cls(str(data.get("peer_id", "")), (), _f(data.get("blocked_at")), (), 0, 0, (), blocked=True)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Peer:
        rejected = data.get("rejected") or []
        return cls(
            peer_id=str(data.get("peer_id", "")),
            addrs=_strings(data.get("addrs")),
            last_seen=_f(data.get("last_seen")),
            shared_topics=_strings(data.get("shared_topics")),
            bytes_in=_i(data.get("bytes_in")),
            bytes_out=_i(data.get("bytes_out")),
            rejected=tuple(
                Rejection(str(r.get("reason", "")), _i(r.get("count")))
                for r in rejected
                if isinstance(r, dict)
            ),
        )


@dataclass(frozen=True)
class ReceivedModel:
    topic: str
    origin: str
    version: str
    kind: str
    accuracy_local: float | None
    weight: float | None  # from its accuracy on this node's labelled documents alone
    received_at: float
    evaluated: int = 0
    meta_weight: float | None = None  # its say in the topic's last meta build (None before any build)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReceivedModel:
        """Since `weight_measured` exists, `weight` is the meta build's weight; before, the label one."""
        accuracy = data.get("accuracy_local")
        split = "weight_measured" in data
        weight = data.get("weight_measured") if split else data.get("weight")
        meta_weight = data.get("weight") if split else None
        return cls(
            topic=str(data.get("topic", "")),
            origin=str(data.get("origin") or "local"),
            version=str(data.get("version", "")),
            kind=str(data.get("kind", "")),
            accuracy_local=None if accuracy is None else _f(accuracy),
            weight=None if weight is None else _f(weight),
            received_at=_f(data.get("received_at")),
            evaluated=_i(data.get("evaluated")),
            meta_weight=None if meta_weight is None else _f(meta_weight),
        )


@dataclass(frozen=True)
class CurvePoint:
    loss: float
    accuracy: float


@dataclass(frozen=True)
class MetaState:
    """The current meta-classifier of a topic: its loss/accuracy trade-off and the chosen loss."""

    topic: str
    loss: float
    curve: tuple[CurvePoint, ...]  # on the labelled documents the local model trained on (optimistic)
    kept: int
    abstained: int
    held_out: tuple[CurvePoint, ...] = ()  # k-fold cross-validated on the same documents
    held_out_documents: int = 0
    held_out_folds: int = 0
    held_out_why: str = "the node measured no held-out curve"
    rejected: int = 0

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MetaState:
        held = data.get("held_out") if isinstance(data.get("held_out"), dict) else {}
        return cls(
            topic=str(data.get("topic", "")),
            loss=_f(data.get("loss")),
            curve=_curve(data.get("curve")),
            kept=_i(data.get("kept")),
            abstained=_i(data.get("abstained")),
            held_out=_curve(held.get("curve")),
            held_out_documents=_i(held.get("documents")),
            held_out_folds=_i(held.get("folds")),
            held_out_why=str(held.get("why") or ("" if held else cls.held_out_why)),
            rejected=_i(data.get("rejected")),
        )


def _curve(points: Any) -> tuple[CurvePoint, ...]:
    """The decided points of a loss/accuracy curve (a loss at which nothing is decided has no accuracy)."""
    if not isinstance(points, list):
        return ()
    return tuple(
        CurvePoint(_f(p.get("loss")), _f(p.get("accuracy")))
        for p in points
        if isinstance(p, dict) and p.get("accuracy") is not None
    )


@dataclass(frozen=True)
class LossSetting:
    loss: float
    kept: int
    abstained: int
    rejected: int = 0

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LossSetting:
        return cls(
            _f(data.get("loss")), _i(data.get("kept")), _i(data.get("abstained")), _i(data.get("rejected"))
        )


PENDING = "open"  # the node's status of a proposal nobody decided on yet


@dataclass(frozen=True)
class Proposal:
    """A clustering proposal: a candidate subtopic of `topic`."""

    id: str
    topic: str
    label: str
    top_terms: tuple[str, ...]
    sample_titles: tuple[str, ...]
    size: int
    abstained: int
    status: str  # "open" until the user accepts or rejects it
    learns: str = ""  # an acceptance's answer: what the new subtopic trains on and what follows

    @property
    def pending(self) -> bool:
        return self.status == PENDING

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Proposal:
        return cls(
            id=str(data.get("id", "")),
            topic=str(data.get("topic", "")),
            label=str(data.get("label", "")),
            top_terms=_strings(data.get("top_terms")),
            sample_titles=_strings(data.get("sample_titles")),
            size=_i(data.get("size")),
            abstained=_i(data.get("abstained")),
            status=str(data.get("status", PENDING)),
            learns=str(data.get("learns") or ""),
        )
