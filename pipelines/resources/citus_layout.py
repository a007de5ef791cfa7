"""The schema as Citus would shard it: declared once here, checked against the live schema by a test.

The volume tables (text, postings, mentions, facts) are distributed by document and colocated, so a
chunk, its postings, its mentions and its facts share a shard and a document's writes touch one
node. The graph's vocabulary and the corpus-wide statistics are reference tables, copied to every
node, so a shard joins them locally. docs/operations.md, "Citus, on paper", gives the reasons and
what the find statement can push down.

Citus's rules for that layout, which `layout_violations` checks:
- a distributed table carries its distribution column, NOT NULL;
- its primary key and every unique index include the distribution column;
- a foreign key between distributed tables joins distribution column to distribution column;
- a reference table references only reference tables;
- every table is placed (a new table cannot be forgotten).
`KNOWN_EXCEPTIONS` lists what today's schema breaks: fixing one, like adding a new one, fails the
test until this list (and docs/operations.md) says so.
"""

from __future__ import annotations

import psycopg

DISTRIBUTION_COLUMN = "document_id"
# table -> its distribution column (the document's own id in `document`).
DISTRIBUTED = {
    "document": "id",
    "chunk": DISTRIBUTION_COLUMN,
    "bm25_posting": DISTRIBUTION_COLUMN,
    "bm25_chunk_length": DISTRIBUTION_COLUMN,
    "entity_mention": DISTRIBUTION_COLUMN,
    "fact": DISTRIBUTION_COLUMN,
    "title_link": DISTRIBUTION_COLUMN,
}
REFERENCE = frozenset({
    "document_source", "entity_kind", "entity", "entity_alias", "profile", "community", "community_edge", "raptor_node",
    "bm25_term", "bm25_corpus", "session_item", "lanegraph_migration", "lanegraph_setting",
    "lanegraph_confined_login", "lanegraph_graph_refresh", "lanegraph_graph_write_epoch", "lanegraph_api_token", "lanegraph_api_job",
})
KNOWN_EXCEPTIONS = frozenset({
    "chunk: primary key (id) lacks document_id",
    "bm25_posting: no document_id column",
    "bm25_chunk_length: no document_id column",
    "entity_mention: primary key (entity_id, chunk_id, name, kind) lacks document_id",
    "entity_mention: foreign key (chunk_id) -> chunk (id) is not on document_id",
    "fact: document_id may be NULL",
    "fact: primary key (id) lacks document_id",
    "fact: unique index fact_believed_statement_idx lacks document_id",
    "fact: foreign key (source_chunk_id) -> chunk (id) is not on document_id",
    "session_item: reference table references distributed table document",
    "title_link: foreign key (chunk_id) -> chunk (id) is not on document_id",
    "title_link: foreign key (linked_document_id) -> document (id) is not on document_id",
})

TABLES = """
SELECT c.relname FROM pg_class c
WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
"""
COLUMNS = """
SELECT c.relname, a.attname, a.attnotnull
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
  AND a.attnum > 0 AND NOT a.attisdropped
"""
# Unique indexes, primary keys among them; an expression column shows as NULL.
UNIQUE_INDEXES = """
SELECT c.relname, index.relname, i.indisprimary,
       array(SELECT a.attname FROM unnest(i.indkey) AS key(attnum)
             LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = key.attnum)
FROM pg_index i
JOIN pg_class c ON c.oid = i.indrelid
JOIN pg_class index ON index.oid = i.indexrelid
WHERE c.relnamespace = current_schema()::regnamespace AND i.indisunique
"""
FOREIGN_KEYS = """
SELECT c.relname, target.relname,
       array(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY AS k(attnum, n)
             JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum ORDER BY k.n),
       array(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY AS k(attnum, n)
             JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.attnum ORDER BY k.n)
FROM pg_constraint con
JOIN pg_class c ON c.oid = con.conrelid
JOIN pg_class target ON target.oid = con.confrelid
WHERE c.relnamespace = current_schema()::regnamespace AND con.contype = 'f'
"""


def _listed(columns: list[str | None]) -> str:
    return ", ".join(column or "(expression)" for column in columns)


def layout_violations(connection: psycopg.Connection) -> set[str]:
    """Every way the current schema breaks the layout's rules, one line each."""
    problems: set[str] = set()
    tables = {name for (name,) in connection.execute(TABLES)}
    for table in sorted(tables - DISTRIBUTED.keys() - REFERENCE):
        problems.add(f"{table}: neither distributed nor a reference table")
    not_null = {(table, column): required for table, column, required in connection.execute(COLUMNS)}
    # A table without the column breaks every rule below; it is said once, as the missing column.
    distributed = dict(DISTRIBUTED)
    for table, column in DISTRIBUTED.items():
        if table not in tables:
            continue
        if (table, column) not in not_null:
            problems.add(f"{table}: no {column} column")
            del distributed[table]
        elif not not_null[(table, column)]:
            problems.add(f"{table}: {column} may be NULL")
    for table, index, primary, columns in connection.execute(UNIQUE_INDEXES):
        key_column = distributed.get(table)
        if key_column is not None and key_column not in columns:
            what = f"primary key ({_listed(columns)})" if primary else f"unique index {index}"
            problems.add(f"{table}: {what} lacks {key_column}")
    for table, target, columns, target_columns in connection.execute(FOREIGN_KEYS):
        if table in REFERENCE and target in DISTRIBUTED:
            problems.add(f"{table}: reference table references distributed table {target}")
        if table in distributed and target in distributed:
            pairs = set(zip(columns, target_columns, strict=True))
            if (distributed[table], distributed[target]) not in pairs:
                problems.add(
                    f"{table}: foreign key ({', '.join(columns)}) -> {target} ({', '.join(target_columns)}) "
                    f"is not on {distributed[table]}"
                )
    return problems
