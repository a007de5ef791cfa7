"""Working memory promoted to documents, hourly, through a run like any other document's.

The `hourly_session_promotion` sensor writes the items older than promote_after_hours as sources
(`<data dir>/session/`) and, like the inbox sensor, requests one run over the new ones; that run
carries them through the per-document assets (their run config and checks) and ends with
`session_items`, which marks the items whose documents landed as promoted.
"""

import dagster as dg

from pipelines.config import load_config
from pipelines.defs.write.graph_metadata import dagster_metadata
from pipelines.defs.write.inbox import request_pending_sources
from pipelines.defs.write.run_config import lanes_yaml_default
from pipelines.orchestration.groups import PER_DOCUMENT_GROUP, SESSION_GROUP
from pipelines.resources.database import DatabaseResource
from pipelines.write.report import StepReport
from pipelines.write.session import session_sql as q
from pipelines.write.session.session import mark_promoted, write_due_items
from pipelines.resources.rows import one_row

SESSION_INTERVAL_SECONDS = 3600


class PromotionConfig(dg.Config):
    promote_after_hours: float = lanes_yaml_default(lambda pipeline: pipeline.session.promote_after_hours)


@dg.asset(
    group_name=SESSION_GROUP,
    deps=["entities_and_facts"],
    kinds={"postgres"},
    description=(
        "Marks the session items older than promote_after_hours whose documents (`session:<item id>`) "
        "have landed as promoted, so the working_memory lane stops returning them."
    ),
)
def session_items(config: PromotionConfig, database: DatabaseResource) -> dg.MaterializeResult:
    step = StepReport(unit="items", preview_columns=("promoted item",))
    promotion = mark_promoted(database.get_database(), older_than_hours=config.promote_after_hours)
    with database.connection() as connection:
        unpromoted, promoted = one_row(connection.execute(q.SESSION_ITEM_COUNTS), "the session item counts")
    step.inserted = step.processed = len(promotion.promoted)
    step.unchanged = promotion.young
    step.rows = unpromoted
    step.preview_rows = [(item,) for item in promotion.promoted[:5]]
    values = step.finish().metadata()
    values.update({"promoted_total": promoted, "promote_after_hours": config.promote_after_hours})
    return dg.MaterializeResult(metadata=dagster_metadata(values))


promote_session = dg.define_asset_job(
    "promote_session_items",
    selection=dg.AssetSelection.groups(PER_DOCUMENT_GROUP) | dg.AssetSelection.assets(session_items),
    description="The promoted items' sources through the per-document assets, then the items marked promoted.",
)


@dg.sensor(
    job=promote_session,
    minimum_interval_seconds=SESSION_INTERVAL_SECONDS,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Every hour: session items past promote_after_hours written as sources, one run requested over them.",
)
def hourly_session_promotion(
    context: dg.SensorEvaluationContext, database: DatabaseResource
) -> dg.SensorResult | dg.SkipReason:
    hours = load_config().pipeline.session.promote_after_hours
    folder = write_due_items(database.get_database(), older_than_hours=hours)
    # The run marks items by the same age the sources were written by.
    run_config = {"ops": {"session_items": {"config": {"promote_after_hours": hours}}}}
    return request_pending_sources(context, database, folder, run_config)
