"""What crawler tests on httpx's mock transport share: streamed responses and a hand-moved calendar."""

from __future__ import annotations

import httpx


async def _stream(data: bytes):
    yield data


def streamed_response(status: int, body: bytes, headers: dict[str, str] | None = None) -> httpx.Response:
    """A response whose body arrives as a stream, as the fetcher reads a real server's."""
    return httpx.Response(
        status, headers={**(headers or {}), "content-length": str(len(body))}, content=_stream(body)
    )


class Calendar:
    """A crawler's wall clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now
