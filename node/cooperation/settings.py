"""Every knob of the cooperation layer (thesis 3.3) and its default, in one place."""

from __future__ import annotations

from dataclasses import dataclass

from crawler.settings import doc
from p2p.message_limits import MAX_HELD_FILTER_BYTES

MAX_CLUSTERS = 32  # subtopics one refinement may propose (the API's and the CLI's bound on k)


@dataclass(frozen=True)
class CooperationSettings:
    sync_interval: float = doc(
        10.0, "Seconds between two cooperation rounds (announce, fetch new models, sync results)."
    )
    request_timeout: float = doc(
        20.0,
        "Seconds a model fetch counts as under way: another fetch of the same model waits this long for it "
        "instead of transferring it twice (each request is bounded by p2p.request_timeout).",
    )
    default_loss: float = doc(0.2, "Loss of restrictive filtering until the user sets one (thesis 3.2.1).")
    error_goal: float = doc(
        0.0, "Default error goal of a meta build (0: none; the peer count then follows the loss alone)."
    )
    max_meta_peers: int = doc(16, "Most peers whose classifiers one meta-classifier combines.")
    min_training_docs: int = doc(
        2, "Positive training documents a topic needs before its local model is trained and offered."
    )
    results_per_sync: int = doc(200, "Most crawl results asked from one peer per topic and round.")
    preview_chars: int = doc(
        100,
        "Characters of a result's content sent to syncing peers as its preview (the search snippet): "
        "its first sentences of running text, menus and lines its site repeats left out.",
    )
    max_backoff_rounds: int = doc(
        8, "Most rounds a peer with nothing new (no results, no model) waits before it is asked again."
    )
    prune_agreement: float = doc(
        0.95,
        "Share of the node's documents (its newest crawled ones and its labelled ones) whose filtering "
        "decision a shipped model must keep when its smallest weights are dropped (1: ship every weight).",
    )
    republish_agreement: float = doc(
        0.95,
        "A retrained local model replaces the published one (a new version every peer fetches) only when "
        "its filtering decisions on the node's own documents agree with the published model's on less "
        "than this share (1: every retraining is published).",
    )
    share_kept_only: bool = doc(
        True,
        "Offer peers only the results the node's restrictive filter keeps at the topic's loss (false: "
        "every result its crawler accepted).",
    )
    held_filter_fp_rate: float = doc(
        0.01,
        "False-positive rate of the Bloom filter of held URLs a result sync sends, so the peer leaves out "
        "what this node holds already (a false positive: one new result not sent; 0: send no filter).",
    )
    held_filter_max_bytes: int = doc(
        16384,
        "Largest held-URL filter a result sync sends (about 13,600 URLs at 1%; with more, the newest go "
        "in and older ones may come back as duplicates).",
    )
    share_results: int = doc(
        2000,
        "Most of a topic's own accepted results offered to peers: its most confident ones (0: none).",
    )
    hub_seeds: int = doc(5, "Pooled URLs of peers' most confident pages queued as local seeds per round.")
    cluster_k: int = doc(3, "Default number of subtopics a refinement proposes.")
    cluster_loss: float = doc(0.3, "Share of a topic's documents the meta clustering may leave unassigned.")
    hostile: bool = doc(
        False, "Testing only: offer label-flipped models (shows that hostile models end up with no say)."
    )

    def __post_init__(self) -> None:
        if not 0.0 <= self.default_loss < 1.0 or not 0.0 <= self.cluster_loss < 1.0:
            raise ValueError("default_loss and cluster_loss must lie in [0, 1)")
        if not 0.5 <= self.prune_agreement <= 1.0 or not 0.5 <= self.republish_agreement <= 1.0:
            raise ValueError("prune_agreement and republish_agreement must lie in [0.5, 1]")
        if not 0 <= self.preview_chars <= 2048 or self.max_backoff_rounds < 1:
            raise ValueError("preview_chars must lie in [0, 2048] and max_backoff_rounds be >= 1")
        if not 0.0 <= self.error_goal < 1.0:
            raise ValueError("error_goal must lie in [0, 1) (0: none)")
        if self.share_results < 0:
            raise ValueError("share_results must be >= 0 (0: offer peers no results)")
        if not 0.0 <= self.held_filter_fp_rate < 1.0:
            raise ValueError("held_filter_fp_rate must lie in [0, 1) (0: no filter)")
        if not 1 <= self.held_filter_max_bytes <= MAX_HELD_FILTER_BYTES:
            raise ValueError(f"held_filter_max_bytes must lie in [1, {MAX_HELD_FILTER_BYTES}]")
        if self.sync_interval <= 0 or self.request_timeout <= 0 or not 2 <= self.cluster_k <= MAX_CLUSTERS:
            raise ValueError(
                f"sync_interval and request_timeout must be > 0, cluster_k in [2, {MAX_CLUSTERS}]"
            )
