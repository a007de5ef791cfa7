"""Bulk-load a synthetic corpus into its own schema and time the index builds.

Each corpus size gets a schema of its own (`lanegraph_bench_<chunks>`), migrated like any Lanegraph
database. Secondary indexes (and the keys in `KEYS_ADDED_AFTER_LOAD`) are dropped before the COPY and
rebuilt after it, one at a time and timed (an index built over a full table is both faster and what
a real bulk load does), then every table is vacuumed and analyzed so the planner sees the real
sizes. A marker table records the shape and the build times, so `--reuse` can skip regenerating a
large corpus.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

from pipelines.bench.synthetic import SyntheticCorpus, SyntheticQuery
from pipelines.resources.database import connect, prepare_database
from pipelines.write.documents import bm25
from pipelines.resources.rows import one_row

BENCH_DATABASE = "lanegraph_bench"
MARKER_TABLE = "lanegraph_bench_corpus"
QUERY_TABLE = "lanegraph_bench_query"
# HNSW builds fastest when the whole graph fits maintenance_work_mem; size it to the table (vector
# bytes plus neighbour lists) within a cap that leaves the machine room to breathe.
HNSW_BYTES_PER_ROW_OVERHEAD = 600
MAINTENANCE_WORK_MEM_FLOOR_MB = 256
MAINTENANCE_WORK_MEM_CAP_MB = 8192
# A B-tree build sorts; past this a sort spills in a few long runs, which costs little next to
# holding gigabytes while other work shares the machine.
SORT_MAINTENANCE_WORK_MEM_MB = 1024


@dataclass(frozen=True)
class CopyTarget:
    table: str
    columns: tuple[str, ...]
    types: tuple[str, ...]


ENTITY_KIND = CopyTarget("entity_kind", ("name", "description", "embedding"), ("text", "text", "vector"))
ENTITY = CopyTarget(
    "entity",
    ("id", "name", "kind", "normalized_name", "embedding", "created_at"),
    ("text", "text", "text", "text", "vector", "timestamptz"),
)
DOCUMENT = CopyTarget(
    "document",
    ("id", "title", "uri", "body", "content_hash", "observed_at", "created_at", "updated_at"),
    ("text", "text", "text", "text", "text", "timestamptz", "timestamptz", "timestamptz"),
)
CHUNK = CopyTarget(
    "chunk",
    ("id", "document_id", "position", "text", "token_count", "content_hash", "embedding",
     "embedding_model", "embedded_hash"),
    ("text", "text", "int4", "text", "int4", "text", "vector", "text", "text"),
)
ENTITY_MENTION = CopyTarget(
    "entity_mention",
    ("entity_id", "chunk_id", "document_id", "name", "kind", "mentions", "scopes"),
    ("text", "text", "text", "text", "text", "int4", "text[]"),
)
FACT = CopyTarget(
    "fact",
    ("id", "subject_id", "predicate", "object_id", "object_value", "statement", "embedding",
     "source_chunk_id", "document_id", "valid_from", "recorded_from", "recorded_to", "access_count"),
    ("text", "text", "text", "text", "text", "text", "vector", "text", "text", "timestamptz",
     "timestamptz", "timestamptz", "int4"),
)
COMMUNITY = CopyTarget(
    "community",
    ("id", "level", "parent_id", "label", "summary", "members", "embedding"),
    ("text", "int4", "text", "text", "text", "text[]", "vector"),
)
PROFILE = CopyTarget("profile", ("entity_id", "summary", "fact_count", "embedding"), ("text", "text", "int4", "vector"))
RAPTOR_NODE = CopyTarget(
    "raptor_node", ("id", "level", "summary", "children", "embedding"), ("text", "int4", "text", "text[]", "vector")
)
SESSION_ITEM = CopyTarget(
    "session_item",
    ("id", "text", "embedding", "created_at", "promoted_at"),
    ("text", "text", "vector", "timestamptz", "timestamptz"),
)
LOADED_TABLES = (ENTITY_KIND, ENTITY, DOCUMENT, CHUNK, ENTITY_MENTION, FACT, COMMUNITY, PROFILE, RAPTOR_NODE, SESSION_ITEM)
DERIVED_TABLES = ("bm25_posting", "bm25_chunk_length", "bm25_term", "bm25_corpus")

SECONDARY_INDEXES = """
SELECT i.relname, t.relname, pg_get_indexdef(i.oid), am.amname
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_class t ON t.oid = x.indrelid
JOIN pg_am am ON am.oid = i.relam
JOIN pg_namespace n ON n.oid = t.relnamespace
WHERE n.nspname = current_schema()
  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)
ORDER BY t.relname, i.relname
"""

# Keys whose rows arrive in random key order (a posting per term of every chunk, a mention per
# entity): kept through the load, each insert lands on a random leaf of an index far larger than
# shared_buffers, splitting pages half-empty and logging a full page image per leaf after every
# checkpoint, which made the load grow faster than the corpus. Nothing references them and the
# load never needs them (no ON CONFLICT on these tables), so they are added after it, by one
# sorted build, like the secondary indexes.
KEYS_ADDED_AFTER_LOAD = ("bm25_posting_pkey", "entity_mention_pkey")
DEFERRED_KEYS = """
SELECT c.conname, t.relname,
       format('ALTER TABLE %%I ADD CONSTRAINT %%I %%s', t.relname, c.conname, pg_get_constraintdef(c.oid)),
       'btree'
FROM pg_constraint c
JOIN pg_class t ON t.oid = c.conrelid
JOIN pg_namespace n ON n.oid = t.relnamespace
WHERE n.nspname = current_schema() AND c.conname = ANY(%s)
ORDER BY t.relname, c.conname
"""

# Degree over live facts, in both directions, as the graph asset defines it.
ENTITY_DEGREE = """
UPDATE entity SET degree = counted.degree
FROM (
    SELECT endpoint, count(*) AS degree FROM (
        SELECT subject_id AS endpoint FROM live_fact
        UNION ALL
        SELECT object_id FROM live_fact WHERE object_id IS NOT NULL
    ) AS endpoints GROUP BY endpoint
) AS counted
WHERE entity.id = counted.endpoint
"""


@dataclass(frozen=True)
class IndexBuild:
    name: str
    table: str
    method: str
    seconds: float
    rows: int


@dataclass(frozen=True)
class LoadResult:
    """What the loader did, kept in the marker table so a reused corpus reports the same."""

    shape: dict[str, int]
    load_seconds: float
    index_builds: tuple[IndexBuild, ...]
    table_rows: dict[str, int]

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> LoadResult:
        return cls(
            shape=data["shape"], load_seconds=data["load_seconds"],
            index_builds=tuple(IndexBuild(**build) for build in data["index_builds"]),
            table_rows=data["table_rows"],
        )


def bench_schema(chunks: int) -> str:
    return f"lanegraph_bench_{chunks}"


def schema_url(url: str, schema: str) -> str:
    """`url` with a search path that selects `schema` and keeps the extensions in public visible."""
    return psycopg.conninfo.make_conninfo(url, options=f"-c search_path={schema},public")


def recreate_schema(server_url: str, schema: str, embedding_dimension: int) -> str:
    """Drop and recreate `schema`, migrate it, and return a URL that selects it."""
    with connect(server_url, autocommit=True) as connection:
        connection.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
        connection.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    url = schema_url(server_url, schema)
    prepare_database(url, embedding_dimension)
    return url


def drop_schema(server_url: str, schema: str) -> None:
    with connect(server_url, autocommit=True) as connection:
        connection.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def recorded_load(url: str, shape: dict[str, int]) -> LoadResult | None:
    """The load recorded in the schema behind `url`, when it holds a corpus of exactly `shape`."""
    with connect(url, autocommit=True) as connection:
        exists = one_row(connection.execute("SELECT to_regclass(%s)", (MARKER_TABLE,)), "the load marker")[0]
        if exists is None:
            return None
        row = connection.execute(sql.SQL("SELECT load FROM {}").format(sql.Identifier(MARKER_TABLE))).fetchone()
    if row is None or row[0]["shape"] != shape:
        return None
    return LoadResult.from_json(row[0])


def _copy_rows(connection: psycopg.Connection, target: CopyTarget, rows: Iterable[tuple]) -> int:
    statement = sql.SQL("COPY {} ({}) FROM STDIN WITH (FORMAT BINARY)").format(
        sql.Identifier(target.table), sql.SQL(", ").join(map(sql.Identifier, target.columns))
    )
    written = 0
    with connection.cursor() as cursor, cursor.copy(statement) as copy:
        copy.set_types(list(target.types))
        for row in rows:
            copy.write_row(row)
            written += 1
    return written


def _maintenance_work_mem_mb(method: str, rows: int, dimension: int) -> int:
    if method != "hnsw":
        return SORT_MAINTENANCE_WORK_MEM_MB
    estimate = rows * (4 * dimension + HNSW_BYTES_PER_ROW_OVERHEAD) // (1024 * 1024)
    return int(min(MAINTENANCE_WORK_MEM_CAP_MB, max(MAINTENANCE_WORK_MEM_FLOOR_MB, estimate * 3 // 2)))


def _skip_foreign_key_checks(connection: psycopg.Connection) -> None:
    """Generated rows are consistent by construction; a superuser may skip per-row FK triggers."""
    try:
        connection.execute("SET session_replication_role = replica")
    except psycopg.errors.InsufficientPrivilege:
        connection.rollback()


def load_corpus(url: str, corpus: SyntheticCorpus, *, raptor_max_levels: int, raptor_root_count: int) -> LoadResult:
    """COPY every table of `corpus` into the (migrated, empty) schema behind `url`; build indexes."""
    started = time.perf_counter()
    counts: dict[str, int] = {target.table: 0 for target in LOADED_TABLES}
    with connect(url) as connection:
        register_vector(connection)
        _skip_foreign_key_checks(connection)
        indexes = connection.execute(SECONDARY_INDEXES).fetchall()
        for name, _, _, _ in indexes:
            connection.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(name)))
        keys = connection.execute(DEFERRED_KEYS, (list(KEYS_ADDED_AFTER_LOAD),)).fetchall()
        for name, table, _, _ in keys:
            connection.execute(
                sql.SQL("ALTER TABLE {} DROP CONSTRAINT {}").format(sql.Identifier(table), sql.Identifier(name))
            )
        counts["entity_kind"] = _copy_rows(connection, ENTITY_KIND, corpus.entity_kinds())
        counts["entity"] = _copy_rows(connection, ENTITY, corpus.entities())
        for block in corpus.content_blocks():
            counts["document"] += _copy_rows(connection, DOCUMENT, block.documents)
            counts["chunk"] += _copy_rows(connection, CHUNK, block.chunks)
            counts["entity_mention"] += _copy_rows(connection, ENTITY_MENTION, block.mentions)
            counts["fact"] += _copy_rows(connection, FACT, block.facts)
            # The bm25_index asset's own batch step (postings, lengths, frequencies, corpus size).
            bm25._index_batch(connection, block.indexed_texts)
        counts["community"] = _copy_rows(connection, COMMUNITY, corpus.communities())
        counts["profile"] = _copy_rows(connection, PROFILE, corpus.profiles())
        counts["raptor_node"] = _copy_rows(
            connection, RAPTOR_NODE, corpus.raptor_nodes(raptor_max_levels, raptor_root_count)
        )
        counts["session_item"] = _copy_rows(connection, SESSION_ITEM, corpus.session_items())
        connection.execute(ENTITY_DEGREE)
        connection.commit()
        load_seconds = time.perf_counter() - started
        for table in DERIVED_TABLES:
            counts[table] = one_row(
                connection.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))), f"the {table} count"
            )[0]
        builds = tuple(
            _build_index(connection, index, counts, corpus.shape.dimension) for index in (*keys, *indexes)
        )
    with connect(url, autocommit=True) as connection:
        for table in (*(target.table for target in LOADED_TABLES), *DERIVED_TABLES):
            connection.execute(sql.SQL("VACUUM (ANALYZE) {}").format(sql.Identifier(table)))
        result = LoadResult(corpus.shape.as_dict(), load_seconds, builds, counts)
        connection.execute(sql.SQL("CREATE TABLE IF NOT EXISTS {} (load jsonb NOT NULL)").format(sql.Identifier(MARKER_TABLE)))
        connection.execute(sql.SQL("DELETE FROM {}").format(sql.Identifier(MARKER_TABLE)))
        connection.execute(
            sql.SQL("INSERT INTO {} (load) VALUES (%s::jsonb)").format(sql.Identifier(MARKER_TABLE)),
            (json.dumps(result.to_json()),),
        )
    return result


def _build_index(connection: psycopg.Connection, index: tuple, counts: dict[str, int], dimension: int) -> IndexBuild:
    name, table, definition, method = index
    rows = counts.get(table, 0)
    with connection.transaction():
        connection.execute(
            sql.SQL("SET LOCAL maintenance_work_mem = {}").format(
                sql.Literal(f"{_maintenance_work_mem_mb(method, rows, dimension)}MB")
            )
        )
        started = time.perf_counter()
        connection.execute(definition)
        seconds = time.perf_counter() - started
    return IndexBuild(name, table, method, seconds, rows)


def store_queries(url: str, queries: list[SyntheticQuery]) -> None:
    """Keep the questions beside the corpus: a reused corpus is asked the same questions."""
    dimension = len(queries[0].vector) if queries else 1
    with connect(url, autocommit=True) as connection:
        register_vector(connection)
        connection.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(QUERY_TABLE)))
        connection.execute(
            sql.SQL(
                "CREATE TABLE {} (position integer PRIMARY KEY, text text NOT NULL, vector vector({}) NOT NULL, "
                "target_chunk_id text NOT NULL, mentions text[] NOT NULL)"
            ).format(sql.Identifier(QUERY_TABLE), sql.Literal(int(dimension)))
        )
        target = CopyTarget(
            QUERY_TABLE, ("position", "text", "vector", "target_chunk_id", "mentions"),
            ("int4", "text", "vector", "text", "text[]"),
        )
        _copy_rows(
            connection, target,
            ((i, q.text, q.vector, q.target_chunk_id, list(q.mentions)) for i, q in enumerate(queries)),
        )


def stored_queries(url: str, count: int) -> list[SyntheticQuery]:
    """The first `count` stored questions; fewer when fewer were stored."""
    with connect(url, autocommit=True) as connection:
        register_vector(connection)
        if one_row(connection.execute("SELECT to_regclass(%s)", (QUERY_TABLE,)), "the stored questions")[0] is None:
            return []
        rows = connection.execute(
            sql.SQL("SELECT text, vector, target_chunk_id, mentions FROM {} ORDER BY position LIMIT %s").format(
                sql.Identifier(QUERY_TABLE)
            ),
            (count,),
        ).fetchall()
    return [SyntheticQuery(text, vector.to_numpy(), target, tuple(mentions)) for text, vector, target, mentions in rows]
