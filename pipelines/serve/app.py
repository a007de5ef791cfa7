"""The HTTP API of `lanegraph serve`: FastAPI routes over a `Service`, and the MCP server mounted at
/mcp (streamable HTTP).

Every route but /health and /ready takes `Authorization: Bearer <token>`; a missing, unknown or
revoked token is 401 before anything runs. Blocking work (the embedder, the database) runs on worker
threads, each bounded by `serve.request_timeout_seconds` (504; the statement itself is cancelled by
the database's statement_timeout). A database that is not there answers 503 with Retry-After, and
the next request tries again: the server never needs a restart for the database's sake.
"""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations at run time, and
# they name dependencies local to create_app.
import json
import logging
import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Annotated, Any, TypeVar

import anyio
from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pipelines.errors import InputError, first_line_of
from pipelines.read.find import MAX_QUESTION_CHARS
from pipelines.serve.service import UNAVAILABLE, CallerError, Service
from pipelines.serve.tokens import ApiToken, bearer_secret

ACCESS_LOG = logging.getLogger("lanegraph.serve.access")
RETRY_AFTER_SECONDS = 2
MCP_PATH = "/mcp"
T = TypeVar("T")


class FindRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS, description="the question, as plain text")
    k: int | None = Field(default=None, ge=1, le=1000, description="evidence rows per lane unit (default: settings.k)")
    budget: int | None = Field(default=None, ge=1, le=1_000_000, description="token budget (default: settings.budget_tokens)")
    lanes: str | None = Field(default=None, description="a lanes preset the server was started with (default: its lanes.yaml)")


class MemoryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, description="the item: a turn, a fact learnt, a note")
    created_at: datetime | None = Field(default=None, description="when it was said (default: now; no zone = UTC)")
    id: str | None = Field(default=None, min_length=1, max_length=200, description="stable id to update an item (default: a new one)")
    scopes: list[str] | None = Field(default=None, description="the item's scopes, among the token's (default: all of the token's)")


class BodyLimit:
    """Refuses a request body above `max_bytes` with 413, before it is read whole: a declared
    Content-Length is checked up front, a chunked body as it arrives."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        received = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except _BodyTooLarge:
            if not started:
                await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = JSONResponse(
            {"detail": f"request body over {self.max_bytes:,} bytes (serve.max_request_bytes)"}, status_code=413
        )
        await response(scope, receive, send)


class _BodyTooLarge(Exception):
    pass


class _Unauthorized(Exception):
    pass


class AccessLog:
    """One JSON line per request: method, path, status, latency, the token's id (never its secret)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def recording_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        finally:
            client = scope.get("client")
            ACCESS_LOG.info(json.dumps({
                "method": scope["method"],
                "path": scope["path"],
                "status": status,
                "ms": round((time.perf_counter() - started) * 1000, 2),
                "token": scope.get("state", {}).get("token_id"),
                "client": f"{client[0]}:{client[1]}" if client else None,
            }))


class BearerOnly:
    """401 for a request to `path` without a valid token (the MCP endpoint, which FastAPI's
    dependencies do not guard)."""

    def __init__(self, app: ASGIApp, service: Service, path: str) -> None:
        self.app = app
        self.service = service
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].rstrip("/") == self.path:
            secret = bearer_secret(dict(scope["headers"]).get(b"authorization", b"").decode("latin-1"))
            try:
                token = await anyio.to_thread.run_sync(self.service.caller, secret) if secret else None
            except UNAVAILABLE as error:
                await _unavailable(error)(scope, receive, send)
                return
            if token is None:
                await _unauthorized()(scope, receive, send)
                return
            scope.setdefault("state", {})["token_id"] = token.id
        await self.app(scope, receive, send)


def _unauthorized() -> JSONResponse:
    return JSONResponse(
        {"detail": "a valid API token is required: Authorization: Bearer <token> (lanegraph token create)"},
        status_code=401, headers={"WWW-Authenticate": "Bearer"},
    )


def _unavailable(error: BaseException) -> JSONResponse:
    return JSONResponse(
        {"detail": f"database unavailable, retry shortly: {first_line_of(error)}"},
        status_code=503, headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )


# `lanegraph serve --preset`, handed to every worker process.
PRESETS_ENV = "LANEGRAPH_SERVE_PRESETS"


def app_from_environment() -> FastAPI:
    """uvicorn's factory, once per worker process: the service for LANEGRAPH_CONFIG (or lanes.yaml)
    with the presets LANEGRAPH_SERVE_PRESETS names (`name=path,...`), closed when the app stops."""
    presets = {}
    for item in filter(None, (part.strip() for part in os.environ.get(PRESETS_ENV, "").split(","))):
        name, _, path = item.partition("=")
        presets[name.strip()] = Path(path.strip())
    return create_app(Service.open(presets=presets), owns_service=True)


def create_app(service: Service, *, mcp: bool = True, owns_service: bool = False) -> FastAPI:
    """The API over `service`; with `mcp`, the MCP server at /mcp. With `owns_service` the app
    closes the service (its pools) when it stops, after the last request finished."""
    settings = service.settings
    mounted = None
    if mcp:
        from pipelines.serve.mcp_server import build_mcp_server

        mcp_server = build_mcp_server(service)
        mounted = mcp_server.streamable_http_app(
            streamable_http_path=MCP_PATH, stateless_http=True, json_response=True,
            max_request_body_size=settings.max_request_bytes, host=settings.host,
        )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        try:
            if mounted is None:
                yield
            else:
                async with mcp_server.session_manager.run():
                    yield
        finally:
            if owns_service:
                service.close()

    app = FastAPI(
        title="Lanegraph",
        summary="Find and working memory over HTTP: graph-RAG evidence from one SQL statement.",
        version="1",
        lifespan=lifespan,
    )
    bearer = HTTPBearer(auto_error=False)

    async def blocking(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        with anyio.fail_after(settings.request_timeout_seconds):
            return await anyio.to_thread.run_sync(partial(function, *args, **kwargs), abandon_on_cancel=True)

    async def caller(
        request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
    ) -> ApiToken:
        token = await blocking(service.caller, credentials.credentials) if credentials else None
        if token is None:
            raise _Unauthorized
        request.state.token_id = token.id
        return token

    @app.exception_handler(_Unauthorized)
    async def unauthorized(request: Request, error: _Unauthorized) -> JSONResponse:
        return _unauthorized()

    @app.exception_handler(CallerError)
    async def refused(request: Request, error: CallerError) -> JSONResponse:
        return JSONResponse({"detail": str(error)}, status_code=403)

    @app.exception_handler(InputError)
    async def bad_input(request: Request, error: InputError) -> JSONResponse:
        return JSONResponse({"detail": str(error)}, status_code=422)

    for unavailable_type in UNAVAILABLE:
        app.add_exception_handler(unavailable_type, lambda request, error: _unavailable(error))

    @app.exception_handler(TimeoutError)
    async def timed_out(request: Request, error: TimeoutError) -> JSONResponse:
        return JSONResponse(
            {"detail": f"not answered within {settings.request_timeout_seconds:g} s (serve.request_timeout_seconds)"},
            status_code=504,
        )

    @app.get("/health", summary="the process is up")
    async def health() -> dict:
        return {"status": "ok"}

    @app.get("/ready", summary="the database answers, its schema is current, read servers within their lag")
    async def ready() -> JSONResponse:
        readiness = await blocking(service.readiness)
        return JSONResponse(
            {"ready": readiness.ready, "checks": readiness.checks},
            status_code=200 if readiness.ready else 503,
            headers={} if readiness.ready else {"Retry-After": str(RETRY_AFTER_SECONDS)},
        )

    @app.post("/find", summary="answer-ready evidence for a question, as `lanegraph find --json`")
    async def find(body: FindRequest, token: Annotated[ApiToken, Depends(caller)]) -> dict:
        return await blocking(service.find, token, body.question, k=body.k, budget=body.budget, lanes=body.lanes)

    @app.post("/memory", status_code=201, summary="put an item into working memory, findable at once")
    async def memory(body: MemoryRequest, token: Annotated[ApiToken, Depends(caller)]) -> dict:
        return await blocking(
            service.remember, token, body.text, created_at=body.created_at, item_id=body.id, scopes=body.scopes
        )

    @app.post(
        "/documents", status_code=202,
        summary="JSONL records (id, title, text, uri, observed_at, expires_at, scopes), ingested as a background job",
        openapi_extra={"requestBody": {"content": {"application/x-ndjson": {"schema": {"type": "string"}}}, "required": True}},
    )
    async def documents(request: Request, token: Annotated[ApiToken, Depends(caller)]) -> JSONResponse:
        if service.jobs is None:
            return JSONResponse({"detail": "this server takes no documents"}, status_code=501)
        try:
            body = (await request.body()).decode("utf-8")
        except UnicodeDecodeError as error:
            raise InputError(f"the body is not UTF-8 (byte {error.start})") from None
        job = await blocking(service.jobs.submit, token, body)
        return JSONResponse(job, status_code=202, headers={"Location": f"/jobs/{job['id']}"})

    @app.get("/jobs/{job_id}", summary="an ingest job's state and, once done, its report")
    async def job(job_id: str, token: Annotated[ApiToken, Depends(caller)]) -> JSONResponse:
        found = await blocking(service.jobs.get, token, job_id) if service.jobs is not None else None
        if found is None:
            return JSONResponse({"detail": f"no job {job_id!r} of this token"}, status_code=404)
        return JSONResponse(found)

    if mounted is not None:
        app.mount("/", BearerOnly(mounted, service, MCP_PATH))
    app.add_middleware(BodyLimit, max_bytes=settings.max_request_bytes)
    app.add_middleware(AccessLog)
    return app
