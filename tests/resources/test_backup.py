"""`lanegraph db backup` then `db restore`: the restored database passes `lanegraph check` and find
returns the same rows; a file that is not a backup leaves the database as it was."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from pipelines.cli import main
from pipelines.config import load_config
from pipelines.read.find import find
from pipelines.resources.database import Database, connect, prepare_database
from tests import REPOSITORY
from tests.read.conftest import plant_world
from tests.read.planting import EMBEDDER

QUESTIONS = ("Who does Zorblax work with?", "Which units does the user prefer in answers?")


@pytest.fixture()
def own_database(server_url: str, embedding_dimension: int, monkeypatch) -> Iterator[str]:
    """A database of its own (a restore replaces a whole database), the planted read-side world in
    it, and DATABASE_URL pointing at it."""
    name = f"lanegraph_backup_{uuid.uuid4().hex[:8]}"
    maintenance = psycopg.conninfo.make_conninfo(server_url, dbname="postgres", options="")
    with connect(maintenance, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = psycopg.conninfo.make_conninfo(server_url, dbname=name, options="")
    prepare_database(url, embedding_dimension)
    with Database(url) as database:
        plant_world(database)
    monkeypatch.setenv("DATABASE_URL", url)
    yield url
    with connect(maintenance, autocommit=True) as connection:
        for database_name in (name, f"{name}_restoring"):
            connection.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database_name)))


def answers(url: str) -> list[list[tuple[str, str]]]:
    config = load_config(REPOSITORY / "lanes.yaml")
    with Database(url) as database:
        return [
            [(c.evidence_id, c.line) for c in find(database, question, config=config, embedder=EMBEDDER).evidence]
            for question in QUESTIONS
        ]


def test_backup_then_restore_then_find_returns_the_same_rows(own_database, tmp_path: Path):
    before = answers(own_database)
    assert all(before)
    backup = tmp_path / "graph.dump"
    assert main(["db", "backup", str(backup)]) == 0
    with connect(own_database) as connection:
        connection.execute("DELETE FROM document")
        connection.execute("DELETE FROM fact")
        connection.commit()
    assert answers(own_database) != before
    assert main(["db", "restore", str(backup)]) == 0
    assert answers(own_database) == before
    assert main(["check"]) == 0


def test_a_backup_never_overwrites_and_a_bad_file_restores_nothing(own_database, tmp_path: Path, capsys):
    existing = tmp_path / "taken.dump"
    existing.write_text("someone else's file")
    assert main(["db", "backup", str(existing)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert existing.read_text() == "someone else's file"
    before = answers(own_database)
    assert main(["db", "restore", str(existing)]) == 2
    assert "not a backup written by `lanegraph db backup`" in capsys.readouterr().err
    assert answers(own_database) == before
