"""find's default text: one line per item cut to the terminal width, and a line that quotes a fact
no longer valid is marked."""

from __future__ import annotations

from datetime import UTC, datetime

from pipelines.cli.find import NO_LONGER_VALID_MARK, render
from pipelines.read.find import Candidate, FindResult, quoting_invalid_facts
from tests.read.planting import Planter

OLD = "As of 2024-12-01, Maren Okafor leads Project Heron."
NOW = "Tomasz Wielgus leads Project Heron."


def candidate(rank: int, kind: str, line: str, fact_id: str | None = None) -> Candidate:
    return Candidate(
        rank=rank, lane=kind, kind=kind, evidence_id=f"{kind}:{rank}", line=line, scopes=(), fact_id=fact_id,
        source_chunk_id=None, source_title=None, source_uri=None, document_id=None,
        document_created_at=None, direct=False, stance=None,
    )


def test_a_summary_quoting_an_ended_fact_is_marked_and_lines_fit_the_width(make_database):
    database = make_database()
    with database.connection() as connection:
        with Planter(connection) as plant:
            plant.entity_kind("person", "A person.")
            heron = plant.entity("Project Heron", "person")
            plant.fact("f-old", heron, "led_by", OLD, object_value="Maren Okafor", valid_from=datetime(2024, 12, 1, tzinfo=UTC))
            plant.fact("f-now", heron, "led_by", NOW, object_value="Tomasz Wielgus", valid_from=datetime(2025, 4, 1, tzinfo=UTC))
        connection.execute("UPDATE fact SET valid_to = '2025-04-01' WHERE id = 'f-old'")
    evidence = (
        candidate(0, "facts", NOW + " (since 2025-04-01)", fact_id="f-now"),
        candidate(1, "overview", f"{OLD} Project Heron is active. " + "More summary text. " * 20),
        candidate(2, "sources", NOW + " The change took effect in April."),
    )
    invalid = quoting_invalid_facts(database, evidence)
    assert invalid == {"overview:1"}

    result = FindResult("Who leads Heron?", evidence, evidence, (), (), 300, 4000)
    lines = render(result, invalid=invalid, width=80).splitlines()
    assert len(lines) == 4 and all(len(line) <= 80 for line in lines[:3])
    assert lines[1].startswith("overview") and NO_LONGER_VALID_MARK in lines[1] and lines[1].endswith("…")
    assert NO_LONGER_VALID_MARK not in lines[0] + lines[2]
    assert "1 quoting a fact no longer valid" in lines[3]
    assert OLD in render(result, invalid=invalid) and "More summary text. " * 20 in render(result)
