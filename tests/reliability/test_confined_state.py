"""A confined block cannot change what other tenants share: fact counters, role settings, other
sessions, table locks, or what a refusal says about rows it cannot read.

Each test runs the attack from inside `Database.connection(scopes)`, as caller-written SQL would,
then checks that every other tenant's find still answers, and answers as before.
"""

from __future__ import annotations

import psycopg
import pytest

from pipelines.config import LanegraphConfig
from pipelines.read.access import record_access
from pipelines.read.find import find
from pipelines.resources.database import Database
from pipelines.resources.scopes import ScopedRole
from tests.read.planting import EMBEDDER, Planter, plant_heron

QUESTION = "Where is Project Heron built?"


@pytest.fixture()
def heron(database: Database) -> Database:
    """One public fact and one fact of each of two tenants, all answering QUESTION."""
    with database.connection() as connection:
        with Planter(connection) as plant:
            chunk, heron, porto = plant_heron(plant)
            for fact_id, statement in (
                ("f-public", "Project Heron is built in Porto."),
                ("f-alpha", "Project Heron is built in the Porto yard."),
                ("f-beta", "Project Heron is built near Porto."),
            ):
                plant.fact(fact_id, heron, "built_in", statement, object_id=porto,
                           source_chunk_id=chunk, document_id="heron")
        connection.execute("UPDATE fact SET scopes = '{alpha}' WHERE id = 'f-alpha'")
        connection.execute("UPDATE fact SET scopes = '{beta}' WHERE id = 'f-beta'")
    return database


def counters(database: Database) -> dict[str, tuple[int, object]]:
    with database.connection() as connection:
        return {i: (n, t) for i, n, t in connection.execute("SELECT id, access_count, last_accessed FROM fact")}


def answers(database: Database, config: LanegraphConfig, scopes: list[str] | None) -> list[str]:
    result = find(database, QUESTION, config=config, embedder=EMBEDDER, scopes=scopes)
    return [candidate.evidence_id for candidate in result.evidence]


@pytest.mark.parametrize("role", list(ScopedRole))
@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE fact SET access_count = -1 WHERE scopes = '{}'",
        "UPDATE fact SET access_count = 2147483647",
        "UPDATE fact SET last_accessed = '-infinity'",
        "UPDATE fact SET last_accessed = 'infinity'",
    ],
)
def test_no_confined_caller_may_write_the_access_counters(heron: Database, role: ScopedRole, statement: str) -> None:
    before = counters(heron)
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        with heron.connection(["alpha"], role=role) as connection:
            connection.execute(statement)
    assert counters(heron) == before


def test_access_is_recorded_only_through_finds_own_path(heron: Database, config: LanegraphConfig) -> None:
    result = find(heron, QUESTION, config=config, embedder=EMBEDDER, scopes=["alpha"])
    assert {"f-public", "f-alpha"} <= set(result.accessed_fact_ids)
    assert record_access(heron, [result], scopes=["alpha"]) == len(set(result.accessed_fact_ids))
    after = counters(heron)
    assert after["f-alpha"][0] == 1 and after["f-public"][0] == 1 and after["f-beta"][0] == 0
    # The recording function itself, called from a block with ids of the caller's choosing, refuses:
    # its signature binds it to the ids find returned, made with a key the block cannot read.
    for fact_ids in (["f-public"], ["f-beta"]):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            with heron.connection(["alpha"]) as connection:
                connection.execute("SELECT lanegraph_record_fact_access(%s, 'forged')", (fact_ids,))
    # A signed call still counts only facts the caller may read.
    beta = find(heron, QUESTION, config=config, embedder=EMBEDDER, scopes=["beta"])
    assert record_access(heron, [beta], scopes=["alpha"]) == 1  # f-public only
    assert counters(heron)["f-beta"][0] == 0


def test_any_stored_counter_ranks_without_failing(heron: Database, config: LanegraphConfig) -> None:
    """Whatever the owner's bulk load or an old database holds, the facts lane ranks it."""
    with heron.connection() as connection:
        connection.execute("ALTER TABLE fact DROP CONSTRAINT IF EXISTS fact_access_count_in_range")
        connection.execute("ALTER TABLE fact DROP CONSTRAINT IF EXISTS fact_last_accessed_finite")
    for access_count, last_accessed in ((-1, None), (-5, "-infinity"), (2147483647, "infinity"),
                                        (0, "2999-01-01")):
        with heron.connection() as connection:
            connection.execute("UPDATE fact SET access_count = %s, last_accessed = %s", (access_count, last_accessed))
        assert "fact:f-public" in answers(heron, config, None)
        assert "fact:f-alpha" in answers(heron, config, ["alpha"])


def login_of(connection: psycopg.Connection) -> str:
    return connection.execute("SELECT session_user").fetchone()[0]


@pytest.mark.parametrize("role", list(ScopedRole))
def test_a_blocks_role_settings_reach_no_other_tenant(
    heron: Database, config: LanegraphConfig, role: ScopedRole
) -> None:
    expected = answers(heron, config, ["beta"])
    with heron.connection(["alpha"], role=role) as connection:
        alpha_login = login_of(connection)
        connection.execute("SET ROLE NONE")
        connection.execute("ALTER ROLE CURRENT_USER SET statement_timeout = '1ms'")
        connection.execute("ALTER ROLE CURRENT_USER SET search_path = pg_catalog")
        connection.execute("ALTER ROLE CURRENT_USER PASSWORD 'changed-by-the-caller'")
    with heron.connection(["beta"], role=role) as connection:
        assert login_of(connection) != alpha_login
        # No other login's settings are the block's to change.
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            connection.execute("SET ROLE NONE")
            connection.execute(f'ALTER ROLE "{alpha_login}" RESET ALL')
    # New connections (another process, or after the kept ones closed) see the same.
    with Database(heron.url) as fresh:
        assert answers(fresh, config, ["beta"]) == expected
        # And a new block of alpha's own opens with the login as the owner made it.
        assert "fact:f-alpha" in answers(fresh, config, ["alpha"])
        with fresh.connection(["alpha"], role=role) as connection:
            assert connection.execute("SHOW statement_timeout").fetchone()[0] == "0"


@pytest.mark.parametrize("role", list(ScopedRole))
def test_a_block_cannot_terminate_another_tenants_session(
    heron: Database, config: LanegraphConfig, role: ScopedRole
) -> None:
    with heron.connection(["beta"]) as beta:
        victim = beta.execute("SELECT pg_backend_pid()").fetchone()[0]
        for escape in ("RESET ROLE", "SET ROLE NONE"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                with heron.connection(["alpha"], role=role) as connection:
                    connection.execute(escape)
                    connection.execute("SELECT pg_terminate_backend(%s)", (victim,))
        assert beta.execute("SELECT count(*) FROM fact").fetchone()[0] == 2
    with heron.connection(["alpha"], role=role) as connection:
        members = connection.execute(
            "SELECT pg_has_role(session_user, 'pg_signal_backend', 'MEMBER')"
        ).fetchone()[0]
    assert not members
    assert "fact:f-beta" in answers(heron, config, ["beta"])


@pytest.mark.parametrize("role", list(ScopedRole))
@pytest.mark.parametrize("mode", ["SHARE", "SHARE ROW EXCLUSIVE", "EXCLUSIVE", "ACCESS EXCLUSIVE"])
def test_a_block_takes_no_table_lock_beyond_row_locks(heron: Database, role: ScopedRole, mode: str) -> None:
    for table in ("chunk", "fact", "document"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            with heron.connection(["alpha"], role=role) as connection:
                connection.execute(f"LOCK TABLE {table} IN {mode} MODE NOWAIT")


def test_community_edge_refuses_a_used_and_an_unused_pair_alike(heron: Database) -> None:
    with heron.connection() as connection:
        connection.execute(
            "INSERT INTO community_edge (source, target, weight, scopes) VALUES ('e1', 'e2', 1, '{beta}')"
        )

    def told(source: str, target: str) -> str:
        try:
            with heron.connection(["alpha"], role=ScopedRole.WRITER) as connection:
                connection.execute(
                    "INSERT INTO community_edge (source, target, weight, scopes) VALUES (%s, %s, 1, '{alpha}')",
                    (source, target),
                )
        except psycopg.Error as error:
            return f"{type(error).__name__}: {error.diag.message_primary}"
        return ""

    used, unused = told("e1", "e2"), told("e7", "e8")
    assert used == unused and used.startswith("InsufficientPrivilege"), (used, unused)
