"""The write side under Dagster's multiprocess executor writes what the in-process path writes.

Both ingests run for real against their own schema, through the per-document assets of
`tests/write/light_location.py`, which each step process imports again by its location.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest

from pipelines.errors import InputError
from pipelines.orchestration.executors import Executor, usable_cpus
from pipelines.orchestration.runner import WriteReport, ingest
from tests.reliability.writes import Target, differing_tables, make_corpus
from tests.write.light_location import definitions

LOCATION = "tests.write.light_location:definitions"


def step_pids(instance: dg.DagsterInstance, report: WriteReport) -> set[int]:
    """The processes the report's runs executed their steps in."""
    return {
        record.dagster_event.pid
        for run_id in report.run_ids
        for record in instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_START)
        if record.dagster_event is not None and record.dagster_event.pid is not None
    }


@pytest.fixture()
def run_ingest(tmp_path: Path, make_schema_url: Callable[[], str]) -> Callable[[Executor], tuple[Target, set[int]]]:
    """`run_ingest(executor)`: the corpus ingested into a fresh schema with a fresh persistent
    instance; returns where it wrote and the processes its steps ran in."""
    corpus = make_corpus(tmp_path / "corpus")

    def run(executor: Executor) -> tuple[Target, set[int]]:
        target = Target(make_schema_url(), tmp_path / f"dagster-{executor}")
        target.home.mkdir()
        with dg.DagsterInstance.local_temp(str(target.home)) as instance:
            report = ingest(
                corpus, definitions=definitions(), instance=instance, database_url=target.url,
                location=LOCATION, executor=executor, refresh_graph=False,
            )
            assert all(report.checks.values()), report.checks
            return target, step_pids(instance, report)

    return run


@pytest.mark.skipif(usable_cpus() < 2, reason="the multiprocess executor runs steps side by side on several CPUs")
def test_a_multiprocess_ingest_leaves_the_tables_an_in_process_one_does(run_ingest) -> None:
    in_process, in_process_pids = run_ingest("in_process")
    multiprocess, multiprocess_pids = run_ingest("multiprocess")

    assert in_process_pids == {os.getpid()}
    # One process per step: documents, chunks, embeddings, BM25, extraction and the three checks.
    assert os.getpid() not in multiprocess_pids and len(multiprocess_pids) == 8
    assert differing_tables(in_process.fingerprints(), multiprocess.fingerprints()) == {}


def test_auto_keeps_a_small_corpus_in_this_process(run_ingest) -> None:
    _, pids = run_ingest("auto")
    assert pids == {os.getpid()}


def test_the_multiprocess_executor_refuses_an_instance_its_steps_cannot_share(
    tmp_path: Path, make_schema_url: Callable[[], str]
) -> None:
    with pytest.raises(InputError, match="persistent Dagster instance"):
        ingest(
            make_corpus(tmp_path / "corpus"), definitions=definitions(), instance=dg.DagsterInstance.ephemeral(),
            database_url=make_schema_url(), location=LOCATION, executor="multiprocess",
        )
