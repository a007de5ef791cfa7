"""`lanegraph db status|start|stop|url|psql|migrate`: the database's lifecycle."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess

from pipelines.cli import COMMAND_HELP
from pipelines.config import data_dir, load_config
from pipelines.resources.database import connect, prepare_database, resolve_database_url
from pipelines.resources.embedded_postgres import EmbeddedPostgres, bundled_program
from pipelines.errors import DatabaseError
from pipelines.resources.migrations import change_embedding_dimension


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("db", help=COMMAND_HELP["db"])
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser("status", help="say whether the database is reachable and where")
    actions.add_parser("start", help="start the embedded server (no-op if running) and migrate")
    actions.add_parser("stop", help="stop the embedded server")
    actions.add_parser("url", help="print the connection URL")
    psql = actions.add_parser("psql", help="open psql on the database; further arguments go to psql (-c 'select 1')")
    psql.set_defaults(passes_unknown_arguments=True)
    migrate = actions.add_parser("migrate", help="apply migrations; optionally change the vector width")
    migrate.add_argument(
        "--embedding-dimension",
        type=int,
        metavar="N",
        help="retype every vector column to vector(N), clearing embeddings (re-materialize after)",
    )
    parser.set_defaults(handler=run)


def _external() -> bool:
    return bool(os.environ.get("DATABASE_URL", "").strip())


def run(arguments: argparse.Namespace) -> int:
    server = EmbeddedPostgres(data_dir())
    if arguments.action == "status":
        if _external():
            with connect(resolve_database_url()) as connection:
                print(f"external database reachable: PostgreSQL {connection.info.server_version // 10000}")
            return 0
        status = server.status()
        if status.running:
            print(f"embedded PostgreSQL running (pid {status.pid}) in {status.pgdata}")
        else:
            print(f"embedded PostgreSQL stopped ({status.pgdata})")
        return 0 if status.running else 1
    if arguments.action == "stop":
        if _external():
            raise DatabaseError("DATABASE_URL points at an external server; stop it with its own tools")
        print("stopped" if server.stop() else "was not running")
        return 0
    config = load_config()
    url = resolve_database_url()
    if arguments.action == "start":
        applied = prepare_database(url, config.pipeline.embedding.dimension)
        print(f"database ready: {url}" + (f" (applied {', '.join(applied)})" if applied else ""))
    elif arguments.action == "url":
        print(url)
    elif arguments.action == "psql":
        return _psql(url, arguments.unknown_arguments)
    elif arguments.action == "migrate":
        return _migrate(url, arguments.embedding_dimension, config.pipeline.embedding.dimension)
    return 0


def _migrate(url: str, requested: int | None, configured: int) -> int:
    if requested is None:
        applied = prepare_database(url, configured)
        print(f"applied {', '.join(applied)}" if applied else "schema up to date")
        return 0
    if requested != configured:
        raise DatabaseError(
            f"lanes.yaml sets pipeline.embedding.dimension: {configured}; set it to {requested} "
            "first so the pipeline and the find statement use the new width"
        )
    with connect(url, autocommit=True) as connection:
        changed = change_embedding_dimension(connection, requested)
    prepare_database(url, configured)
    print(f"{changed} vector columns are now vector({requested}); re-materialize the embedding assets")
    return 0


def _psql(url: str, psql_arguments: list[str]) -> int:
    bundled = bundled_program("psql")
    executable = str(bundled) if bundled.exists() else shutil.which("psql")
    if executable is None:
        raise DatabaseError("no psql found; install the PostgreSQL client")
    return subprocess.call([executable, url, *psql_arguments])
