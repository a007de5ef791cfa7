"""`lanegraph serve [--host H] [--port P] [--workers N] [--pool-size N] [--preset NAME=PATH]
[--lanes PATH] [--mcp-stdio]`: find and working memory over HTTP (with MCP at /mcp), or MCP over
stdio for one local agent (its token in LANEGRAPH_TOKEN)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from pipelines.cli import COMMAND_HELP
from pipelines.cli.options import add_lanes_option, lanes_config
from pipelines.errors import InputError

TOKEN_ENV = "LANEGRAPH_TOKEN"
# Read by every worker process (pipelines.serve.app.app_from_environment).
PRESETS_ENV = "LANEGRAPH_SERVE_PRESETS"
# Beyond the request timeout, how long a stopping server waits for requests in flight.
SHUTDOWN_GRACE_SECONDS = 5.0


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "serve", help=COMMAND_HELP["serve"],
        description="Serve POST /find, POST /memory, GET /health, GET /ready and MCP at /mcp; every "
        "request but /health and /ready needs `Authorization: Bearer <token>` (lanegraph token create). "
        "Defaults come from the serve section of lanes.yaml.",
    )
    parser.add_argument("--host", help="address to listen on (default: serve.host, 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on (default: serve.port, 8710)")
    parser.add_argument("--workers", type=int, default=1, metavar="N",
                        help="worker processes, each with its own pool and embedder (default 1)")
    parser.add_argument("--pool-size", type=int, metavar="N",
                        help="database connections per worker (default: serve.pool_size)")
    parser.add_argument("--preset", action="append", default=[], metavar="NAME=PATH",
                        help="another settings file requests may pick with \"lanes\": NAME; repeatable")
    parser.add_argument("--mcp-stdio", action="store_true",
                        help=f"serve MCP over stdin/stdout instead of HTTP, as the token in {TOKEN_ENV}")
    add_lanes_option(parser)
    parser.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    config = lanes_config(arguments)
    if arguments.lanes is not None:
        # Worker processes load the settings themselves, from the environment.
        os.environ["LANEGRAPH_CONFIG"] = str(arguments.lanes.resolve())
    presets = dict(_preset(text) for text in arguments.preset)
    os.environ[PRESETS_ENV] = ",".join(f"{name}={path}" for name, path in presets.items())
    if arguments.pool_size is not None:
        if arguments.pool_size < 1:
            raise InputError(f"--pool-size must be at least 1, got {arguments.pool_size}")
        from pipelines.serve.service import POOL_SIZE_ENV

        os.environ[POOL_SIZE_ENV] = str(arguments.pool_size)
    if arguments.mcp_stdio:
        return run_mcp_stdio(presets)
    import uvicorn

    if arguments.workers < 1:
        raise InputError(f"--workers must be at least 1, got {arguments.workers}")
    settings = config.serve
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    uvicorn.run(
        "pipelines.serve.app:app_from_environment", factory=True,
        host=arguments.host or settings.host, port=settings.port if arguments.port is None else arguments.port,
        workers=arguments.workers, access_log=False,
        timeout_graceful_shutdown=int(settings.request_timeout_seconds + SHUTDOWN_GRACE_SECONDS),
    )
    return 0


def _preset(text: str) -> tuple[str, Path]:
    name, separator, path = text.partition("=")
    if not separator or not name.strip() or not path.strip() or "," in text:
        raise InputError(f"--preset {text!r}: expected NAME=PATH (no commas)")
    resolved = Path(path.strip()).resolve()
    if not resolved.is_file():
        raise InputError(f"--preset {name}: {resolved} is not a file")
    return name.strip(), resolved


def run_mcp_stdio(presets: dict[str, Path]) -> int:
    """MCP over stdio. Stdout carries the protocol only: whatever opening the database and loading
    the model prints goes to stderr."""
    import anyio

    from pipelines.serve.mcp_server import build_mcp_server
    from pipelines.serve.service import Service

    secret = os.environ.get(TOKEN_ENV, "").strip()
    if not secret:
        raise InputError(f"--mcp-stdio: set {TOKEN_ENV} to the API token the agent acts as (lanegraph token create)")
    sys.stdout.flush()
    saved_stdout = os.dup(1)
    os.dup2(2, 1)
    try:
        service = Service.open(presets=presets)
    finally:
        os.dup2(saved_stdout, 1)
        os.close(saved_stdout)
    try:
        if service.caller(secret) is None:
            raise InputError(f"{TOKEN_ENV}: unknown or revoked token")
        anyio.run(build_mcp_server(service, stdio_secret=secret).run_stdio_async)
    finally:
        service.close()
    return 0
