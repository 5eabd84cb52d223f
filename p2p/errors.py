"""The p2p package's exceptions: one hierarchy, so callers can catch everything a peer can cause."""

from __future__ import annotations


class P2PError(Exception):
    """Base of every error raised by the peer-to-peer layer."""


class WireError(P2PError):
    """A frame or message from a peer violated the wire rules; the message must be dropped.

    `reason` is a short stable slug (e.g. ``"oversize_frame"``, ``"bad_signature"``) that the peer ledger
    counts and the UI shows; `detail` says what exactly was wrong, for the log.
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}" if detail else reason)
