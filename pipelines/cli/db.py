"""`lanegraph db status|start|stop|url|psql|migrate|backup|restore|replica`: the database's lifecycle."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
from pathlib import Path

from pipelines.cli import COMMAND_HELP
from pipelines.config import data_dir, load_config
from pipelines.resources.backup import backup_database, restore_database
from pipelines.resources.database import DEFAULT_DATABASE, connect, prepare_database, resolve_database_url
from pipelines.resources.embedded_postgres import EmbeddedPostgres, EmbeddedStandby, bundled_program
from pipelines.errors import DatabaseError
from pipelines.resources.migrations import change_embedding_dimension
from pipelines.resources.server_memory import memory_in_force


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
    backup = actions.add_parser("backup", help="write the whole database to one file (pg_dump archive)")
    backup.add_argument("path", type=Path, help="the backup file to write (never overwritten)")
    restore = actions.add_parser(
        "restore", help="replace the database with a backup (restored aside first, then swapped in)"
    )
    restore.add_argument("path", type=Path, help="a file written by `lanegraph db backup`")
    replica = actions.add_parser("replica", help="hot standbys of the embedded server, for reads")
    replica_actions = replica.add_subparsers(dest="replica_action", required=True, metavar="ACTION")
    for action, help_text in (
        ("add", "copy the server with pg_basebackup, stream to it, print its URL last"),
        ("start", "start a stopped standby, print its URL last"),
        ("remove", "stop a standby, drop its replication slot, delete its data"),
    ):
        replica_actions.add_parser(action, help=help_text).add_argument("name", help="e.g. standby1")
    replica_actions.add_parser("list", help="each standby: running or not, streaming state and replay lag")
    parser.set_defaults(handler=run)


def _external() -> bool:
    return bool(os.environ.get("DATABASE_URL", "").strip())


def run(arguments: argparse.Namespace) -> int:
    server = EmbeddedPostgres(data_dir())
    if arguments.action == "status":
        if _external():
            with connect(resolve_database_url()) as connection:
                print(
                    f"external database reachable: PostgreSQL {connection.info.server_version // 10000}"
                    f" ({memory_in_force(connection)})"
                )
            return 0
        status = server.status()
        if status.running:
            assert status.url is not None
            with connect(status.url) as connection:
                memory = memory_in_force(connection)
            print(f"embedded PostgreSQL running (pid {status.pid}) in {status.pgdata} ({memory})")
        else:
            print(f"embedded PostgreSQL stopped ({status.pgdata})")
        return 0 if status.running else 1
    if arguments.action == "replica":
        if _external():
            raise DatabaseError(
                "DATABASE_URL points at an external server: create its standbys with that server's tools "
                "and name them in LANEGRAPH_READ_URLS"
            )
        return _replica(server, arguments)
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
    elif arguments.action == "backup":
        size = backup_database(url, arguments.path)
        print(f"backed up to {arguments.path} ({size / 1e6:.1f} MB)")
    elif arguments.action == "restore":
        restore_database(url, arguments.path, config.pipeline.embedding.dimension)
        print(f"restored {arguments.path}; `lanegraph check` proves the find statement on it")
    return 0


def _replica(server: EmbeddedPostgres, arguments: argparse.Namespace) -> int:
    if arguments.replica_action == "list":
        return _list_replicas(server)
    standby = EmbeddedStandby(server, arguments.name)
    if arguments.replica_action == "remove":
        standby.remove()
        print(f"removed replica {standby.name}")
        return 0
    if arguments.replica_action == "add":
        standby.create()
        print(f"replica {standby.name} streaming from the primary ({standby.pgdata}); read from it with")
    else:
        standby.start()
        print(f"replica {standby.name} running ({standby.pgdata}); read from it with")
    # Last line, alone: `DATABASE_URL=$(lanegraph db replica add standby1 | tail -1)`.
    print(standby.database_url(DEFAULT_DATABASE))
    return 0


def _list_replicas(server: EmbeddedPostgres) -> int:
    standbys = server.standbys()
    if not standbys:
        print("no replicas (add one with `lanegraph db replica add NAME`)")
        return 0
    streams = {}
    # Listing must not start a stopped primary: then nothing streams.
    if (primary := server.status()).running and primary.url is not None:
        with connect(primary.url, autocommit=True) as connection:
            streams = {
                name: (state, lag)
                for name, state, lag in connection.execute(
                    "SELECT application_name, state, coalesce(replay_lag, '0'::interval) FROM pg_stat_replication"
                )
            }
    for standby in standbys:
        status = standby.status()
        state, lag = streams.get(standby.name, ("not streaming", None))
        where = standby.database_url(DEFAULT_DATABASE) if status.running else str(standby.pgdata)
        lag_text = f", replay lag {lag.total_seconds():.3f} s" if lag is not None else ""
        print(f"{standby.name:<12} {'running' if status.running else 'stopped':<8} {state}{lag_text}  {where}")
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
