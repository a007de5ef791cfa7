"""Run the write side in this process against the Dagster instance, so runs show in the UI.

`ingest(path)` registers the source files of a folder or JSONL file as partitions and runs the
`ingest_documents` job once over every partition with work to do (new, changed or removed files, and
any whose last run did not finish), then the `refresh_graph` job when a document changed or a graph
step's last completed refresh consumed other documents than there are now (a refresh cut short). `materialize(names)` runs assets
by name (by default every asset but the read side's): per-document assets over all their
partitions, the others once. Both return what each asset reported (inserted, updated, deleted,
unchanged, skipped, rows, ...) and every asset check's outcome.

`executor` (`orchestration/executors.py`) says where the steps run: `in_process` through
`execute_in_process`, `multiprocess` through `execute_job`, which needs the definitions importable
again in each step process (`location`, `module:attribute`) and a persistent instance.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg
import psycopg

from pipelines.config import load_config
from pipelines.orchestration.dagster_home import ensure_dagster_home
from pipelines.orchestration.executors import (
    MULTIPROCESS_MIN_CPUS,
    MULTIPROCESS_MIN_SOURCE_BYTES,
    Executor,
    usable_cpus,
)
from pipelines.orchestration.groups import GRAPH_GROUP, READ_GROUP
from pipelines.orchestration.partitions import DOCUMENT_PARTITIONS, covering_range_tags, document_partitions
from pipelines.resources.database import DatabaseResource, connect, open_database, resolve_database_url
from pipelines.errors import DatabaseError, InputError, LanegraphError, first_line, first_line_of
from pipelines.write.graph.refresh_state import steps_out_of_step
from pipelines.write.documents.registry import Registration, register_path, source_bytes, unfinished_sources
from pipelines.write.report import run_values

INGEST_JOB = "ingest_documents"
GRAPH_JOB = "refresh_graph"
PLAIN_COUNTS = ("inserted", "updated", "deleted", "unchanged", "skipped", "rows")
RERUN_ADVICE = (
    "once PostgreSQL is back (`lanegraph db start` for the embedded server), run the same command again: "
    "it picks up every source whose run did not finish"
)


class WriteRunError(LanegraphError):
    """A run of the write side failed; the message names the step and its error."""

    def __init__(self, message: str, run_id: str = "") -> None:
        super().__init__(message)
        self.run_id = run_id


class GraphRefreshError(WriteRunError):
    """A graph-wide step failed after the ingest's documents had landed: they are findable, and the
    step is tried again by the next ingest or materialization."""


@dataclass
class WriteReport:
    """What a write-side command did: the sources it registered, the partitions it ran, and each
    asset's and check's outcome as plain values."""

    registration: Registration | None = None
    partitions: list[str] = field(default_factory=list)
    assets: dict[str, dict[str, object]] = field(default_factory=dict)
    checks: dict[str, bool] = field(default_factory=dict)
    run_ids: list[str] = field(default_factory=list)

    def counts(self, asset: str) -> dict[str, int]:
        values = self.assets.get(asset, {})
        return {name: int(values[name]) for name in PLAIN_COUNTS if isinstance(values.get(name), (int, float))}

    def summary(self) -> dict[str, object]:
        """The report as plain values (`lanegraph ingest --json`, an API ingest job's report)."""
        return {
            "partitions": self.partitions,
            "assets": {name: self.counts(name) for name in self.assets},
            "checks": self.checks,
            "skipped": self.skipped,
            "run_ids": self.run_ids,
        }

    @property
    def skipped(self) -> list[str]:
        """Every input a step skipped, as `location: reason` lines."""
        lines = [str(problem) for problem in self.registration.ignored] if self.registration else []
        for values in self.assets.values():
            lines += list(values.get("skipped_inputs") or [])
        return lines


def ingest(
    path: Path,
    *,
    definitions: dg.Definitions,
    instance: dg.DagsterInstance | None = None,
    database_url: str | None = None,
    run_config: Mapping[str, object] | None = None,
    refresh_graph: bool = True,
    location: str | None = None,
    executor: Executor = "auto",
) -> WriteReport:
    """Register PATH's sources and materialize everything they affect; see the module docstring."""
    report = WriteReport()
    with _lost_database_in_one_line(), open_database(url=database_url) as database:
        resolved_url = database.url
        with database.connection() as connection:
            report.registration = register_path(connection, Path(path), load_config().pipeline.documents.max_bytes)
            keys = report.registration.keys
            pending = set(unfinished_sources(connection, keys))
            pending_bytes = source_bytes(connection, sorted(pending))
            graph_keys = _graph_keys(definitions)
            # A graph refresh cut short (killed, failed) left a step behind its sources.
            graph_behind = steps_out_of_step(connection, [key.path[-1] for key in graph_keys])
    if not keys:
        refused = "; ".join(str(problem) for problem in report.registration.ignored)
        raise InputError(f"{path}: nothing to ingest" + (f" (refused: {refused})" if refused else "; no markdown, text or JSONL files"))
    with _instance(instance) as dagster:
        known = list(dagster.get_dynamic_partitions(DOCUMENT_PARTITIONS))
        new = [key for key in keys if key not in set(known)]
        dagster.add_dynamic_partitions(DOCUMENT_PARTITIONS, new)
        ordered = [*known, *new]
        pending |= _unmaterialized(dagster, definitions, keys)
        runner = _Runner(
            definitions, dagster, database_url, run_config, probe_url=resolved_url,
            location=location, executor=_choose(executor, location, dagster, pending_bytes),
        )
        if pending:
            report.partitions = [key for key in ordered if key in pending]
            runner.run(INGEST_JOB, report, tags=covering_range_tags(ordered, pending))
        if refresh_graph and graph_keys and (pending or graph_behind or not _all_materialized(dagster, graph_keys)):
            try:
                runner.run_graph(graph_keys, report)
            except WriteRunError as failed:
                # The per-document run committed before the graph run started: say so, so a user (or a
                # script reading the exit status) does not take the failure for a lost ingest.
                landed = (
                    f"{len(report.partitions)} new or changed source file(s) ingested, their documents findable, but "
                    if report.partitions else ""
                )
                raise GraphRefreshError(
                    f"{path}: {landed}the graph refresh failed: {failed}; once its cause is fixed, the next "
                    "`lanegraph ingest` or `lanegraph materialize` runs the step again",
                    failed.run_id,
                ) from None
    return report


def materialize(
    asset_names: Sequence[str] = (),
    *,
    definitions: dg.Definitions,
    instance: dg.DagsterInstance | None = None,
    database_url: str | None = None,
    run_config: Mapping[str, object] | None = None,
    location: str | None = None,
    executor: Executor = "auto",
) -> WriteReport:
    """Materialize the named assets (every write-side asset when none are named): per-document ones
    over every partition in one run, the others in a second run."""
    graph = definitions.resolve_asset_graph()
    available = {key.to_user_string(): key for key in graph.get_all_asset_keys()}
    unknown = [name for name in asset_names if name not in available]
    if unknown:
        raise InputError(f"unknown asset {unknown[0]!r}; assets are {', '.join(sorted(available))}")
    selected = [available[name] for name in asset_names] or [
        key for key in available.values() if graph.get(key).group_name != READ_GROUP
    ]
    partitioned = [key for key in selected if graph.get(key).partitions_def == document_partitions]
    unpartitioned = [key for key in selected if key not in partitioned]
    report = WriteReport()
    with _instance(instance) as dagster:
        keys = list(dagster.get_dynamic_partitions(DOCUMENT_PARTITIONS))
        # Sizing the work costs a connection; only worth it when the multiprocess executor is possible.
        work = _registered_bytes(database_url, keys) if executor == "auto" and location and keys else 0
        runner = _Runner(
            definitions, dagster, database_url, run_config,
            location=location, executor=_choose(executor, location, dagster, work),
        )
        if partitioned and keys:
            report.partitions = keys
            tags = covering_range_tags(keys, keys)
            runner.run(INGEST_JOB, report, tags=tags, asset_selection=partitioned)
        if unpartitioned:
            runner.run_assets(unpartitioned, report)
    return report


def location_job(location: str, job_name: str, database_url: str = "") -> dg.JobDefinition:
    """The job as a step process rebuilds it: the definitions at `location` (`module:attribute`,
    the attribute a Definitions or a function returning one), bound to `database_url` if given."""
    module, _, attribute = location.partition(":")
    found = getattr(importlib.import_module(module), attribute)
    definitions = found() if callable(found) else found
    if database_url:
        definitions = _with_database(definitions, database_url)
    return definitions.resolve_job_def(job_name)


def _choose(executor: Executor, location: str | None, instance: dg.DagsterInstance, work_bytes: int) -> Executor:
    if executor == "multiprocess" and (location is None or not instance.is_persistent):
        raise InputError(
            "the multiprocess executor needs the definitions' import location and a persistent Dagster "
            "instance (DAGSTER_HOME), so that each step process can load them again"
        )
    if executor != "auto":
        return executor
    can = location is not None and instance.is_persistent and usable_cpus() >= MULTIPROCESS_MIN_CPUS
    return "multiprocess" if can and work_bytes >= MULTIPROCESS_MIN_SOURCE_BYTES else "in_process"


def _registered_bytes(database_url: str | None, keys: Sequence[str]) -> int:
    with open_database(url=database_url) as database, database.connection() as connection:
        return source_bytes(connection, keys)


@contextmanager
def _lost_database_in_one_line() -> Iterator[None]:
    """A database that dies mid-run ends the command with one line: the connection pools' log of
    every failed reconnect is silenced, and a connection lost outside a Dagster step (registering
    sources) is reported like one lost inside (`_Runner._raise_if_database_gone`)."""
    logger = logging.getLogger("psycopg.pool")
    previous = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    except psycopg.OperationalError as error:
        raise DatabaseError(f"lost the connection to PostgreSQL ({first_line_of(error)}); {RERUN_ADVICE}") from None
    finally:
        logger.setLevel(previous)


def _deepest_cause(error: object) -> object:
    while getattr(error, "cause", None) is not None:
        error = error.cause  # type: ignore[attr-defined]
    return error


def _step_error(error: object) -> str:
    """The error a step's own code raised, on one line: Dagster wraps it in errors of its own
    ("Error occurred while executing op ...") that name nothing the user can act on."""
    while str(getattr(error, "cls_name", "")).startswith("Dagster") and getattr(error, "cause", None) is not None:
        error = error.cause  # type: ignore[attr-defined]
    return first_line(str(getattr(error, "message", ""))) or str(getattr(error, "cls_name", "no error recorded"))


@contextmanager
def _instance(instance: dg.DagsterInstance | None) -> Iterator[dg.DagsterInstance]:
    if instance is not None:
        yield instance
        return
    ensure_dagster_home()
    with dg.DagsterInstance.get() as owned:
        yield owned


def _with_database(definitions: dg.Definitions, database_url: str) -> dg.Definitions:
    """The same definitions bound to another database (a test schema, an explicit URL)."""
    return dg.Definitions(
        assets=definitions.assets,
        asset_checks=definitions.asset_checks,
        jobs=definitions.jobs,
        schedules=definitions.schedules,
        sensors=definitions.sensors,
        executor=definitions.executor,
        loggers=definitions.loggers,
        resources={**(definitions.resources or {}), "database": DatabaseResource(database_url=database_url)},
    )


def _partitioned_keys(definitions: dg.Definitions) -> list[dg.AssetKey]:
    graph = definitions.resolve_asset_graph()
    return [key for key in graph.get_all_asset_keys() if graph.get(key).partitions_def == document_partitions]


def _graph_keys(definitions: dg.Definitions) -> list[dg.AssetKey]:
    graph = definitions.resolve_asset_graph()
    return [key for key in graph.get_all_asset_keys() if graph.get(key).group_name == GRAPH_GROUP]


def _unmaterialized(dagster: dg.DagsterInstance, definitions: dg.Definitions, keys: Sequence[str]) -> set[str]:
    """Partitions some per-document asset has never materialized, or whose last attempt failed."""
    missing: set[str] = set()
    for asset_key in _partitioned_keys(definitions):
        status = dagster.get_status_by_partition(asset_key, list(keys), document_partitions) or {}
        missing |= {key for key in keys if status.get(key) != dg.AssetPartitionStatus.MATERIALIZED}
    return missing


def _all_materialized(dagster: dg.DagsterInstance, asset_keys: Sequence[dg.AssetKey]) -> bool:
    return all(dagster.get_latest_materialization_event(key) is not None for key in asset_keys)


class _Runner:
    """Executes jobs of the code location, in this process or one process per step (see the module
    docstring), with the database (and settings) overridden."""

    def __init__(
        self,
        definitions: dg.Definitions,
        instance: dg.DagsterInstance,
        database_url: str | None,
        run_config: Mapping[str, object] | None,
        *,
        probe_url: str | None = None,
        location: str | None = None,
        executor: Executor = "in_process",
    ) -> None:
        self.database_url = database_url or ""
        if database_url:
            definitions = _with_database(definitions, database_url)
        self.definitions = definitions
        self.instance = instance
        self.location = location
        self.executor = executor
        # Where to look when a run fails; resolving it anew could start an embedded server again.
        self.probe_url = probe_url or database_url
        # Progress reaches the command line through pipelines.write.progress and a failure through
        # the one-line WriteRunError; the console logger would print every event and stack trace.
        self.run_config = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}, **(run_config or {})}

    def run(
        self,
        job_name: str,
        report: WriteReport,
        *,
        tags: Mapping[str, str] | None = None,
        asset_selection: Sequence[dg.AssetKey] | None = None,
    ) -> None:
        job = self.definitions.resolve_job_def(job_name)
        with _lost_database_in_one_line():
            result = self._execute(job, self._config_for(job, asset_selection), tags, asset_selection)
        self._collect(result, report)

    def _execute(
        self,
        job: dg.JobDefinition,
        run_config: Mapping[str, object],
        tags: Mapping[str, str] | None,
        asset_selection: Sequence[dg.AssetKey] | None,
    ) -> dg.ExecuteInProcessResult | dg.JobExecutionResult:
        if self.executor == "in_process" or self.location is None:
            return job.execute_in_process(
                run_config=run_config, instance=self.instance, tags=tags,
                asset_selection=asset_selection, raise_on_error=False,
            )
        module = self.location.partition(":")[0]
        reconstructable = dg.build_reconstructable_job(
            __name__, location_job.__name__,
            reconstructable_kwargs={"location": self.location, "job_name": job.name, "database_url": self.database_url},
        )
        # The fork server imports the code location once; each step process forks from it warm
        # instead of importing Dagster, torch and the assets again.
        multiprocess = {
            "max_concurrent": usable_cpus(),
            "start_method": {"forkserver": {"preload_modules": [module]}},
        }
        return dg.execute_job(
            reconstructable,
            instance=self.instance,
            run_config={"execution": {"config": {"multiprocess": multiprocess}}, **run_config},
            tags=tags,
            asset_selection=list(asset_selection) if asset_selection is not None else None,
            raise_on_error=False,
        )

    def run_graph(self, asset_keys: Sequence[dg.AssetKey], report: WriteReport) -> None:
        """The graph-wide assets, through their named job when the code location has it."""
        if GRAPH_JOB in {job.name for job in self.definitions.resolve_all_job_defs()}:
            self.run(GRAPH_JOB, report)
        else:
            self.run_assets(asset_keys, report)

    def run_assets(self, asset_keys: Sequence[dg.AssetKey], report: WriteReport) -> None:
        job = self.definitions.resolve_implicit_global_asset_job_def()
        with _lost_database_in_one_line():
            result = self._execute(job, self._config_for(job, asset_keys), None, list(asset_keys))
        self._collect(result, report)

    def _config_for(self, job: dg.JobDefinition, asset_keys: Sequence[dg.AssetKey] | None = None) -> dict:
        """The run config with only the ops this run executes (Dagster rejects config for others)."""
        config = dict(self.run_config)
        ops = config.get("ops")
        if isinstance(ops, Mapping):
            names = {node.name for node in job.graph.node_dict.values()}
            if asset_keys is not None:
                names &= {key.path[-1] for key in asset_keys}
            config["ops"] = {name: value for name, value in ops.items() if name in names}
        return config

    def _collect(self, result: dg.ExecuteInProcessResult | dg.JobExecutionResult, report: WriteReport) -> None:
        report.run_ids.append(result.run_id)
        for event in result.get_asset_materialization_events():
            name = event.asset_key.to_user_string()
            if name not in report.assets:
                values = {key: getattr(value, "value", value) for key, value in event.materialization.metadata.items()}
                # A range run's partitions each carry the run's figures beside their own.
                report.assets[name] = run_values(values) if event.materialization.partition else values
        for evaluation in result.get_asset_check_evaluations():
            report.checks[evaluation.check_name] = evaluation.passed
        if not result.success:
            failures = result.get_step_failure_events()
            self._raise_if_database_gone(failures[0].step_key if failures else None, failures)
            reason = "; ".join(
                f"step {failure.step_key} failed ({_step_error(failure.step_failure_data.error)})" for failure in failures
            ) or "the run failed"
            raise WriteRunError(f"{reason} (Dagster run {result.run_id} of {result.job_def.name})", result.run_id)

    def _raise_if_database_gone(self, step: str | None, failures: Sequence[dg.DagsterEvent]) -> None:
        """A failed run whose database no longer answers failed because of it: say so in one line."""
        try:
            connect(self.probe_url or resolve_database_url(), autocommit=True).close()
        except DatabaseError as unreachable:
            cause = _deepest_cause(failures[0].step_failure_data.error) if failures else None
            during = f" during step {step}" if step else ""
            seen = f" ({first_line_of(Exception(cause.message))})" if cause is not None else ""
            raise DatabaseError(f"lost the database{during}{seen}; {unreachable}; {RERUN_ADVICE}") from None
