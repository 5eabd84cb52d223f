"""The node's control API (/tmp API contract; README "Control API"): JSON over HTTP on 127.0.0.1 only.

A small Starlette app served by Hypercorn's trio worker inside the node's own trio loop. Every request needs
`Authorization: Bearer TOKEN` (the token in `DATA/api.token`, mode 0600), else 401. Every error is JSON
`{"error": KIND, "detail": "what to do"}`. `/api/events` is a server-sent-event stream of `stats` (coalesced),
`page`, `peer`, `model`, `meta`, `refine` and `log` events.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import trio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from crawler.errors import RepositoryFull
from crawler.repository import MAX_ROW_ID
from crawler.repository_faults import damaged, is_damaged, is_disk_full
from crawler.search import MAX_QUERY_CHARS
from crawler.taxonomy import MAX_FILE_BYTES
from node.cooperation.settings import MAX_CLUSTERS
from node.errors import NodeServiceError, not_found

if TYPE_CHECKING:
    from node.service import NodeService

log = logging.getLogger(__name__)

API_HOST = "127.0.0.1"
SSE_HEARTBEAT = 15.0
FEEDBACK_KINDS = {True: "relevant", False: "irrelevant"}
MAX_USER_CHARS = 100  # a feedback mark's user name
MAX_REVISIT_URLS = 1000  # URLs one revisit request may name
MAX_BODY_BYTES = 1024 * 1024  # a request body larger than this is refused (an import's: MAX_FILE_BYTES)
BODY_SECONDS = 30.0  # a request body must arrive within this
WHOLE_NUMBER = re.compile(r"[0-9]{1,100}")  # ASCII digits only: int() also takes "٣", "1_0" and " +1"


def error(kind: str, detail: str, status: int) -> JSONResponse:
    return JSONResponse({"error": kind, "detail": detail}, status_code=status)


class BearerAuth:
    """ASGI middleware: 401 unless the request carries the node's bearer token."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not secrets.compare_digest(given, self.expected):
                detail = (
                    "send 'Authorization: Bearer TOKEN' with the token from the node's data directory "
                    "(DATA/api.token)"
                )
                await error("unauthorised", detail, 401)(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def _json_body(request: Request, limit: int = MAX_BODY_BYTES) -> dict[str, Any]:
    """The request's JSON object, read up to `limit` bytes: a larger body is refused (413) before it is
    held in memory, and one that is not UTF-8 JSON, or nests past what the parser can, is a 400."""
    raw = await _bounded_body(request, limit)
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw.decode("utf-8"))
        json.dumps(body, ensure_ascii=False).encode("utf-8")  # "\ud800" decodes to a lone surrogate
    except UnicodeError as exc:
        raise NodeServiceError("bad_request", "the body is not UTF-8 text: send JSON in UTF-8") from exc
    except RecursionError as exc:
        raise NodeServiceError(
            "bad_request", "the body's JSON nests too deep: send a flat JSON object"
        ) from exc
    except json.JSONDecodeError as exc:
        raise NodeServiceError(
            "bad_request", f"the body is not JSON ({exc.msg}); send a JSON object"
        ) from exc
    except ValueError as exc:  # a whole number of more than 4300 digits
        raise NodeServiceError("bad_request", f"the body's JSON cannot be read: {exc}") from exc
    if not isinstance(body, dict):
        raise NodeServiceError("bad_request", "the body must be a JSON object")
    return body


async def _bounded_body(request: Request, limit: int) -> bytes:
    too_large = NodeServiceError("body_too_large", f"the body is larger than {limit // 1024} KB", 413)
    declared = request.headers.get("content-length", "")
    if WHOLE_NUMBER.fullmatch(declared) and int(declared) > limit:
        raise too_large
    chunks, size = [], 0
    try:
        with trio.move_on_after(BODY_SECONDS) as waiting:
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise too_large
                chunks.append(chunk)
    except ClientDisconnect as exc:  # no one is left to answer; this only keeps a traceback out of the log
        raise NodeServiceError("bad_request", "the client went away before the body arrived") from exc
    if waiting.cancelled_caught:  # a body trickling in at a byte a second held a request open for good
        raise NodeServiceError(
            "body_timeout", f"the body took longer than {BODY_SECONDS:.0f} s to arrive", 408
        )
    return b"".join(chunks)


def _require(body: dict[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    value = body.get(name)
    if value is None or not isinstance(value, kind) or (isinstance(value, bool) and bool not in _types(kind)):
        raise NodeServiceError("bad_request", f"the body needs {name!r} ({_describe(kind)})")
    return value


def _types(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _describe(kind: type | tuple[type, ...]) -> str:
    if set(_types(kind)) == {int, float}:
        return "a number"
    names = {str: "a string", int: "a whole number", float: "a number", bool: "true or false", list: "a list"}
    return " or ".join(names.get(k, k.__name__) for k in _types(kind))


def _document_id(value: int) -> int:
    if not 0 <= value <= MAX_ROW_ID:
        raise NodeServiceError("not_found", f"no document {value}: take doc_id from a search hit", 404)
    return value


def _int_param(request: Request, name: str, default: int, low: int = 0, high: int = 10_000) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    if not WHOLE_NUMBER.fullmatch(raw):
        raise NodeServiceError("bad_request", f"query parameter {name} must be a whole number")
    value = int(raw)
    if not low <= value <= high:
        raise NodeServiceError("bad_request", f"query parameter {name} must be between {low} and {high}")
    return value


def _float_param(request: Request, name: str, default: float) -> float:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise NodeServiceError("bad_request", f"query parameter {name} must be a number") from exc


def _number(body: dict[str, Any], name: str) -> float:
    try:
        return float(_require(body, name, (int, float)))
    except OverflowError as exc:
        raise NodeServiceError("bad_request", f"{name} is too large a number") from exc


Handler = Callable[[Request], Awaitable[Any]]


def build_app(service: NodeService, token: str) -> ASGIApp:
    """The Starlette app over `service`, wrapped in bearer-token authentication."""

    def route(path: str, handler: Handler, methods: list[str]) -> Route:
        async def endpoint(request: Request) -> Response:
            try:
                answer = await handler(request)
            except NodeServiceError as exc:
                return error(exc.kind, exc.detail, exc.status)
            return answer if isinstance(answer, Response) else JSONResponse(answer)

        return Route(path, endpoint, methods=methods)

    async def cooperation_topic(topic: str, method: str) -> None:
        """Cooperation requests about a topic (`method` of `service.cooperate`): first whether the node
        cooperates at all, then whether it knows the topic (each answer says what to do)."""
        service.require_cooperation(method)
        await service.topics.require(topic)

    async def status(request: Request) -> Any:
        return await service.report.status()

    async def metrics(request: Request) -> Any:
        return await service.report.metrics(_float_param(request, "since", 0.0))

    async def topics(request: Request) -> Any:
        return await service.topics.listing()

    async def import_topics(request: Request) -> Any:
        body = await _json_body(request, MAX_FILE_BYTES)
        fetch = _require(body, "fetch", bool) if "fetch" in body else True
        if "bookmarks_html" in body:
            html = _require(body, "bookmarks_html", str)
            return await service.topics.import_taxonomy(bookmarks_html=html, fetch=fetch)
        if "path" in body:
            return await service.topics.import_taxonomy(path=_require(body, "path", str), fetch=fetch)
        raise NodeServiceError("bad_request", 'send {"bookmarks_html": TEXT} or {"path": PATH}')

    async def keywords(request: Request) -> Any:
        body = await _json_body(request)
        return await service.topics.set_keywords(request.path_params["key"], _require(body, "keywords", list))

    async def crawl(request: Request) -> Any:
        action = request.path_params["action"]
        states = {"start": "running", "pause": "paused", "stop": "stopped"}
        if action == "revisit":
            return await revisit(await _json_body(request))
        if action not in states:
            raise NodeServiceError(
                "not_found",
                "use /api/crawl/start, /api/crawl/pause, /api/crawl/stop or /api/crawl/revisit",
                404,
            )
        body = await _json_body(request)
        topic = body.get("topic")
        if topic is not None and not isinstance(topic, str):
            raise NodeServiceError("bad_request", "topic must be a topic key string")
        return await service.set_crawl_state(states[action], topic)

    async def revisit(body: dict[str, Any]) -> Any:
        if body.get("all") is True:
            return await service.revisit(None)
        urls = body.get("urls")
        if not isinstance(urls, list) or not urls or not all(isinstance(u, str) for u in urls):
            raise NodeServiceError("bad_request", 'send {"urls": [URL, ...]} or {"all": true}')
        if len(urls) > MAX_REVISIT_URLS:
            raise NodeServiceError(
                "bad_request",
                f'at most {MAX_REVISIT_URLS} URLs at a time; {{"all": true}} makes every page due',
            )
        return await service.revisit(urls)

    async def search(request: Request) -> Any:
        return await service.search.ranked(
            request.query_params.get("q", ""),  # no words: the most confident results under the filters
            topic=request.query_params.get("topic") or None,
            include_descendants=request.query_params.get("include_descendants", "1") not in ("0", "false"),
            origin=request.query_params.get("origin", "any"),
            verdict=request.query_params.get("verdict", "accepted"),
            limit=_int_param(request, "limit", 10, 0, 1000),
            offset=_int_param(request, "offset", 0, 0, 100_000),
            weights=request.query_params.get("weights") or None,
            user=request.query_params.get("user") or None,
            syntax="fts5" if request.query_params.get("syntax") == "fts5" else "plain",
        )

    async def document(request: Request) -> Any:
        raw = request.path_params["doc_id"]
        if not WHOLE_NUMBER.fullmatch(raw):
            raise NodeServiceError("bad_request", "the document id is a whole number from a search hit")
        return await service.search.document(_document_id(int(raw)))

    async def feedback(request: Request) -> Any:
        body = await _json_body(request)
        doc_id = _document_id(_require(body, "doc_id", int))
        query = body.get("query") if isinstance(body.get("query"), str) else None
        if query is not None and len(query) > MAX_QUERY_CHARS:
            raise NodeServiceError("bad_request", f"the query is longer than {MAX_QUERY_CHARS} characters")
        user = body.get("user")
        if user is not None and not (isinstance(user, str) and 0 < len(user) <= MAX_USER_CHARS):
            raise NodeServiceError("bad_request", f"user is a name of 1 to {MAX_USER_CHARS} characters")
        if "relevant" in body:
            kind = FEEDBACK_KINDS[bool(_require(body, "relevant", bool))]
        elif body.get("opened") is True:
            kind = "opened"
        else:
            raise NodeServiceError(
                "bad_request", 'send {"doc_id", "relevant": true|false} or {"doc_id", "opened": true}'
            )
        return await service.search.feedback(doc_id, kind, query, user)

    async def peers(request: Request) -> Any:
        return await service.peer_blocks.peers()

    async def peer_block(request: Request) -> Any:
        action = request.path_params["action"]
        if action not in ("block", "unblock"):
            raise not_found(f"no peer action {action!r}: use /api/peers/block or /api/peers/unblock")
        peer = _require(await _json_body(request), "peer", str)
        blocks = service.peer_blocks
        return await (blocks.block(peer) if action == "block" else blocks.unblock(peer))

    async def models(request: Request) -> Any:
        topic = request.query_params.get("topic") or None
        return {"models": await service.cooperate("models", topic)}

    async def meta_build(request: Request) -> Any:
        body = await _json_body(request)
        topic = _require(body, "topic", str)
        loss = _number(body, "loss") if "loss" in body else None  # none: the topic's, else default_loss
        goal = body.get("error_goal")
        if goal is not None and (isinstance(goal, bool) or not isinstance(goal, int | float)):
            raise NodeServiceError("bad_request", "error_goal must be a number between 0 and 1")
        if loss is not None:
            _check_fraction("loss", loss)
        await cooperation_topic(topic, "meta_protocol.build")
        return await service.cooperate("meta_protocol.build", topic, loss=loss, error_goal=goal)

    async def meta(request: Request) -> Any:
        topic = request.query_params.get("topic")
        if not topic:
            raise NodeServiceError("bad_request", "give the topic as ?topic=KEY")
        await cooperation_topic(topic, "meta")
        return await service.topics.meta(topic)

    async def meta_loss(request: Request) -> Any:
        body = await _json_body(request)
        loss = _number(body, "loss")
        _check_fraction("loss", loss)
        topic = _require(body, "topic", str)
        await cooperation_topic(topic, "set_loss")
        return await service.cooperate("set_loss", topic, loss)

    async def refine(request: Request) -> Any:
        body = await _json_body(request)
        k = _require(body, "k", int) if "k" in body else None  # none: the node's cooperation.cluster_k
        if k is not None and not 2 <= k <= MAX_CLUSTERS:
            raise NodeServiceError(
                "bad_request", f"k (the number of clusters) must be between 2 and {MAX_CLUSTERS}"
            )
        topic = _require(body, "topic", str)
        await cooperation_topic(topic, "refinement.refine")
        return {"proposals": await service.cooperate("refinement.refine", topic, k)}

    async def refine_list(request: Request) -> Any:
        topic = request.query_params.get("topic") or None
        return {"proposals": await service.cooperate("refinement.proposals", topic)}

    async def refine_decide(request: Request) -> Any:
        action = request.path_params["action"]
        if action not in ("accept", "reject"):
            raise NodeServiceError("not_found", "use /api/refine/{id}/accept or /api/refine/{id}/reject", 404)
        body = await _json_body(request)
        name = body.get("name")
        if name is not None and not isinstance(name, str):
            raise NodeServiceError("bad_request", "name must be a string")
        return await service.cooperate(
            f"refinement.{action}_proposal", request.path_params["proposal_id"], name=name
        )

    async def node_stop(request: Request) -> Any:
        service.stop_soon()
        return {"stopping": True, "pid": os.getpid()}

    async def events(request: Request) -> Any:
        return StreamingResponse(
            _event_stream(service),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    routes = [
        route("/api/status", status, ["GET"]),
        route("/api/node/stop", node_stop, ["POST"]),
        route("/api/metrics", metrics, ["GET"]),
        route("/api/topics", topics, ["GET"]),
        route("/api/topics/import", import_topics, ["POST"]),
        route("/api/topics/{key:path}/keywords", keywords, ["PUT"]),
        route("/api/crawl/{action}", crawl, ["POST"]),
        route("/api/search", search, ["GET"]),
        route("/api/documents/{doc_id}", document, ["GET"]),
        route("/api/feedback", feedback, ["POST"]),
        route("/api/peers", peers, ["GET"]),
        route("/api/peers/{action}", peer_block, ["POST"]),
        route("/api/models", models, ["GET"]),
        route("/api/meta/build", meta_build, ["POST"]),
        route("/api/meta", meta, ["GET"]),
        route("/api/meta/loss", meta_loss, ["PUT"]),
        route("/api/refine", refine, ["POST"]),
        route("/api/refine", refine_list, ["GET"]),
        route("/api/refine/{proposal_id}/{action}", refine_decide, ["POST"]),
        route("/api/events", events, ["GET"]),
    ]

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        kinds = {404: "not_found", 405: "method_not_allowed"}
        detail = {
            404: f"no such endpoint {request.url.path}; the README's Control API section lists them",
            405: f"{request.method} is not allowed on {request.url.path}",
        }
        answer = error(
            kinds.get(exc.status_code, "http"), detail.get(exc.status_code, str(exc.detail)), exc.status_code
        )
        answer.headers.update(exc.headers or {})  # a 405's Allow
        return answer

    async def storage_error(request: Request, exc: Exception) -> Response:
        """A full disk is the user's to fix (the request's transaction rolled back): 507, no traceback."""
        if not is_disk_full(exc):
            return await server_error(request, exc)
        log.warning("control API: %s %s: %s", request.method, request.url.path, exc)
        return error(
            "disk_full", f"{exc}: nothing of this request was stored; free some space and retry", 507
        )

    async def database_error(request: Request, exc: Exception) -> Response:
        """A damaged repository page the request read: what it is and the way back, no traceback."""
        if not is_damaged(exc):
            return await server_error(request, exc)
        log.error("control API: %s %s: the repository is damaged: %s", request.method, request.url.path, exc)
        return error("repository_damaged", damaged(service.data.repository, f"SQLite said: {exc}"), 500)

    async def server_error(request: Request, exc: Exception) -> Response:
        log.exception("control API: %s %s failed", request.method, request.url.path)
        return error(
            "internal", f"the node failed on this request ({type(exc).__name__}: {exc}); see node.log", 500
        )

    app = Starlette(
        routes=_merge_methods(routes),
        exception_handlers={
            HTTPException: http_error,
            RepositoryFull: storage_error,
            sqlite3.OperationalError: storage_error,
            sqlite3.DatabaseError: database_error,
            Exception: server_error,
        },
    )
    app.router.redirect_slashes = False  # "/api/status/" is a 404 in JSON, not an empty 307
    return BearerAuth(app, token)


def _merge_methods(routes: list[Route]) -> list[Route]:
    """Starlette matches the first route by path: one route per path answering all its methods."""
    by_path: dict[str, list[Route]] = {}
    for r in routes:
        by_path.setdefault(r.path, []).append(r)
    merged = []
    for path, group in by_path.items():
        if len(group) == 1:
            merged.append(group[0])
            continue
        table = {m: r.endpoint for r in group for m in (r.methods or ())}

        async def dispatch(request: Request, table: dict = table) -> Response:
            return await table[request.method](request)

        merged.append(Route(path, dispatch, methods=sorted(table)))
    return merged


def _check_fraction(name: str, value: float) -> None:
    if not 0.0 <= value < 1.0:
        raise NodeServiceError(
            "bad_request", f"{name} must be at least 0 and below 1 (a fraction of documents)"
        )


async def _event_stream(service: NodeService) -> AsyncIterator[str]:
    yield ": connected\n\n"
    yield f"event: stats\ndata: {json.dumps(service.report.crawl_figures())}\n\n"
    async for event in service.events.subscribe(SSE_HEARTBEAT):
        yield ": keep-alive\n\n" if event is None else event.to_sse()


def check_api_port(port: int) -> None:
    """NodeServiceError saying what to do when the API's port is taken (the node failed with 74 lines of
    traceback ending in 'Address already in use')."""
    from node.network import port_in_use

    if port and port_in_use(API_HOST, port):
        raise NodeServiceError(
            "api_port",
            f"port {port} of the control API is in use (another node?): set [node] api_port in "
            "config.toml to another port, or to 0 for any free one",
        )


async def serve_api(service: NodeService, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Serve the API on 127.0.0.1 until cancelled; `task_status.started(base_url)` once listening."""
    from hypercorn.config import Config as HypercornConfig

    from node.api_server import serve_capped

    check_api_port(service.settings.api_port)
    token = service.data.read_or_create_token()
    config = HypercornConfig()
    config.bind = [f"{API_HOST}:{service.settings.api_port}"]
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")
    config.keep_alive_timeout = 30.0
    async with trio.open_nursery() as nursery:
        task_status.started(await nursery.start(partial(serve_capped, build_app(service, token), config)))
