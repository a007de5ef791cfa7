"""The MCP server of `lanegraph serve`: tools `find` and `remember` for agents, on the official SDK.

Over streamable HTTP (mounted at /mcp by app.py) the caller is the request's bearer token; over
stdio (`lanegraph mcp`) it is the token the process was started with (LANEGRAPH_TOKEN), checked
again on every call so a revoked token stops working. Every failure the caller can act on comes
back as a tool error the model reads, never as a crash of the server.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from pipelines.errors import InputError, first_line_of
from pipelines.serve.service import UNAVAILABLE, Service
from pipelines.serve.tokens import ApiToken, bearer_secret

T = TypeVar("T")

INSTRUCTIONS = """\
Lanegraph is a long-term memory and knowledge graph over the user's documents and past conversations.
Call `find` before answering anything that may depend on stored knowledge or earlier sessions, and
answer from its evidence. Call `remember` to keep something worth knowing later (a preference, a
decision, a fact the user told you); it is findable immediately."""

FIND_DESCRIPTION = """\
Search the memory for evidence that answers a question: facts from the knowledge graph, source
passages, summaries and recent working-memory items, best first and packed into a token budget.
Ask a full natural-language question and name the people, places or things it is about; ask again
with other words or a narrower question if the evidence does not answer it. Each evidence item has
an id, a kind (facts, sources, summaries, working_memory, ...), its text and, when it has one, the
title of its source document. Cite the source title when you use an item. No evidence means the
memory holds nothing on it: say so rather than guess."""

REMEMBER_DESCRIPTION = """\
Store one item in working memory: a short self-contained statement worth recalling later, such as a
user preference, a decision, or a fact learnt in this conversation. Write it so it makes sense on its
own, without the conversation around it (name who and what, not "he" or "it"). It is findable by
`find` at once and later becomes part of the long-term knowledge graph. Give `id` only to replace an
item stored before under that id. Returns the item's id."""


def build_mcp_server(service: Service, *, stdio_secret: str | None = None) -> MCPServer:
    """The MCP server over `service`. Give `stdio_secret` (a token) when serving over stdio."""
    server: MCPServer = MCPServer(name="lanegraph", instructions=INSTRUCTIONS)

    async def blocking(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            with anyio.fail_after(service.settings.request_timeout_seconds):
                return await anyio.to_thread.run_sync(partial(function, *args, **kwargs), abandon_on_cancel=True)
        except InputError as error:
            raise ToolError(str(error)) from None
        except UNAVAILABLE as error:
            raise ToolError(f"the memory's database is unavailable; try again in a few seconds ({first_line_of(error)})") from None
        except TimeoutError:
            raise ToolError(f"no answer within {service.settings.request_timeout_seconds:g} s; try a shorter question") from None

    async def caller(context: Context) -> ApiToken:
        headers = context.headers
        secret = bearer_secret(headers.get("authorization", "")) if headers is not None else stdio_secret or ""
        token = await blocking(service.caller, secret) if secret else None
        if token is None:
            raise ToolError("not authorized: this server needs a valid Lanegraph API token (lanegraph token create)")
        return token

    @server.tool(name="find", description=FIND_DESCRIPTION)
    async def find(question: str, context: Context, budget: int | None = None) -> dict[str, Any]:
        token = await caller(context)
        result = await blocking(service.find, token, question, budget=budget)
        return {
            "evidence": [
                {
                    "id": item["evidence_id"],
                    "kind": item["kind"],
                    "text": item["line"],
                    **({"source": item["source_title"]} if item["source_title"] else {}),
                }
                for item in result["evidence"]
            ],
            "tokens_used": result["tokens_used"],
            **({"degraded": result["degraded_reason"]} if result["degraded_reason"] else {}),
        }

    @server.tool(name="remember", description=REMEMBER_DESCRIPTION)
    async def remember(
        text: str, context: Context, id: str | None = None, when: dt.datetime | None = None
    ) -> dict[str, Any]:
        token = await caller(context)
        return await blocking(service.remember, token, text, created_at=when, item_id=id)

    return server
