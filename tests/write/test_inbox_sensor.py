"""The inbox sensor: new, changed and removed files become partitions and one run request each time
something changed, and the same pending state is requested only once."""

from __future__ import annotations

import shutil
from collections.abc import Callable

import dagster as dg

from pipelines.defs.write import document_assets, jobs
from pipelines.defs.write.inbox import document_inbox, inbox_dir
from pipelines.orchestration.partitions import DOCUMENT_PARTITIONS, RANGE_END_TAG, RANGE_START_TAG
from pipelines.resources.database import DatabaseResource, connect

LEXICAL = dg.Definitions(
    assets=[document_assets.documents, document_assets.chunks, document_assets.bm25_index],
    jobs=[jobs.ingest_documents],
    resources={"database": DatabaseResource()},
)


def evaluate(instance: dg.DagsterInstance, url: str) -> dg.SensorResult | dg.SkipReason:
    resources = {"database": DatabaseResource(database_url=url)}
    with dg.build_sensor_context(instance=instance, resources=resources) as context:
        return document_inbox(context)


def launch(result: dg.SensorResult, instance: dg.DagsterInstance, url: str) -> None:
    """What the daemon does with a sensor result: add the partitions, then run the request."""
    for request in result.dynamic_partitions_requests:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    (run,) = result.run_requests
    outcome = LEXICAL.resolve_job_def("ingest_documents").execute_in_process(
        instance=instance, tags=run.tags, resources={"database": DatabaseResource(database_url=url)}
    )
    assert outcome.success


def test_inbox_files_become_partitions_and_one_run_per_change(make_schema_url: Callable[[], str]) -> None:
    url = make_schema_url()
    instance = dg.DagsterInstance.ephemeral()
    inbox = inbox_dir()
    shutil.rmtree(inbox, ignore_errors=True)
    inbox.mkdir(parents=True)
    (inbox / "a.md").write_text("# A\n\nAlpha arrives first.\n")
    (inbox / "b.txt").write_text("Beta arrives second.\n")

    first = evaluate(instance, url)
    (added,) = first.dynamic_partitions_requests
    assert added.partitions_def_name == DOCUMENT_PARTITIONS
    assert list(added.partition_keys) == ["inbox/a.md", "inbox/b.txt"]
    (request,) = first.run_requests
    assert (request.tags[RANGE_START_TAG], request.tags[RANGE_END_TAG]) == ("inbox/a.md", "inbox/b.txt")
    # Until the run has processed them, every tick sees the same work under the same run key.
    assert evaluate(instance, url).run_requests[0].run_key == request.run_key

    launch(first, instance, url)
    assert isinstance(evaluate(instance, url), dg.SkipReason)
    with connect(url) as connection:
        assert connection.execute("SELECT id FROM document ORDER BY id").fetchall() == [("inbox/a.md",), ("inbox/b.txt",)]

    (inbox / "a.md").unlink()
    removal = evaluate(instance, url)
    assert removal.dynamic_partitions_requests == []
    assert (removal.run_requests[0].tags[RANGE_START_TAG], removal.run_requests[0].tags[RANGE_END_TAG]) == (
        "inbox/a.md", "inbox/a.md"
    )
    launch(removal, instance, url)
    with connect(url) as connection:
        assert connection.execute("SELECT id FROM document WHERE retracted_at IS NOT NULL").fetchall() == [("inbox/a.md",)]
