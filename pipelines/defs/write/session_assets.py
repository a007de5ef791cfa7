"""session_items: working-memory items old enough become documents; checked hourly by a schedule."""

import dagster as dg

from pipelines.config import load_config
from pipelines.defs.write.graph_metadata import dagster_metadata
from pipelines.orchestration.groups import SESSION_GROUP
from pipelines.orchestration.partitions import DOCUMENT_PARTITIONS
from pipelines.resources.database import DatabaseResource
from pipelines.resources.embedder import EmbedderResource
from pipelines.write.extraction.extractor import ExtractorResource
from pipelines.write.session import session_sql as q
from pipelines.write.report import StepReport
from pipelines.write.session.session import promote_session_items

SETTINGS = load_config().pipeline


class PromotionConfig(dg.Config):
    promote_after_hours: float = SETTINGS.session.promote_after_hours


@dg.asset(
    group_name=SESSION_GROUP,
    kinds={"postgres"},
    description=(
        "Promotes unpromoted session items older than promote_after_hours to documents "
        "(`session:<item id>`), carried through chunks, embeddings, BM25 and extraction, then marks "
        "them promoted so the working_memory lane stops returning them."
    ),
)
def session_items(
    context: dg.AssetExecutionContext,
    config: PromotionConfig,
    database: DatabaseResource,
    embedder: EmbedderResource,
    extractor: ExtractorResource,
) -> dg.MaterializeResult:
    step = StepReport(unit="items", preview_columns=("promoted item",))
    promotion = promote_session_items(
        database.get_database(),
        older_than_hours=config.promote_after_hours,
        settings=SETTINGS,
        embedder=embedder.get_embedder(),
        extractor=extractor.get_extractor(),
        log=context.log.info,
    )
    known = set(context.instance.get_dynamic_partitions(DOCUMENT_PARTITIONS))
    new = [key for key in promotion.partition_keys if key not in known]
    if new:
        context.instance.add_dynamic_partitions(DOCUMENT_PARTITIONS, new)
    # The per-document steps ran here for the new sources; record them against their partitions
    # so the UI (and the runner) see those partitions as materialized.
    counts = {name: report.counts() for name, report in promotion.steps.items()}
    counts["entities_and_facts"] = {"inserted": promotion.extraction.total("facts_inserted")}
    for asset_name, asset_counts in counts.items():
        for key in promotion.partition_keys:
            context.log_event(dg.AssetMaterialization(
                asset_key=asset_name, partition=key, metadata={"promoted_by": "session_items", **asset_counts}
            ))
    with database.connection() as connection:
        unpromoted, promoted = connection.execute(q.SESSION_ITEM_COUNTS).fetchone()
    step.inserted = step.processed = len(promotion.promoted)
    step.unchanged = promotion.young
    step.rows = unpromoted
    step.preview_rows = [(item,) for item in promotion.promoted[:5]]
    values = step.finish().metadata()
    values.update({"promoted_total": promoted, "promote_after_hours": config.promote_after_hours})
    return dg.MaterializeResult(metadata=dagster_metadata(values))


promote_session = dg.define_asset_job(
    "promote_session_items",
    selection=dg.AssetSelection.assets(session_items),
    description="Promote old working-memory items to documents.",
)

hourly_session_promotion = dg.ScheduleDefinition(
    name="hourly_session_promotion",
    job=promote_session,
    cron_schedule="15 * * * *",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Every hour: session items past promote_after_hours become documents.",
)
