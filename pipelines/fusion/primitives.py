"""SQL of the fusion primitives: sql_templates/primitives/*.sql, compiled once per process.

Pure: builds statement text, runs nothing. Templates use named `:binds`; the compiled text uses
psycopg's `%(name)s`.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import sqlglot
from sqlglot import exp

from pipelines.config import SQL_TEMPLATES
from pipelines.read.dialect import PgVector, to_psycopg

PRIMITIVES_DIR = SQL_TEMPLATES / "primitives"
GRAPH_PRIMITIVES = ("entity_state", "predicate_walk", "temporal_range")


def template_path(name: str) -> Path:
    return PRIMITIVES_DIR / f"{name}.sql"


def _parse(name: str) -> exp.Query:
    return sqlglot.parse_one(template_path(name).read_text(), dialect=PgVector)


def bm25_with_chunks(ranking: exp.Query) -> exp.Query:
    """The BM25 ranking joined to its chunks, so evidence carries the text and document it names."""
    return (
        exp.select("ranked.chunk_id", "ranked.score", "chunk.text", "chunk.document_id")
        .from_(ranking.subquery("ranked"))
        .join("chunk", on="chunk.id = ranked.chunk_id")
        .order_by("ranked.score DESC", "ranked.chunk_id")
    )


@cache
def primitive_statement(name: str) -> str:
    """psycopg text of one primitive: a graph primitive's template, or the shared BM25 ranking."""
    if name == "bm25":
        return to_psycopg(bm25_with_chunks(_parse("bm25")))
    if name not in GRAPH_PRIMITIVES:
        raise ValueError(f"unknown primitive {name!r}; expected bm25 or one of {', '.join(GRAPH_PRIMITIVES)}")
    return to_psycopg(_parse(name))
