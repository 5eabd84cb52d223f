"""The error a node answers a request it cannot serve with (`kind`, `detail`, HTTP status), in a module of
its own so that the service's parts, the API and the CLI raise it without importing the service, which loads
the crawler."""

from __future__ import annotations


class NodeServiceError(Exception):
    """A request the node cannot serve; `kind` and `status` become the API's JSON error."""

    def __init__(self, kind: str, detail: str, status: int = 400) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.status = status


def shown(value: object, limit: int = 60) -> str:
    """A caller's value quoted in an error message, cut to `limit` characters: an answer echoing a
    100,000-character topic name back is no help."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def not_found(what: str) -> NodeServiceError:
    return NodeServiceError("not_found", what, 404)


def unavailable(detail: str) -> NodeServiceError:
    return NodeServiceError("unavailable", detail, 503)
