"""Every peer-to-peer knob and its default, in one place.

The node's `config.toml` overrides these under `[p2p]`. Defaults suit a node on the open Internet; tests and
the simulated networks shorten the periods and the TTL.
"""

from __future__ import annotations

from dataclasses import dataclass, field


def doc(default: object, text: str) -> object:
    """A dataclass field with its documentation (p2p must not import crawler, so not shared from there)."""
    return field(default=default, metadata={"doc": text})


@dataclass(frozen=True)
class P2PSettings:
    listen_addrs: tuple[str, ...] = doc(
        ("/ip4/0.0.0.0/tcp/4001",), "Multiaddrs the host listens on (TCP; port 0 picks a free port)."
    )
    bootstrap: tuple[str, ...] = doc(
        (), "Multiaddrs with /p2p/<peer id> of live peers to join through; one reachable address is enough."
    )
    neighbour_list_size: int = doc(
        40, "Most entries in the neighbour list (thesis 3.3.1: log2(N) + c with c >= 25 keeps it connected)."
    )
    exchange_period: float = doc(10.0, "Seconds between two push-pull neighbour exchanges.")
    max_exchange_period: float = doc(
        60.0,
        "Longest pause between exchanges: the pause doubles from exchange_period while exchanges teach "
        "the node no new peer or address (and it is within max_connections), up to this and a quarter "
        "of neighbour_ttl; any change brings it back to exchange_period.",
    )
    max_connections: int = doc(
        12,
        "Most open peer connections: beyond it, idle ones outside the gossip mesh are closed (least recently "
        "contacted first) and exchanges go to connected neighbours, so a node's load stays flat as the "
        "network grows. A node with fewer than gossip_degree connections dials random neighbours.",
    )
    neighbour_ttl: float = doc(
        300.0, "Seconds after its last contact that a neighbour is dropped (how a dead peer disappears)."
    )
    connect_timeout: float = doc(5.0, "Seconds to wait for a dial, including the Noise handshake.")
    request_timeout: float = doc(20.0, "Seconds a request/response exchange may take before it is abandoned.")
    fetch_attempts: int = doc(
        8,
        "Rounds of asking for an announced model (its community neighbours one at a time, the origin "
        "among them) before waiting for its next announcement; a round in which nobody served it is "
        "followed by a back-off.",
    )
    fetch_retry_delay: float = doc(
        2.0,
        "Seconds of back-off after the first round in which no neighbour served an announced model; "
        "doubles with each such round, up to 4x (each jittered x0.5-1.5).",
    )
    fetch_ask_gap: float = doc(
        2.0,
        "Seconds between two model requests of one fetch (jittered x0.5-1.5): asking a whole "
        "neighbourhood back to back was a request storm (100 in-process hosts: ~2,000 streams a second; "
        "at 1 s, 86 of 934 requests timed out).",
    )
    fetch_dial_patience: float = doc(
        10.0,
        "Seconds a fetch asks only connected community neighbours before it also dials the model's origin "
        "(jittered x0.5-1.5); every member dialling the origin at once is a star, not a spread.",
    )
    model_uploads_per_window: int = doc(
        2,
        "Uploads of one model (this node's own or a relayed one; each topic and origin has its own cap) "
        "to peers pulling it, per model_upload_window; beyond, a pull is answered 'busy' and the asker "
        "tries another holder, so a new model spreads as a tree. Direct requests for the node's own "
        "model (schema 1) are not capped.",
    )
    model_upload_window: float = doc(
        10.0, "Seconds over which model_uploads_per_window applies (an upload that dies frees its slot)."
    )
    gossip_degree: int = doc(6, "Gossipsub mesh degree D (peers each topic message is pushed to directly).")
    gossip_heartbeat: int = doc(1, "Seconds between gossipsub heartbeats (the library default is 120).")
    announce_interval: float = doc(
        60.0,
        "Shortest seconds between periodic re-announcements of a held topic (and its DHT provider records); "
        "larger communities re-announce less often, see reannounce_rate_per_topic.",
    )
    reannounce_rate_per_topic: float = doc(
        1.0,
        "Periodic re-announcements per second summed over a topic's whole community: a member re-announces "
        "every max(announce_interval, community size / this) s, so gossip load stays flat as it grows "
        "(a new model version is still announced at once).",
    )
    announce_batch_max: int = doc(64, "Most topic keys carried by one announcement message.")
    announce_rate_per_topic: float = doc(
        2.0, "Announcements published per second per topic at most (gossipsub drops above about 10)."
    )
    announce_rate_total: float = doc(
        8.0,
        "Announcements this node publishes per second over all its topics at most (bursts of twice that): "
        "its peers count each against its request rate, and 150 topics announced at once got a node banned.",
    )
    max_topics_per_peer: int = doc(
        1024,
        "Gossip topics (topic communities) of one peer that this node's router takes note of; a peer's "
        "further topics are ignored (py-libp2p's default of 100 ignored a node with more folders).",
    )
    requests_per_second: float = doc(
        20.0, "Requests one remote peer may make per second (token-bucket rate)."
    )
    request_burst: int = doc(40, "Requests one remote peer may make in a burst before the rate applies.")
    max_violations: int = doc(
        20, "Protocol violations after which a peer is refused service until the node restarts."
    )
    enable_mdns: bool = doc(
        False, "Discover peers on the LAN with mDNS (off by default: it announces the node)."
    )
    dht_enabled: bool = doc(True, "Run the Kademlia DHT (provider records let newcomers find a community).")
