"""`lanegraph db backup PATH` / `db restore PATH`: the whole graph database as one pg_dump archive.

pg_dump rather than pg_basebackup: one database (not the whole server), from the embedded server or
any DATABASE_URL, restorable on a newer PostgreSQL, and consistent while writers keep writing (it
reads one snapshot). Restore never half-writes: the archive is restored into a scratch database
first, and only a complete restore replaces the database, by rename.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
from psycopg import sql

from pipelines.resources.database import connect, prepare_database
from pipelines.resources.embedded_postgres import run_program
from pipelines.errors import DatabaseError, InputError

DUMP_SECONDS = 3600
MAINTENANCE_DATABASE = "postgres"


def backup_database(url: str, path: Path) -> int:
    """Write the database to `path` (pg_dump's custom format); return its size in bytes."""
    if path.exists():
        raise InputError(f"{path}: already exists; a backup never overwrites, choose a new path")
    if not path.parent.is_dir():
        raise InputError(f"{path.parent}: no such folder")
    partial = path.with_name(path.name + ".partial")
    try:
        run_program("pg_dump", ["--format=custom", f"--file={partial}", f"--dbname={url}"], timeout=DUMP_SECONDS)
        partial.rename(path)
    finally:
        partial.unlink(missing_ok=True)
    return path.stat().st_size


def _database_name(url: str) -> str:
    name = psycopg.conninfo.conninfo_to_dict(url).get("dbname")
    if not name:
        raise InputError("the database URL names no database to restore into")
    return str(name)


def restore_database(url: str, path: Path, embedding_dimension: int) -> None:
    """Replace the database `url` names with the backup at `path`, then migrate it to this version.

    The two row-security roles belong to the server, not to the backup: migrating the scratch
    database first creates them where they are missing, so the archive's grants and policies apply.
    Sessions still connected to the database are ended when it is replaced."""
    if not path.is_file():
        raise InputError(f"{path}: no such backup file")
    try:
        run_program("pg_restore", ["--list", str(path)], timeout=60)
    except DatabaseError:
        raise InputError(f"{path}: not a backup written by `lanegraph db backup` (pg_restore cannot read it)") from None
    target = _database_name(url)
    scratch = f"{target}_restoring"
    maintenance = psycopg.conninfo.make_conninfo(url, dbname=MAINTENANCE_DATABASE, options="")
    scratch_url = psycopg.conninfo.make_conninfo(url, dbname=scratch, options="")

    def recreate_scratch(connection: psycopg.Connection) -> None:
        connection.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(scratch)))
        connection.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0").format(sql.Identifier(scratch)))

    with connect(maintenance, autocommit=True) as connection:
        recreate_scratch(connection)
        prepare_database(scratch_url, embedding_dimension)
        recreate_scratch(connection)
        try:
            run_program(
                "pg_restore",
                ["--exit-on-error", "--single-transaction", "--no-owner", f"--dbname={scratch_url}", str(path)],
                timeout=DUMP_SECONDS,
            )
        except DatabaseError as error:
            connection.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(scratch)))
            raise DatabaseError(f"{path}: restore failed, the database is unchanged: {error}") from None
        connection.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(target)))
        connection.execute(sql.SQL("ALTER DATABASE {} RENAME TO {}").format(sql.Identifier(scratch), sql.Identifier(target)))
    prepare_database(url, embedding_dimension)
