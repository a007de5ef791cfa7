"""The code location's executor: Dagster's multiprocess one, each step in its own process, at most
as many at once as the run's machine has CPUs (Dagster counts them when the run starts, not when
this loads); `execution: {config: {in_process: {}}}` in a run's config keeps every step in the run's
process. A deployment on several machines swaps this for the Kubernetes or Celery executor
(docs/operations.md, "Dagster past one process"). `lanegraph ingest` and `materialize` choose per run
(`pipelines/orchestration/executors.py`)."""

import dagster as dg


@dg.definitions
def executor() -> dg.Definitions:
    return dg.Definitions(executor=dg.multi_or_in_process_executor)
