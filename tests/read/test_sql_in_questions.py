"""A question that looks like SQL is text: it is bound, never spliced, and finds like any other."""

from __future__ import annotations

import pytest

from pipelines.read.find import find
from tests.read.planting import EMBEDDER, Planter

QUESTIONS = [
    "Robert'); DROP TABLE fact; --",
    "what about 100% of %s and %(k)s?",
    "$1 $2 :question ::text :k",
    'a "quoted" \\ backslash; SELECT pg_sleep(10);',
]


def table_counts(database) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with database.connection() as connection:
        return {
            table: connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # noqa: S608 (fixed names)
            for table in ("document", "chunk", "entity", "fact", "session_item")
        }


@pytest.mark.parametrize("question", QUESTIONS)
def test_a_question_containing_sql_is_just_text(database, config, question):
    with database.connection() as connection:
        with Planter(connection) as plant:
            plant.session_item("wm-sql", question)
            plant.session_item("wm-other", "The quarterly budget review moved to Thursday.")
    before = table_counts(database)
    result = find(database, question, config=config, embedder=EMBEDDER)
    # The item whose text is the question itself is the nearest working-memory item: the question
    # reached the database as a value.
    memory = [c for c in result.candidates if c.lane == "working_memory"]
    assert memory and memory[0].evidence_id == "session:wm-sql" and memory[0].line.endswith(question)
    assert table_counts(database) == before
