"""The physical floor of one find: every index the statement must touch, probed alone.

A probe is the bare index access a lane starts from, with the lane's own depth: the HNSW window
over each embedded table, the BM25 ranking (the same primitive the sources lane embeds), the
B-tree lookups of named titles and named entities. Only the probes of what the statement reads
count: a lane, or a part of one, that lanes.yaml leaves out costs find nothing, so its index is no
part of the floor.
Nothing a probe does can be avoided by any retrieval that answers from these tables, so the sum of
their server-side work is a lower bound for the single statement; what find spends above it is
joins, graph walking, fusion and rendering.

Probes are `CompiledStatement`s with typed positional binds, so they run through the same
`run_statement` (server-side prepared) as the find statement itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from psycopg import sql

from pipelines.read.compiler import CompiledStatement, compile_template
from pipelines.read.lane_parts import PRIMITIVES
from pipelines.lanes_config import LANE_TEMPLATES
from pipelines.read.parameters import Bind

# (probe name, table, the setting that is the lane's depth over that table); a statement needs the
# probe when it ranks that table by vector distance.
DENSE_PROBES: tuple[tuple[str, str, str], ...] = (
    ("dense_chunk", "chunk", "fusion_depth"),
    ("dense_fact", "fact", "fusion_depth"),
    ("dense_entity", "entity", "graph_ppr_frontier"),
    ("entity_kind", "entity_kind", "k"),
    ("working_memory", "session_item", "fusion_depth"),
    ("profile", "profile", "profile_find_k"),
    ("communities", "community", "community_find_k"),
)
# (probe name, table, stored lower-case column, the lane template that looks names up there); a
# statement needs the probe when one of its lanes is built from that template.
NAMED_PROBES: tuple[tuple[str, str, str, Path], ...] = (
    ("title", "document", "title_lower", LANE_TEMPLATES / "sources" / "title.sql"),
    ("mentions", "entity", "name_lower", LANE_TEMPLATES / "facts" / "mentions.sql"),
)
BM25_PRIMITIVE = PRIMITIVES / "bm25.sql"
# The sources lane binds the BM25 primitive to its own depth and the question (lane_parts._sources).
BM25_BINDS = {"bm25_limit": "fusion_depth", "query_text": "question"}
EMPTY_ROUND_TRIP = CompiledStatement(sql="SELECT 1", binds=())


@dataclass(frozen=True)
class FloorProbe:
    name: str
    statement: CompiledStatement
    # Value names the probe reads under another name (bind name -> name in the find values).
    renamed: tuple[tuple[str, str], ...] = ()

    def values(self, find_values: Mapping[str, object]) -> dict[str, object]:
        values = dict(find_values)
        values.update({bind: find_values[source] for bind, source in self.renamed})
        return values


def _quoted(identifier: str) -> str:
    return sql.Identifier(identifier).as_string(None)


def dense_probe(name: str, table: str, depth_setting: str, dimension: int) -> FloorProbe:
    """`ORDER BY embedding <=> query LIMIT depth` over `table` alone: one HNSW index scan."""
    quoted = _quoted(table)
    text = (
        f"SELECT {quoted}.embedding <=> CAST($1 AS vector({int(dimension)})) AS distance\n"
        f"FROM {quoted}\n"
        f"ORDER BY {quoted}.embedding <=> CAST($1 AS vector({int(dimension)}))\n"
        "LIMIT CAST($2 AS bigint)"
    )
    binds = (Bind("query_vector", 1, f"vector({int(dimension)})"), Bind(depth_setting, 2, "bigint"))
    return FloorProbe(name, CompiledStatement(sql=text, binds=binds, dense_tables=(table,)))


def named_probe(name: str, table: str, column: str) -> FloorProbe:
    """`column = ANY(question terms)` on a stored lower-case column: the B-tree lookup of what the
    question names."""
    quoted = _quoted(table)
    text = f"SELECT {quoted}.id FROM {quoted} WHERE {quoted}.{_quoted(column)} = ANY(CAST($1 AS text[]))"
    return FloorProbe(name, CompiledStatement(sql=text, binds=(Bind("question_terms", 1, "text[]"),)))


def bm25_probe(dimension: int) -> FloorProbe:
    statement = compile_template(BM25_PRIMITIVE, dimension=dimension, bind_types={"bm25_limit": "bigint", "query_text": "text"})
    return FloorProbe("bm25", statement, tuple(BM25_BINDS.items()))


def floor_probes(statement: CompiledStatement, dimension: int) -> tuple[FloorProbe, ...]:
    """The probes of the floor under `statement` (the indexes it reads), in report order."""
    templates = {template for lane in statement.lanes for template in lane.templates}
    return (
        *(dense_probe(name, table, depth, dimension) for name, table, depth in DENSE_PROBES if table in statement.dense_tables),
        *((bm25_probe(dimension),) if statement.lexical_tables else ()),
        *(named_probe(name, table, column) for name, table, column, template in NAMED_PROBES if template in templates),
    )
