"""A sensor on the inbox folder (`<data dir>/inbox`): files dropped, changed or removed there are
registered as sources, added as partitions, and processed by one `ingest_documents` run."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

import dagster as dg

from pipelines.config import data_dir
from pipelines.defs.write.jobs import ingest_documents
from pipelines.config import load_config
from pipelines.orchestration.partitions import DOCUMENT_PARTITIONS, covering_range_tags, document_partitions
from pipelines.resources.database import DatabaseResource
from pipelines.write.documents.registry import register_path, unfinished_sources

INBOX_INTERVAL_SECONDS = 30


def inbox_dir() -> Path:
    return data_dir() / "inbox"


@dg.sensor(
    job=ingest_documents,
    minimum_interval_seconds=INBOX_INTERVAL_SECONDS,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Registers new, changed and removed files of <data dir>/inbox; requests one run over them.",
)
def document_inbox(
    context: dg.SensorEvaluationContext, database: DatabaseResource
) -> dg.SensorResult | dg.SkipReason:
    inbox = inbox_dir()
    inbox.mkdir(parents=True, exist_ok=True)
    return request_pending_sources(context, database, inbox)


def request_pending_sources(
    context: dg.SensorEvaluationContext,
    database: DatabaseResource,
    folder: Path,
    run_config: Mapping[str, object] | None = None,
) -> dg.SensorResult | dg.SkipReason:
    """Register a folder's sources and request one run of the sensor's job over those with work to
    do, adding the partitions the instance does not know yet."""
    with database.connection() as connection:
        registration = register_path(connection, folder, load_config().pipeline.documents.max_bytes)
        pending = unfinished_sources(connection, registration.keys)
    for problem in registration.ignored:
        context.log.warning(f"ignored {problem}")
    if not pending:
        return dg.SkipReason(f"nothing new in {folder}")
    known = list(context.instance.get_dynamic_partitions(DOCUMENT_PARTITIONS))
    new = [key for key in registration.keys if key not in set(known)]
    # The same pending state (keys and their bytes) is requested once, however many ticks see it.
    run_key = hashlib.sha256(json.dumps(sorted(pending.items()), default=str).encode()).hexdigest()
    request = dg.RunRequest(run_key=run_key, tags=covering_range_tags([*known, *new], pending), run_config=run_config or {})
    return dg.SensorResult(
        run_requests=[request],
        dynamic_partitions_requests=[document_partitions.build_add_request(new)] if new else [],
    )
