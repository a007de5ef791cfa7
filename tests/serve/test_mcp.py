"""The MCP server through the SDK's own clients: over stdio (a `lanegraph serve --mcp-stdio`
process) and over streamable HTTP (mounted at /mcp of the server under test)."""

from __future__ import annotations

import os
import sys

import anyio
import httpx2
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests import REPOSITORY
from tests.serve.conftest import Served


def _text(result) -> str:  # type: ignore[no-untyped-def]
    return " ".join(getattr(block, "text", "") for block in result.content)


def test_an_agent_over_stdio_lists_the_tools_remembers_then_finds(served: Served) -> None:
    parameters = StdioServerParameters(
        command=sys.executable, args=["-m", "pipelines.cli", "serve", "--mcp-stdio"], cwd=str(REPOSITORY),
        env={
            "DATABASE_URL": served.database.url, "LANEGRAPH_TOKEN": served.tenant_a,
            "LANEGRAPH_DATA_DIR": os.environ["LANEGRAPH_DATA_DIR"], "LANEGRAPH_CONFIG": str(REPOSITORY / "lanes.yaml"),
        },
    )

    async def session() -> None:
        with anyio.fail_after(240):
            await talk()

    async def talk() -> None:
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(tools) == {"find", "remember"}
            assert "question" in tools["find"].input_schema["properties"]
            remembered = await client.call_tool("remember", {"text": "Tenant A's office plant is a fig named Ottoline."})
            assert not remembered.is_error, _text(remembered)
            item_id = remembered.structured_content["id"]
            found = await client.call_tool("find", {"question": "What is the office plant called?"})
            assert not found.is_error, _text(found)
            assert f"session:{item_id}" in [e["id"] for e in found.structured_content["evidence"]]
            refused = await client.call_tool("remember", {"text": "leak", "id": "x", "when": "not a time"})
            assert refused.is_error
            empty = await client.call_tool("find", {"question": "   "})
            assert empty.is_error and "empty" in _text(empty)

    anyio.run(session)


def test_an_agent_over_streamable_http_finds_as_its_token(served: Served) -> None:
    async def session() -> None:
        headers = {"Authorization": f"Bearer {served.tenant_b}"}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http, streamable_http_client(
            f"{served.url}/mcp", http_client=http
        ) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            assert {tool.name for tool in (await client.list_tools()).tools} == {"find", "remember"}
            remembered = await client.call_tool("remember", {"text": "Tenant B ships on Thursdays."})
            assert not remembered.is_error, _text(remembered)
            assert remembered.structured_content["scopes"] == ["tenant-b"]
            found = await client.call_tool("find", {"question": "Which day does tenant B ship?"})
            assert not found.is_error, _text(found)
            evidence = [e["id"] for e in found.structured_content["evidence"]]
            assert f"session:{remembered.structured_content['id']}" in evidence

    anyio.run(session)
