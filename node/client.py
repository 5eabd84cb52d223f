"""The one Python client of the node's control API (used by the CLI, the TUI and scripts).

`NodeClient` is synchronous (the CLI), `AsyncNodeClient` asynchronous (the TUI under asyncio, tests under
trio: httpx runs on both). Both have one method per endpoint, defined once in `_Endpoints`, and raise
`NodeUnreachable` (no node answers), `Unauthorised` (wrong token) or `NodeError(kind, detail)`. They never
use the environment's proxy: the API is on loopback, and its bearer token must not reach a proxy.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self
from urllib.parse import quote

import httpx

from node.datadir import DataDir

DEFAULT_TIMEOUT = 30.0
SLOW_TIMEOUT = 600.0  # imports fetch every bookmarked page; meta builds wait for peers


class ClientError(Exception):
    """Base of the client's errors; the message says what to do."""


class NodeUnreachable(ClientError):
    """No node answers for this data directory (not started, exited, or still starting)."""


class NodeStopping(NodeUnreachable):
    """The node is stopping: it no longer takes requests, and still holds its data directory."""


class Unauthorised(ClientError):
    """The node refused the token: the client read another node's token or a stale one."""


class NodeError(ClientError):
    """The node answered with an error: `kind` (machine-readable) and `detail` (what to do)."""

    def __init__(self, kind: str, detail: str, status: int = 0) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.status = status


@dataclass(frozen=True)
class NodeAddress:
    url: str
    token: str
    pid: int | None = None


def node_address(data: DataDir) -> NodeAddress:
    """Where the node of `data` listens; NodeUnreachable when none runs there."""
    hint = f"start one with `topicswarm node run --data {data.root}`"
    try:
        info = json.loads(data.api_address.read_text())
    except FileNotFoundError as exc:
        if (absent := data.absence()) is not None:  # a mistyped --data: a node started there is new
            raise NodeUnreachable(absent) from exc
        raise NodeUnreachable(f"no node is running for {data.root}: {hint}") from exc
    except (OSError, json.JSONDecodeError) as exc:
        raise NodeUnreachable(f"{data.api_address} is unreadable ({exc}): {hint}") from exc
    pid = info.get("pid")
    if isinstance(pid, int) and not _alive(pid):
        raise NodeUnreachable(f"the node for {data.root} (pid {pid}) has exited: {hint}")
    if info.get("stopping"):
        raise NodeStopping(
            f"the node for {data.root} (pid {pid}) is stopping: it lets in-flight pages finish and saves its "
            f"frontier and state; `topicswarm node run --data {data.root}` resumes once it has exited"
        )
    if not data.api_token.exists():
        raise Unauthorised(f"{data.api_token} is missing: restart the node to create it")
    return NodeAddress(info["url"], data.api_token.read_text().strip(), pid)


def node_running(data: DataDir) -> bool:
    """Whether a live node holds this data directory (api.json present and its process alive), also while
    it stops."""
    try:
        node_address(data)
    except NodeStopping:
        return True
    except ClientError:
        return False
    return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _raise_for(response: httpx.Response, data: DataDir | None = None) -> Any:
    """The answer's JSON, or its error; `data`: the directory the token came from, for a refusal to name."""
    if response.status_code < 400:
        return response.json()
    try:
        body = response.json()
        kind, detail = str(body.get("error", "http")), str(body.get("detail", response.text))
    except (json.JSONDecodeError, AttributeError):
        kind, detail = "http", response.text or response.reason_phrase
    if response.status_code == 401 and data is not None:  # the CLI and the UI sent the file's token
        raise Unauthorised(
            f"the node at {response.url.scheme}://{response.url.netloc.decode()} refused the token in "
            f"{data.api_token}: it runs with another one (was the file replaced after it started?); "
            f"restart it (`topicswarm node run --data {data.root}`) to use this one"
        )
    if response.status_code == 401:
        raise Unauthorised(f"the node refused the token: {detail}")
    raise NodeError(kind, detail, response.status_code)


def _unreachable(url: str, exc: Exception) -> NodeUnreachable:
    return NodeUnreachable(f"the node at {url} does not answer ({type(exc).__name__}): is it still running?")


class _Endpoints:
    """One method per endpoint; `_call` (sync or async) does the request with `_http`, an instance of
    `_http_class` (httpx.Client or httpx.AsyncClient)."""

    _http_class: type[httpx.Client] | type[httpx.AsyncClient]

    def __init__(self, url: str, token: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.url = url.rstrip("/")
        self.data: DataDir | None = None  # where the token came from (from_data_dir)
        self._http = self._http_class(
            base_url=self.url, headers={"Authorization": f"Bearer {token}"}, timeout=timeout, trust_env=False
        )

    @classmethod
    def from_data_dir(cls, path: Path | str | DataDir, timeout: float = DEFAULT_TIMEOUT) -> Self:
        """A client of the node running on the data directory, its address and token read from there."""
        data = path if isinstance(path, DataDir) else DataDir(Path(path))
        address = node_address(data)
        client = cls(address.url, address.token, timeout)
        client.data = data
        return client

    def _call(
        self, method: str, path: str, *, params: Any = None, body: Any = None, timeout: float = 0
    ) -> Any:
        raise NotImplementedError

    def status(self) -> Any:
        return self._call("GET", "/api/status")

    def metrics(self, since: float = 0.0) -> Any:
        return self._call("GET", "/api/metrics", params={"since": since})

    def topics(self) -> Any:
        return self._call("GET", "/api/topics")

    def import_topics(
        self, *, bookmarks_html: str | None = None, path: str | Path | None = None, fetch: bool = True
    ) -> Any:
        """`fetch=False` stores the bookmarks unfetched (the node's focus loop fetches them later)."""
        body: dict[str, Any] = (
            {"bookmarks_html": bookmarks_html} if bookmarks_html is not None else {"path": str(path)}
        )
        if not fetch:
            body["fetch"] = False
        return self._call("POST", "/api/topics/import", body=body, timeout=SLOW_TIMEOUT)

    def set_keywords(self, topic: str, keywords: list[str]) -> Any:
        path = quote(topic, safe="/")  # a key holds "%2F" for "/" in a folder name, and may hold "?" or "#"
        return self._call("PUT", f"/api/topics/{path}/keywords", body={"keywords": keywords})

    def stop_node(self) -> Any:
        """Stop the node as SIGTERM does: {"stopping": true, "pid"}; its API closes once it has stopped."""
        return self._call("POST", "/api/node/stop")

    def crawl(self, action: str, topic: str | None = None) -> Any:
        """`action`: start, pause or stop; all topics when `topic` is None."""
        return self._call("POST", f"/api/crawl/{action}", body={"topic": topic} if topic else {})

    def revisit(self, urls: list[str] | None = None) -> Any:
        """Make these stored pages (every one when `urls` is None) due for a revisit now."""
        return self._call(
            "POST", "/api/crawl/revisit", body={"all": True} if urls is None else {"urls": urls}
        )

    def search(
        self,
        q: str = "",
        *,
        topic: str | None = None,
        include_descendants: bool = True,
        origin: str = "any",
        verdict: str = "accepted",
        limit: int = 10,
        offset: int = 0,
        weights: str | None = None,
        user: str | None = None,
        syntax: str = "plain",
    ) -> Any:
        """`q` without words to match browses (the most confident results under the filters); `weights`:
        "SIGNAL=W,..."; `user`: whose feedback-fitted weights rank (default: the default user's); `syntax`:
        "plain" words or "fts5" query syntax."""
        params: dict[str, Any] = {
            "q": q,
            "include_descendants": int(include_descendants),
            "origin": origin,
            "verdict": verdict,
            "limit": limit,
            "offset": offset,
        }
        if topic:
            params["topic"] = topic
        if weights:
            params["weights"] = weights
        if user:
            params["user"] = user
        if syntax != "plain":
            params["syntax"] = syntax
        return self._call("GET", "/api/search", params=params)

    def document(self, doc_id: int) -> Any:
        return self._call("GET", f"/api/documents/{doc_id}")

    def feedback(
        self,
        doc_id: int,
        *,
        relevant: bool | None = None,
        opened: bool = False,
        query: str | None = None,
        user: str | None = None,
    ) -> Any:
        body: dict[str, Any] = {"doc_id": doc_id} | ({"user": user} if user else {})
        if relevant is not None:
            body["relevant"] = relevant
        elif opened:
            body["opened"] = True
        if query:
            body["query"] = query
        return self._call("POST", "/api/feedback", body=body)

    def peers(self) -> Any:
        return self._call("GET", "/api/peers")

    def block_peer(self, peer: str) -> Any:
        """Shut out a peer (its id or the start of one): refused, and what it sent removed."""
        return self._call("POST", "/api/peers/block", body={"peer": peer}, timeout=SLOW_TIMEOUT)

    def unblock_peer(self, peer: str) -> Any:
        return self._call("POST", "/api/peers/unblock", body={"peer": peer})

    def models(self, topic: str | None = None) -> Any:
        return self._call("GET", "/api/models", params={"topic": topic} if topic else None)

    def build_meta(self, topic: str, loss: float | None = None, error_goal: float | None = None) -> Any:
        body: dict[str, Any] = {"topic": topic}
        if loss is not None:
            body["loss"] = loss
        if error_goal is not None:
            body["error_goal"] = error_goal
        return self._call("POST", "/api/meta/build", body=body, timeout=SLOW_TIMEOUT)

    def meta(self, topic: str) -> Any:
        return self._call("GET", "/api/meta", params={"topic": topic})

    def set_loss(self, topic: str, loss: float) -> Any:
        return self._call("PUT", "/api/meta/loss", body={"topic": topic, "loss": loss})

    def refine(self, topic: str, k: int | None = None) -> Any:
        """Subtopic proposals of `k` clusters (None: the node's `cooperation.cluster_k`)."""
        body: dict[str, Any] = {"topic": topic} if k is None else {"topic": topic, "k": k}
        return self._call("POST", "/api/refine", body=body, timeout=SLOW_TIMEOUT)

    def proposals(self, topic: str | None = None) -> Any:
        return self._call("GET", "/api/refine", params={"topic": topic} if topic else None)

    def accept_proposal(self, proposal_id: str | int, name: str | None = None) -> Any:
        """The proposal made a subtopic; the crawl's topic model is retrained with it before the answer."""
        body = {"name": name} if name else {}
        return self._call("POST", f"/api/refine/{proposal_id}/accept", body=body, timeout=SLOW_TIMEOUT)

    def reject_proposal(self, proposal_id: str | int) -> Any:
        return self._call("POST", f"/api/refine/{proposal_id}/reject", body={})


class NodeClient(_Endpoints):
    """Synchronous client; use as a context manager (or call `close`)."""

    _http_class = httpx.Client

    def _call(
        self, method: str, path: str, *, params: Any = None, body: Any = None, timeout: float = 0
    ) -> Any:
        try:
            response = self._http.request(
                method, path, params=params, json=body, timeout=timeout or httpx.USE_CLIENT_DEFAULT
            )
        except httpx.TransportError as exc:
            raise _unreachable(self.url, exc) from exc
        return _raise_for(response, self.data)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> NodeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncNodeClient(_Endpoints):
    """Asynchronous client (asyncio or trio); every endpoint method is a coroutine; `events()` streams."""

    _http_class = httpx.AsyncClient

    async def _call(  # type: ignore[override]
        self, method: str, path: str, *, params: Any = None, body: Any = None, timeout: float = 0
    ) -> Any:
        try:
            response = await self._http.request(
                method, path, params=params, json=body, timeout=timeout or httpx.USE_CLIENT_DEFAULT
            )
        except httpx.TransportError as exc:
            raise _unreachable(self.url, exc) from exc
        return _raise_for(response, self.data)

    async def events(self) -> AsyncIterator[tuple[str, Any]]:
        """(kind, data) for each server-sent event, until the node goes away (then NodeUnreachable).

        Close it when done: `async with contextlib.aclosing(client.events()) as stream: async for ...`."""
        try:
            async with self._http.stream("GET", "/api/events", timeout=httpx.Timeout(None, connect=5.0)) as r:
                if r.status_code >= 400:
                    await r.aread()
                    _raise_for(r, self.data)
                kind, data = "message", []
                async for line in r.aiter_lines():
                    if line.startswith(":"):
                        continue
                    if not line:
                        if data:
                            yield kind, json.loads("\n".join(data))
                        kind, data = "message", []
                    elif line.startswith("event:"):
                        kind = line[6:].strip()
                    elif line.startswith("data:"):
                        data.append(line[5:].lstrip())
        except httpx.TransportError as exc:
            raise _unreachable(self.url, exc) from exc

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncNodeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
