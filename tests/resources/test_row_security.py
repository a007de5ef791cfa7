"""Scopes under row-level security: the catalog, the scoped connection, and the two caller roles."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator

import numpy as np
import psycopg
import pytest
from psycopg import sql

from pipelines.shipped import SQL_TEMPLATES
from pipelines.resources.database import Database, connect, prepare_database
from pipelines.errors import DatabaseError, InputError
from pipelines.resources.migrations import change_embedding_dimension, hnsw_indexes_rebuilt
from pipelines.resources.scopes import ConfinedLogin, ScopedRole, normalize_scopes, parse_scopes
from tests.reliability.tenancy import ESCAPES

# Bookkeeping without scopes: the migrations', and the write side's registry of source files. No
# caller role may read them (checked below), so they need no row security.
SCOPE_FREE_TABLES = {
    "lanegraph_migration", "lanegraph_setting", "lanegraph_confined_login", "lanegraph_graph_refresh", "document_source",
    # The build's graph write epoch (migration 0114): taken by the owner's merges, never by a caller.
    "lanegraph_graph_write_epoch",
    # The server's API tokens (hashed) and ingest jobs: read by the server as owner, never by a caller.
    "lanegraph_api_token", "lanegraph_api_job",
}
POLICIES = {
    "lanegraph_owner", "lanegraph_reader_select", "lanegraph_writer_select", "lanegraph_writer_insert",
    "lanegraph_writer_update",
}


def plant_documents(connection: psycopg.Connection, scopes_by_id: dict[str, list[str]]) -> None:
    for document_id, scopes in scopes_by_id.items():
        connection.execute(
            "INSERT INTO document (id, body, content_hash, scopes) VALUES (%s, 'body', 'hash', %s)",
            (document_id, scopes),
        )


def visible_documents(connection: psycopg.Connection) -> set[str]:
    return {document_id for (document_id,) in connection.execute("SELECT id FROM document")}


@pytest.fixture()
def tenants(database: Database) -> Database:
    """Documents readable by everyone, by a, by b, and only by holders of both a and b."""
    with database.connection() as connection:
        plant_documents(connection, {"public": [], "a": ["a"], "b": ["b"], "ab": ["a", "b"]})
    return database


def test_every_scoped_table_is_under_forced_row_security(database: Database) -> None:
    with database.connection() as connection:
        tables = connection.execute(
            """
            SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity,
                   EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'scopes'),
                   ARRAY(SELECT polname::text FROM pg_policy p WHERE p.polrelid = c.oid)
            FROM pg_class c
            WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
            """
        ).fetchall()
        views = connection.execute(
            "SELECT relname, coalesce(reloptions, '{}') FROM pg_class "
            "WHERE relnamespace = current_schema()::regnamespace AND relkind = 'v'"
        ).fetchall()
    unscoped = {name for name, _, _, has_scopes, _ in tables if not has_scopes}
    assert unscoped <= SCOPE_FREE_TABLES, "a table without `scopes`: callers cannot read it, or it is unprotected"
    with database.connection() as connection:
        granted = connection.execute(
            "SELECT table_name FROM information_schema.role_table_grants "
            "WHERE table_schema = current_schema() AND grantee = ANY(%s) AND table_name = ANY(%s)",
            ([role.value for role in ScopedRole], sorted(unscoped)),
        ).fetchall()
    assert granted == []
    for name, enabled, forced, has_scopes, policies in tables:
        if has_scopes:
            assert enabled and forced, name
            assert set(policies) >= POLICIES, name
    assert views and all("security_invoker=true" in options for _, options in views)


def test_every_scoped_table_has_statistics_a_confined_planner_may_use(database: Database) -> None:
    """The read policy is estimated through statistics on cardinality(scopes): a table without them
    would cost its confined ordered scans at 0.5 % of its rows again."""
    with database.connection() as connection:
        missing = connection.execute(
            """
            SELECT c.relname FROM pg_class c
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'scopes' AND NOT a.attisdropped
            WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
              AND NOT EXISTS (
                  SELECT FROM pg_statistic_ext s
                  WHERE s.stxrelid = c.oid AND pg_get_statisticsobjdef_expressions(s.oid) = '{cardinality(scopes)}'
              )
            """
        ).fetchall()
    assert missing == []


def test_the_caller_roles_and_their_logins_hold_nothing_privileged(database: Database) -> None:
    # One login per caller role and scope set, made by the first block that needs it.
    for scopes in ([], ["a"], ["a", "b"]):
        for role in ScopedRole:
            with database.connection(scopes, role=role):
                pass
    with database.connection() as connection:
        roles = connection.execute(
            "SELECT rolname, rolsuper, rolbypassrls, rolcanlogin, rolinherit, "
            "ARRAY(SELECT m.roleid::regrole::text FROM pg_auth_members m WHERE m.member = r.oid) "
            "FROM pg_roles r WHERE rolname = ANY(%s) "
            "OR rolname IN (SELECT login FROM lanegraph_confined_login)",
            ([role.value for role in ScopedRole],),
        ).fetchall()
        logins = dict(connection.execute("SELECT login, caller_role FROM lanegraph_confined_login").fetchall())
    assert sorted(logins.values()) == ["lanegraph_reader"] * 3 + ["lanegraph_writer"] * 3
    for name, superuser, bypass, can_login, inherits, member_of in roles:
        assert not superuser and not bypass, name
        if name in logins:
            assert can_login and not inherits and member_of == [logins[name]], name
        else:
            assert not can_login and member_of == [], name
    assert len(roles) == 8


@pytest.mark.parametrize(
    "scopes, expected",
    [
        ([], {"public"}),
        (["a"], {"public", "a"}),
        (["b", "c"], {"public", "b"}),
        (["a", "b"], {"public", "a", "b", "ab"}),
    ],
)
def test_a_reader_sees_only_rows_whose_every_scope_it_holds(
    tenants: Database, scopes: list[str], expected: set[str]
) -> None:
    with tenants.connection(scopes) as connection:
        assert connection.execute("SELECT current_user").fetchone()[0] == "lanegraph_reader"
        assert visible_documents(connection) == expected
    with tenants.connection() as connection:
        assert visible_documents(connection) == {"public", "a", "b", "ab"}


@pytest.mark.parametrize("role", list(ScopedRole))
def test_no_scopes_setting_means_no_rows(tenants: Database, role: ScopedRole) -> None:
    """Not even public rows: '{}' <@ NULL is NULL, and the policy's shortcut for public rows must
    keep that (0042_row_security_selectivity.sql)."""
    with tenants.connection() as connection:
        connection.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(role.value)))
        assert visible_documents(connection) == set()


def confined_backends(database: Database) -> int:
    """Server processes logged in as this schema's confined logins, once closed ones have exited."""
    with database.connection() as connection:
        logins = [login for (login,) in connection.execute("SELECT login FROM lanegraph_confined_login")]
    deadline = time.monotonic() + 10
    while True:
        with database.connection() as connection:
            count = connection.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE usename = ANY(%s)", (logins,)
            ).fetchone()[0]
        # A closed connection's backend exits a moment after the client hangs up.
        if count == 0 or time.monotonic() > deadline:
            return count


def test_a_confined_block_cannot_commit_and_its_connections_close_with_the_database(tenants: Database) -> None:
    with Database(tenants.url, max_size=2) as database:
        with pytest.raises(psycopg.ProgrammingError):
            with database.connection(["a"]) as connection:
                connection.commit()
        for scopes, role in ((["a"], ScopedRole.READER), (["b"], ScopedRole.WRITER), ([], ScopedRole.READER)):
            with database.connection(scopes, role=role) as connection:
                visible_documents(connection)
        with pytest.raises(psycopg.errors.UndefinedTable):
            with database.connection(["a"]) as connection:
                connection.execute("SELECT FROM no_such_table")
        with tenants.connection() as connection:
            logins = [login for (login,) in connection.execute("SELECT login FROM lanegraph_confined_login")]
            kept = connection.execute(
                "SELECT state FROM pg_stat_activity WHERE usename = ANY(%s)", (logins,)
            ).fetchall()
        # Kept between blocks, idle (no transaction left open), no more than the pool's size.
        assert 1 <= len(kept) <= 2 and {state for (state,) in kept} == {"idle"}
    assert confined_backends(tenants) == 0


def backend_of(database: Database, scopes: list[str], role: ScopedRole = ScopedRole.READER) -> int:
    with database.connection(scopes, role=role) as connection:
        return connection.info.backend_pid


def test_a_kept_confined_connection_serves_only_its_own_role_and_scopes(tenants: Database) -> None:
    """A scope signature is bound to the backend, so a backend must never hold two scope sets."""
    # Room for all five callers below, so none is closed to make room for another.
    with Database(tenants.url, max_size=5) as database:
        a = backend_of(database, ["a"])
        assert backend_of(database, ["a"]) == a
        others = {
            backend_of(database, ["b"]), backend_of(database, []), backend_of(database, ["a"], ScopedRole.WRITER)
        }
        assert a not in others and len(others) == 3
        # The same scopes given in another order or twice are the same caller.
        assert backend_of(database, ["b", "a", "a"]) == backend_of(database, ["a", "b"])
        with database.connection(["a"]) as connection:
            assert connection.info.backend_pid == a
            assert visible_documents(connection) == {"public", "a"}


def test_a_kept_confined_connection_carries_no_session_state_into_the_next_block(tenants: Database) -> None:
    with Database(tenants.url, max_size=1) as database:
        with database.connection(["a"]) as connection:
            pid = connection.info.backend_pid
            connection.execute("SET application_name = 'left behind'")
            connection.execute("SELECT set_config('lanegraph.left_behind', 'yes', false)")
            connection.execute("SELECT set_config('lanegraph.scopes', '{a,b}', false)")
            connection.execute("CREATE TEMP TABLE left_behind AS SELECT id FROM document")
            connection.execute("DECLARE left_behind CURSOR WITH HOLD FOR SELECT id FROM document")
            connection.execute("LISTEN left_behind")
            connection.execute("SELECT pg_advisory_lock(42)")
            connection.execute("SET ROLE NONE")
        with database.connection(["a"]) as connection:
            assert connection.info.backend_pid == pid
            assert connection.execute(
                "SELECT current_setting('application_name'), current_setting('lanegraph.left_behind', true), "
                "current_user, (SELECT count(*) FROM pg_class WHERE relnamespace = pg_my_temp_schema()), "
                "(SELECT count(*) FROM pg_cursors), (SELECT count(*) FROM pg_listening_channels()), "
                "(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid())"
            ).fetchone() == ("", "", ScopedRole.READER.value, 0, 0, 0, 0)
            assert visible_documents(connection) == {"public", "a"}


@pytest.mark.parametrize(
    "statement",
    ["PREPARE left_behind AS SELECT 1", "DEALLOCATE ALL", "DEALLOCATE {find}", "DEALLOCATE {find}; PREPARE {find} AS SELECT 1"],
)
def test_a_block_that_touches_prepared_statements_does_not_pass_its_connection_on(
    tenants: Database, statement: str
) -> None:
    """A kept connection keeps find's prepared statements; a block that prepared or deallocated any
    (it could have put its own statement under the name of one of find's) ends the connection."""
    with Database(tenants.url, max_size=1) as database:
        with database.connection(["a"]) as connection:
            pid = connection.info.backend_pid
            with psycopg.RawCursor(connection) as cursor:
                cursor.execute("SELECT id FROM document WHERE id = $1", ["a"], prepare=True)
            (name,) = connection.execute("SELECT name FROM pg_prepared_statements").fetchone()
        with database.connection(["a"]) as connection:
            assert connection.info.backend_pid == pid
            connection.execute(statement.format(find=name))
        with database.connection(["a"]) as connection:
            assert connection.info.backend_pid != pid
            assert connection.execute("SELECT count(*) FROM pg_prepared_statements").fetchone()[0] == 0


def documents_after(connection: psycopg.Connection, statement: str) -> set[str] | str:
    """The documents the session sees after running `statement`, or why it may see none."""
    try:
        with connection.transaction():
            connection.execute(statement)
    except psycopg.Error as error:
        return f"refused: {error.diag.message_primary}"
    try:
        with connection.transaction():
            return visible_documents(connection)
    except (psycopg.errors.InsufficientPrivilege, psycopg.errors.UndefinedTable):
        # The login itself holds no rights, not even to see the schema's tables.
        return "no rights left"


@pytest.mark.parametrize("role", list(ScopedRole))
@pytest.mark.parametrize("escape", ESCAPES)
def test_caller_written_sql_cannot_leave_the_confinement(tenants: Database, role: ScopedRole, escape: str) -> None:
    with tenants.connection() as connection:
        owner = connection.execute("SELECT current_user").fetchone()[0]
    with tenants.connection(["a"], role=role) as connection:
        seen = documents_after(connection, escape.format(owner=owner))
        assert isinstance(seen, str) or seen <= {"public", "a"}, (escape, seen)
        # Whatever the statement did, the next statements of the block stay confined too.
        again = documents_after(connection, "SELECT 1")
        assert isinstance(again, str) or again <= {"public", "a"}, (escape, again)


def test_a_signature_made_for_another_backend_or_scopes_opens_nothing(tenants: Database) -> None:
    with tenants.connection(["b"]) as other:
        stolen_scopes, stolen_signature = other.execute(
            "SELECT current_setting('lanegraph.scopes'), current_setting('lanegraph.scopes_signature')"
        ).fetchone()
    with tenants.connection(["a"]) as connection:
        connection.execute(
            "SELECT set_config('lanegraph.scopes', %s, false), set_config('lanegraph.scopes_signature', %s, false)",
            (stolen_scopes, stolen_signature),
        )
        assert visible_documents(connection) == set()
    with tenants.connection(["a"]) as connection:
        connection.execute("SELECT set_config('lanegraph.scopes', '{a,b}', false)")
        assert visible_documents(connection) == set()


def test_a_confined_session_cannot_read_or_shadow_the_signing_keys(tenants: Database) -> None:
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        with tenants.connection(["a"]) as connection:
            connection.execute("SELECT signing_key FROM lanegraph_confined_login")
    with tenants.connection(["a"]) as connection:
        # A temporary table is found before the schema's: lanegraph_caller_scopes() must not be.
        connection.execute(
            "CREATE TEMP TABLE lanegraph_confined_login AS "
            "SELECT session_user::name AS login, '\\x00'::bytea AS signing_key, "
            "'' AS password, current_user::name AS caller_role"
        )
        forged = ConfinedLogin(ScopedRole.READER, "", "", b"\x00")
        identity = connection.execute("SELECT lanegraph_backend_identity()").fetchone()[0]
        connection.execute(
            "SELECT set_config('lanegraph.scopes', '{a,b}', false), set_config('lanegraph.scopes_signature', %s, false)",
            (forged.sign(identity, "{a,b}"),),
        )
        assert visible_documents(connection) == set()


def test_live_fact_does_not_bypass_row_security(database: Database) -> None:
    with database.connection() as connection:
        connection.execute("INSERT INTO entity_kind (name) VALUES ('project')")
        connection.execute(
            "INSERT INTO entity (id, name, kind, normalized_name) VALUES ('p', 'Atlas', 'project', 'atlas')"
        )
        for fact_id, scopes in (("open", []), ("secret", ["board"])):
            connection.execute(
                "INSERT INTO fact (id, subject_id, predicate, object_value, statement, scopes) "
                "VALUES (%s, 'p', 'status', %s, %s, %s)",
                (fact_id, fact_id, f"Atlas is {fact_id}.", scopes),
            )
    with database.connection(["staff"]) as connection:
        assert [r for (r,) in connection.execute("SELECT id FROM live_fact")] == ["open"]


def test_the_reader_records_access_only_on_facts_it_can_see(database: Database) -> None:
    with database.connection() as connection:
        connection.execute("INSERT INTO entity_kind (name) VALUES ('project')")
        connection.execute(
            "INSERT INTO entity (id, name, kind, normalized_name) VALUES ('p', 'Atlas', 'project', 'atlas')"
        )
        connection.execute(
            "INSERT INTO fact (id, subject_id, predicate, object_value, statement, scopes) VALUES "
            "('mine', 'p', 'status', 'x', 'Atlas x.', '{a}'), ('theirs', 'p', 'status', 'y', 'Atlas y.', '{b}')"
        )
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        with database.connection(["a"]) as connection:
            connection.execute("UPDATE fact SET access_count = access_count + 1, last_accessed = now()")
    with database.connection(["a"]) as connection:
        signature = database.block_signature(connection, "access", ["mine", "theirs"])
        touched = connection.execute(
            "SELECT lanegraph_record_fact_access(%s, %s)", (["mine", "theirs"], signature)
        ).fetchone()[0]
    assert touched == 1
    with database.connection() as connection:
        assert dict(connection.execute("SELECT id, access_count FROM fact")) == {"mine": 1, "theirs": 0}
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        with database.connection(["a"]) as connection:
            connection.execute("UPDATE fact SET statement = 'rewritten'")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        with database.connection(["a", "b"]) as connection:
            connection.execute("DELETE FROM document")


def writer_id_prefix(connection: psycopg.Connection) -> str:
    return connection.execute("SELECT lanegraph_caller_id_prefix()").fetchone()[0]


def test_a_writer_changes_only_its_own_rows_never_public_ones(tenants: Database) -> None:
    with tenants.connection(["a"], role=ScopedRole.WRITER) as connection:
        assert visible_documents(connection) == {"public", "a"}
        # DELETE on the table would let LOCK TABLE take any mode: deletes go through a function.
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            with connection.transaction():
                connection.execute("DELETE FROM document")
        deleted = connection.execute(
            "SELECT lanegraph_delete_own_rows('document', 'id', %s)", (["a", "ab", "b", "public"],)
        ).fetchone()[0]
        assert deleted == 1
    with tenants.connection() as connection:
        assert visible_documents(connection) == {"public", "b", "ab"}
    with tenants.connection(["a"], role=ScopedRole.WRITER) as connection:
        mine = writer_id_prefix(connection) + "a2"
        plant_documents(connection, {mine: ["a"]})
        renamed = connection.execute("UPDATE document SET title = 'renamed' RETURNING id").fetchall()
    assert renamed == [(mine,)]
    for escalated in (["a", "b"], []):
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            with tenants.connection(["a"], role=ScopedRole.WRITER) as connection:
                plant_documents(connection, {writer_id_prefix(connection) + "escalated": escalated})
    # Same id as another tenant's document: the upsert may neither overwrite nor reveal it.
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
        with tenants.connection(["a"], role=ScopedRole.WRITER) as connection:
            connection.execute(
                "INSERT INTO document (id, body, content_hash, scopes) VALUES ('b', 'stolen', 'h', '{a}') "
                "ON CONFLICT (id) DO UPDATE SET body = excluded.body"
            )
    with tenants.connection() as connection:
        assert connection.execute("SELECT body FROM document WHERE id = 'b'").fetchone() == ("body",)


def refusal(database: Database, scopes: list[str], statement: str, parameters: tuple = ()) -> str:
    """What a writer confined to `scopes` is told when `statement` fails ('' when it succeeds)."""
    try:
        with database.connection(scopes, role=ScopedRole.WRITER) as connection:
            connection.execute(statement, parameters)
    except psycopg.Error as error:
        return f"{type(error).__name__}: {error.diag.message_primary}"
    return ""


def test_a_writer_cannot_tell_whether_another_tenants_id_exists(tenants: Database) -> None:
    """Another tenant's id and an id nobody uses get the same refusal, before the unique index or a
    foreign key could answer "duplicate key" or "no such row" (0052_writer_id_prefix.sql)."""
    prefixes = {}
    for scopes in (["a"], ["b"], ["a", "b"]):
        with tenants.connection(scopes, role=ScopedRole.WRITER) as connection:
            prefixes[tuple(scopes)] = writer_id_prefix(connection)
    assert len(set(prefixes.values())) == 3
    theirs = prefixes[("b",)] + "plan"
    with tenants.connection(["b"], role=ScopedRole.WRITER) as connection:
        plant_documents(connection, {theirs: ["b"]})
    my_chunk = prefixes[("a",)] + "c1"
    insert_document = "INSERT INTO document (id, body, content_hash, scopes) VALUES (%s, 'x', 'h', '{a}')"
    insert_chunk = (
        "INSERT INTO chunk (id, document_id, position, text, token_count, content_hash, scopes) "
        "VALUES (%s, %s, 0, 'x', 1, 'h', '{a}')"
    )
    for other_tenants_id in ("b", "ab", theirs):
        for statement, parameters, unused in (
            (insert_document, (other_tenants_id,), ("never-used",)),
            (insert_document + " ON CONFLICT DO NOTHING", (other_tenants_id,), ("never-used",)),
            (insert_chunk, (my_chunk, other_tenants_id), (my_chunk, "never-used")),
        ):
            told = refusal(tenants, ["a"], statement, parameters)
            assert told == refusal(tenants, ["a"], statement, unused), (statement, other_tenants_id)
            assert told.startswith("InsufficientPrivilege") and "row-level security" in told, told


def plant_chunks(connection: psycopg.Connection, vectors: np.ndarray, scopes_of: Callable[[int], list[str]]) -> None:
    """One chunk per vector, chunk i scoped `scopes_of(i)`, in a document of the same scopes; then ANALYZE.

    The HNSW index is built again after the rows are in, as a first build does: inserted into row by
    row, 8,000 chunks took most of a planning test's time."""
    scope_sets = {tuple(scopes_of(i)) for i in range(len(vectors))}
    plant_documents(connection, {"d-" + "-".join(scopes): list(scopes) for scopes in scope_sets})
    with hnsw_indexes_rebuilt(connection, "chunk"), connection.cursor().copy(
        "COPY chunk (id, document_id, position, text, token_count, content_hash, embedding, scopes) "
        "FROM STDIN WITH (FORMAT BINARY)"
    ) as copy:
        copy.set_types(["text", "text", "int4", "text", "int4", "text", "vector", "text[]"])
        for i, vector in enumerate(vectors):
            scopes = scopes_of(i)
            copy.write_row([f"c{i}", "d-" + "-".join(scopes), i, "x", 1, "h", vector, scopes])
    connection.execute("ANALYZE chunk")


def test_the_dense_index_serves_a_small_tenant_under_row_security(database: Database, embedding_dimension: int) -> None:
    rows, tenants_count, k = 2000, 40, 10
    vectors = np.random.default_rng(7).standard_normal((rows, embedding_dimension)).astype(np.float32)
    with database.connection() as connection:
        plant_chunks(connection, vectors, lambda i: [f"t{i % tenants_count}"])
    dense = "SELECT id, scopes FROM chunk ORDER BY embedding <=> %s LIMIT %s"
    with database.connection(["t3"]) as connection:
        # On a table this small a sequential scan is cheaper; forbidding it shows whether the policy
        # leaves the planner an index path at all, and makes the rows below come from that path.
        connection.execute("SET LOCAL enable_seqscan = off")
        plan = "\n".join(r for (r,) in connection.execute("EXPLAIN " + dense, (vectors[0], k)))
        found = connection.execute(dense, (vectors[0], k)).fetchall()
    assert "Index Scan using chunk_embedding_hnsw" in plan
    assert len(found) == k and all(scopes == ["t3"] for _, scopes in found)


# Rows enough for the owner's generic plan of a dense window to prefer the HNSW index to a sequential
# scan and sort (below ~8000 rows the sort is cheaper for the owner too, so there is nothing to check).
PLANNED_ROWS = 8000


def test_a_confined_dense_window_plans_the_hnsw_index_as_the_owner_does(
    database: Database, embedding_dimension: int
) -> None:
    """Under the generic plan find runs, the policy must not make the index look dearer than a full
    scan: estimated at 0.5 % of the rows, it made an ordered HNSW scan "read 200x LIMIT rows", and
    every confined find seq-scanned the embedded tables (0042_row_security_selectivity.sql)."""
    vectors = np.random.default_rng(11).standard_normal((PLANNED_ROWS, embedding_dimension)).astype(np.float32)
    with database.connection() as connection:
        # Half the rows public, half spread over 200 tenants: only the public share (from the
        # expression statistics on cardinality(scopes)) makes the index worth its cost here.
        plant_chunks(connection, vectors, lambda i: [] if i % 2 == 0 else [f"t{i % 400}"])
    dense = "SELECT id, scopes FROM chunk ORDER BY embedding <=> %s LIMIT 50"

    def generic_plan(scopes: list[str] | None) -> str:
        with database.connection(scopes) as connection:
            return "\n".join(r for (r,) in connection.execute("EXPLAIN (GENERIC_PLAN) " + dense.replace("%s", "$1")))

    assert "Index Scan using chunk_embedding_hnsw" in generic_plan(None)
    for scopes in ([], ["t1"], ["t1", "t2"]):
        assert "Index Scan using chunk_embedding_hnsw" in generic_plan(scopes), scopes
    with database.connection(["t1"]) as connection:
        found = connection.execute(dense, (vectors[1],)).fetchall()
    assert len(found) == 50 and all(set(scopes) <= {"t1"} for _, scopes in found)


def named_lookup(template: str, embedding_dimension: int) -> str:
    """A lane template with its binds as the positional parameters of a generic plan."""
    text = (SQL_TEMPLATES / "lanes" / template).read_text()
    for bind, parameter in {
        ":question_terms": "CAST($1 AS text[])",
        ":query_vector": f"CAST($2 AS vector({embedding_dimension}))",
        ":fusion_depth": "CAST($3 AS bigint)",
        ":common_title_mentions": "CAST($4 AS double precision)",
        ":bridge_fanout": "CAST($5 AS bigint)",
    }.items():
        text = text.replace(bind, parameter)
    return text


def test_a_confined_callers_exact_lookups_read_the_btree_indexes(database: Database, embedding_dimension: int) -> None:
    """Text `=` is leakproof, so the stored lower-case columns of 0044 stay index conditions under the
    read policy, which PostgreSQL evaluates before lower(), `&&` or any other non-leakproof qual."""
    vectors = np.random.default_rng(13).standard_normal((PLANNED_ROWS, embedding_dimension)).astype(np.float32)
    with database.connection() as connection:
        # One public document of half the chunks and 2000 tenants' documents of two chunks each.
        plant_chunks(connection, vectors, lambda i: [] if i % 2 == 0 else [f"t{i % 4000}"])
        connection.execute("UPDATE document SET title = 'Title ' || upper(id)")
        connection.execute("INSERT INTO entity_kind (name) VALUES ('thing')")
        connection.execute(
            "INSERT INTO entity (id, name, kind, normalized_name, aliases, scopes)"
            " SELECT 'e-' || id, 'Name ' || upper(id), 'thing', 'name ' || id, ARRAY['alias ' || id], scopes"
            " FROM document"
        )
        connection.execute("ANALYZE document, entity, entity_alias")
    mentions, title = named_lookup("facts/mentions.sql", embedding_dimension), named_lookup("sources/title.sql", embedding_dimension)
    terms = ["name d-", "name d-t1", "alias d-t3", "name d-t5", "title d-t7"]
    for scopes in ([], ["t1"], ["t3", "t4"]):
        with database.connection(scopes) as connection:
            plans = {
                name: "\n".join(row for (row,) in connection.execute("EXPLAIN (GENERIC_PLAN) " + text))
                for name, text in (("mentions", mentions), ("title", title))
            }
            lookup = mentions.replace("$1", "%(terms)s")
            found = {row for (row,) in connection.execute(f"SELECT entity_id FROM ({lookup}) AS named", {"terms": terms})}
            before_0044 = {
                row for (row,) in connection.execute(
                    "SELECT id FROM entity WHERE lower(name) = ANY(%s) OR aliases && %s", (terms, terms)
                )
            }
        assert "entity_name_lower_column_idx" in plans["mentions"], (scopes, plans["mentions"])
        assert "entity_alias_pkey" in plans["mentions"], (scopes, plans["mentions"])
        assert "document_title_lower_column_idx" in plans["title"], (scopes, plans["title"])
        assert found == before_0044, scopes
    assert found == {"e-d-", "e-d-t3"}


def test_changing_the_width_keeps_views_behind_row_security(make_schema_url: Callable[[], str]) -> None:
    url = make_schema_url()
    with connect(url, autocommit=True) as connection:
        change_embedding_dimension(connection, 8)
    with Database(url) as database:
        test_live_fact_does_not_bypass_row_security(database)


@pytest.mark.parametrize(
    "scopes, problem",
    [("tenant-a", "expected a list"), ([""], "empty"), ([" a"], "surrounding spaces"),
     (["a\x00"], "control characters"), ([1], "not text"), (["x" * 201], "longer than")],
)
def test_bad_scopes_are_refused_before_any_query(database: Database, scopes: object, problem: str) -> None:
    with pytest.raises(InputError, match=problem):
        with database.connection(scopes):  # type: ignore[arg-type]
            pass


def test_command_line_scopes() -> None:
    assert parse_scopes("b, a,a") == ("a", "b")
    assert parse_scopes("  ") == ()
    with pytest.raises(InputError, match="--scopes: scope 2"):
        parse_scopes("a,,b")
    assert normalize_scopes(("z", "y")) == ("y", "z")


@pytest.fixture()
def unprivileged_owner(server_url: str) -> Iterator[tuple[str, str]]:
    """A login role that owns a schema of its own and nothing else: (role name, URL as it)."""
    with connect(server_url, autocommit=True) as connection:
        if not connection.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()[0]:
            pytest.skip("creating a login role needs a superuser on the test server")
        # Only a superuser may create these extensions: for such an owner they must exist already
        # (docs/operations.md), made by the server's administrator.
        connection.execute("CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public")
        connection.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public")
        owner = f"lanegraph_owner_{uuid.uuid4().hex[:8]}"
        connection.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(owner)))
        connection.execute(sql.SQL("CREATE SCHEMA {0} AUTHORIZATION {0}").format(sql.Identifier(owner)))
    yield owner, psycopg.conninfo.make_conninfo(server_url, user=owner, options=f"-c search_path={owner},public")
    with connect(server_url, autocommit=True) as connection:
        logins = connection.execute(
            "SELECT rolname FROM pg_roles WHERE oid IN (SELECT roleid FROM pg_auth_members WHERE member = %s::regrole) "
            "AND rolcanlogin",
            (owner,),
        ).fetchall()
        connection.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(owner)))
        for (login,) in logins:
            connection.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(login)))
        connection.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(owner)))


def test_an_owner_that_cannot_switch_roles_gets_the_grant_to_ask_for(
    unprivileged_owner: tuple[str, str], embedding_dimension: int
) -> None:
    owner, url = unprivileged_owner
    with pytest.raises(DatabaseError) as raised:
        prepare_database(url, embedding_dimension)
    message = str(raised.value)
    assert "0040_row_security.sql" in message and "\n" not in message
    assert f"GRANT lanegraph_reader, lanegraph_writer TO {owner} WITH INHERIT FALSE, SET TRUE" in message


def test_an_owner_that_cannot_create_the_logins_gets_the_grant_to_ask_for(
    unprivileged_owner: tuple[str, str], server_url: str, embedding_dimension: int
) -> None:
    owner, url = unprivileged_owner
    with connect(server_url, autocommit=True) as connection:
        connection.execute(
            sql.SQL("GRANT lanegraph_reader, lanegraph_writer TO {} WITH INHERIT FALSE, SET TRUE").format(
                sql.Identifier(owner)
            )
        )
    with pytest.raises(DatabaseError) as raised:
        prepare_database(url, embedding_dimension)
    message = str(raised.value)
    assert "0051_confined_logins.sql" in message and "\n" not in message
    assert f"ALTER ROLE {owner} CREATEROLE" in message and "WITH ADMIN TRUE" in message


def test_an_owner_with_the_grants_it_was_told_needs_no_superuser(
    unprivileged_owner: tuple[str, str], server_url: str, embedding_dimension: int
) -> None:
    owner, url = unprivileged_owner
    with connect(server_url, autocommit=True) as connection:
        connection.execute(sql.SQL("ALTER ROLE {} CREATEROLE").format(sql.Identifier(owner)))
        connection.execute(
            sql.SQL("GRANT lanegraph_reader, lanegraph_writer TO {} WITH ADMIN TRUE, INHERIT FALSE, SET TRUE").format(
                sql.Identifier(owner)
            )
        )
    prepare_database(url, embedding_dimension)
    with Database(url) as database:
        with database.connection() as connection:
            plant_documents(connection, {"public": [], "a": ["a"], "b": ["b"]})
        with database.connection(["a"]) as connection:
            assert documents_after(connection, f"SET ROLE {owner}").startswith("refused")  # type: ignore[union-attr]
            assert visible_documents(connection) == {"public", "a"}


def test_opening_the_primary_recreates_a_missing_login_role(
    make_schema_url: Callable[[], str], server_url: str, embedding_dimension: int
) -> None:
    """A database restored into another server keeps its login rows, but roles are not in its dump."""
    url = make_schema_url()
    with Database(url) as database:
        with database.connection(["a"]):
            pass
        with database.connection() as connection:
            login = connection.execute(
                "SELECT login FROM lanegraph_confined_login WHERE caller_role = 'lanegraph_reader'"
            ).fetchone()[0]
    with connect(server_url, autocommit=True) as connection:
        connection.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(login)))
    prepare_database(url, embedding_dimension)
    with Database(url) as database, database.connection(["a"]) as connection:
        assert connection.execute("SELECT session_user").fetchone()[0] == login
