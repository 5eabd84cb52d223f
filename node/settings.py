"""The node's own knobs (`[node]` in config.toml): control API, metrics, event stream, crawl limits."""

from __future__ import annotations

from dataclasses import dataclass

from crawler.settings import doc


@dataclass(frozen=True)
class NodeSettings:
    api_port: int = doc(0, "TCP port of the control API on 127.0.0.1; 0 picks a free port (see api.json).")
    metrics_interval: float = doc(5.0, "Seconds between two metrics samples kept for the UI's plots.")
    metrics_keep: int = doc(17_280, "Most metrics samples kept (17,280 at 5 s is one day); oldest go first.")
    stats_event_interval: float = doc(
        1.0, "Seconds between two coalesced `stats` events on the event stream (a busy node never floods it)."
    )
    event_queue_size: int = doc(
        256, "Events buffered per event-stream client; a slow client loses the oldest."
    )
    max_pages: int = doc(
        0,
        "Stop crawling when this node has crawled this many documents (peers' pooled results do not count); "
        "0 means no limit.",
    )
    networked: bool = doc(
        True, "Join the peer-to-peer network (off: a private crawler; `node run --offline`)."
    )
    link_scores_pages: int = doc(
        250,
        "Search's link authority (HITS) and PageRank are computed again once the node's own pages grew by "
        "this many, or by a tenth when that is more (a large repository takes seconds).",
    )
    shutdown_grace: float = doc(
        10.0, "Seconds a shutdown waits for in-flight pages before it cancels them (they are fetched again)."
    )

    def __post_init__(self) -> None:
        if self.link_scores_pages < 1:
            raise ValueError("link_scores_pages must be 1 or more")
        if not 0 <= self.api_port <= 65535:  # 70000 passed `config check` and failed the node's start
            raise ValueError(
                f"api_port must be a TCP port, 0 to 65535 (0: any free one), not {self.api_port}"
            )
