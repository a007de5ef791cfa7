"""A graph-wide step that fails never blocks unrelated ingests.

A step's failure (here entity_profiles raising on whatever it reads, as a document's data once made it
exhaust memory) ends the ingest with one line naming the asset, its error and the Dagster run, after
the ingest's documents have landed; every later ingest lands its documents too and retries the step;
once the cause is gone, the next ingest, with nothing new, mends the graph."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import dagster as dg
import psycopg
import pytest

from pipelines.defs.write import graph_assets
from pipelines.orchestration.runner import GraphRefreshError, WriteReport, ingest
from pipelines.write.graph.refresh_state import steps_out_of_step
from tests.reliability.write_worker import definitions

GRAPH_STEPS = ["entity_graph", "title_links", "communities", "entity_profiles", "raptor_levels"]
FIRST = "# Dock scheduling\n\nMara Okafor leads the Rotterdam yard lab. The lab schedules dock slots weekly.\n"
SECOND = "# Battery recall\n\nCorvane Logistics recalled the batteries of lot 7 in March 2025.\n"


def failing_profiles(*_: object, **__: object) -> None:
    raise ValueError("cannot summarise 59,998 sentences")


def documents(url: str) -> list[tuple[str, int]]:
    """Each document with its embedded chunks: what find reads."""
    with psycopg.connect(url) as connection:
        return connection.execute(
            "SELECT d.title, count(c.embedding) FROM document d JOIN chunk c ON c.document_id = d.id "
            "GROUP BY d.title ORDER BY d.title"
        ).fetchall()


def test_a_failing_graph_step_is_named_in_one_line_and_later_ingests_land_and_mend_the_graph(
    tmp_path: Path, make_schema_url: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = make_schema_url()
    instance = dg.DagsterInstance.ephemeral()
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "dock.md").write_text(FIRST)

    def run() -> WriteReport:
        return ingest(folder, definitions=definitions(), instance=instance, database_url=url)

    monkeypatch.setattr(graph_assets, "build_profiles", failing_profiles)
    with pytest.raises(GraphRefreshError) as first:
        run()
    message = str(first.value)
    assert "\n" not in message
    assert "entity_profiles" in message and "ValueError: cannot summarise 59,998 sentences" in message
    assert first.value.run_id in message and "Error occurred while executing" not in message
    assert documents(url) == [("Dock scheduling", 1)]

    # Another file while the step still fails: its documents land, the step is tried (and named) again.
    (folder / "recall.md").write_text(SECOND)
    with pytest.raises(GraphRefreshError, match="entity_profiles.*cannot summarise") as second:
        run()
    assert second.value.run_id != first.value.run_id
    assert documents(url) == [("Battery recall", 1), ("Dock scheduling", 1)]
    with psycopg.connect(url) as connection:
        assert steps_out_of_step(connection, GRAPH_STEPS) == ["entity_profiles"]

    # The cause fixed, the next ingest (nothing new) runs the step again and the graph follows.
    monkeypatch.undo()
    report = run()
    assert report.partitions == [] and "entity_profiles" in report.assets
    assert report.checks["entity_profiles_follows_its_sources"] is True
    with psycopg.connect(url) as connection:
        assert steps_out_of_step(connection, GRAPH_STEPS) == []
