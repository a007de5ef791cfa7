"""How exact find's dense rankings are: of the rows nearest a question, the share its HNSW search returns.

HNSW search is approximate, and how approximate depends on the table: at `ann_search_depth` 100
the synthetic bench corpus's chunk ranking held 98.6% of the exact 40 nearest chunks at 100k chunks
and 64% at a million. A latency at one size therefore compares with another only beside the recall
it buys. For each dense probe of the floor, each question's nearest rows are ranked twice to the
probe's depth: through the index under find's settings, and exactly, with index scans off.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from psycopg import sql

from pipelines.bench.floor import DENSE_PROBES
from pipelines.config import LanegraphConfig
from pipelines.read.compiler import CompiledStatement
from pipelines.read.find import enter_find_settings
from pipelines.resources.database import Database

# Questions per size: an exact ranking of a million rows takes most of a second.
RECALL_QUESTIONS = 20


def nearest_rows(table: str, dimension: int) -> sql.Composed:
    """The `depth` rows of `table` nearest a vector, in the form an HNSW index answers, each named by
    its ctid: the embedded tables' keys differ (entity_kind's is its name, profile's its entity)."""
    return sql.SQL(
        "SELECT {table}.ctid FROM {table} ORDER BY {table}.embedding <=> CAST(%s AS vector({dimension})) LIMIT %s"
    ).format(table=sql.Identifier(table), dimension=sql.Literal(dimension))


def dense_recall(
    database: Database, config: LanegraphConfig, statement: CompiledStatement, values: Sequence[Mapping[str, object]]
) -> dict:
    """Per dense probe of `statement`, the mean share of each question's exact nearest rows (as
    many as the probe's depth) that find's HNSW search returns, over the first RECALL_QUESTIONS
    questions of `values`; with the search depth and the number of questions it was measured at."""
    values = values[:RECALL_QUESTIONS]
    recall: dict[str, float] = {}
    dimension = config.pipeline.embedding.dimension
    with database.connection() as connection:
        for name, table, depth_setting in DENSE_PROBES:
            if table not in statement.dense_tables:
                continue
            query = nearest_rows(table, dimension)
            shares = []
            for question in values:
                parameters = (question["query_vector"], question[depth_setting])
                with connection.transaction():
                    enter_find_settings(connection, config)
                    # find's generic plan takes the index at any size; a custom plan may not.
                    connection.execute("SET LOCAL enable_seqscan = off")
                    found = {row[0] for row in connection.execute(query, parameters, prepare=False)}
                with connection.transaction():
                    connection.execute("SET LOCAL enable_indexscan = off")
                    # Never prepared: a plan cached under the other arm's settings would serve this one.
                    exact = {row[0] for row in connection.execute(query, parameters, prepare=False)}
                if exact:
                    shares.append(len(found & exact) / len(exact))
            recall[name] = sum(shares) / len(shares) if shares else math.nan
    return {"ann_search_depth": config.settings.ann_search_depth, "questions": len(values), "probes": recall}
