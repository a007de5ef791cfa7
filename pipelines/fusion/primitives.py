"""Statements of the fusion primitives, compiled by the find statement's compiler.

Pure: builds statements, runs nothing. Each primitive is one template in sql_templates/primitives/,
compiled once per process by `compile_template`, which applies the find statement's rules (binds
only, schema-checked columns, typed positional binds that keep one prepared statement per shape).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from sqlglot import exp

from pipelines.shipped import SQL_TEMPLATES
from pipelines.read.compiler import CompiledStatement, compile_template
from pipelines.read.dialect import PgVector, parse_query

PRIMITIVES_DIR = SQL_TEMPLATES / "primitives"
PRIMITIVES = ("entity_state", "predicate_walk", "temporal_range", "bm25")


@dataclass(frozen=True)
class PrimitiveStatement:
    """A compiled primitive and the names of the columns its rows hold, in order."""

    statement: CompiledStatement
    columns: tuple[str, ...]

    def row(self, values: tuple) -> dict[str, object]:
        return dict(zip(self.columns, values, strict=True))


def template_path(name: str) -> Path:
    return PRIMITIVES_DIR / f"{name}.sql"


def _output_columns(statement: CompiledStatement) -> tuple[str, ...]:
    return tuple(parse_query(statement.sql).named_selects)


# A document is published once none of its chunks awaits its embedding (0091's partial index, read
# once), as the sources lane keeps it (sql_templates/lanes/sources/keep.sql): a document being
# ingested is found by no primitive until every lane finds it.
PUBLISHED_CHUNKS = (
    "NOT chunk.document_id = ANY(ARRAY("
    "SELECT unembedded.document_id FROM chunk AS unembedded WHERE unembedded.embedding IS NULL))"
)


def with_chunks(ranking: CompiledStatement) -> CompiledStatement:
    """The compiled BM25 ranking joined to its chunks, so evidence carries the text it names, and
    kept to published documents. The ranking itself is the sources lane's, which filters later.

    The join adds no bind and no literal, so the ranking's positional binds stand as compiled.
    """
    ranked = parse_query(ranking.sql).subquery("ranked")
    joined = (
        exp.select("ranked.chunk_id", "ranked.score", "chunk.text", "chunk.document_id")
        .from_(ranked)
        .join("chunk", on="chunk.id = ranked.chunk_id")
        .where(PUBLISHED_CHUNKS)
        .order_by("ranked.score DESC", "ranked.chunk_id")
    )
    return replace(ranking, sql=joined.sql(dialect=PgVector, pretty=True))


def check_primitives(directory: Path = PRIMITIVES_DIR) -> list[Path]:
    """Compile every primitive template in `directory` under the lane templates' rules, so a broken
    one is refused by `lanegraph check`, not when fusion first runs it; the first fault raises."""
    paths = sorted(directory.glob("*.sql"))
    for path in paths:
        compile_template(path)
    return paths


@cache
def primitive_statement(name: str) -> PrimitiveStatement:
    """One primitive's statement; `bm25` is the shared BM25 ranking (the sources lane's too)."""
    if name not in PRIMITIVES:
        raise ValueError(f"unknown primitive {name!r}; expected one of {', '.join(PRIMITIVES)}")
    statement = compile_template(template_path(name))
    if name == "bm25":
        statement = with_chunks(statement)
    return PrimitiveStatement(statement, _output_columns(statement))
