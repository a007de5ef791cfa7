"""The graph-wide job and its schedules: every night the summaries follow the day's documents
(incrementally, as an ingest does), and once a week they are rebuilt in full, so the drift of
incremental refreshes from a full build (communities partitioned only where entity pairs changed, new
chunks added to RAPTOR clusters chosen before them) never lasts longer than a week."""

import dagster as dg

from pipelines.orchestration.groups import GRAPH_GROUP

# The graph-wide assets that can refresh incrementally; a full rebuild asks each for it.
REBUILDING_ASSETS = ("communities", "entity_profiles", "raptor_levels")

refresh_graph = dg.define_asset_job(
    "refresh_graph",
    selection=dg.AssetSelection.groups(GRAPH_GROUP),
    description="Entity graph, communities, profiles and RAPTOR levels, recomputed from the tables.",
)


def full_rebuild_config() -> dict[str, object]:
    """Run config of refresh_graph that rebuilds communities, profiles and RAPTOR levels in full."""
    return {"ops": {name: {"config": {"rebuild": "full"}} for name in REBUILDING_ASSETS}}


daily_graph_refresh = dg.ScheduleDefinition(
    name="daily_graph_refresh",
    job=refresh_graph,
    cron_schedule="0 3 * * 1-6",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Monday to Saturday at 03:00: the entity graph, and what the day's documents changed in "
    "communities, profiles and the RAPTOR tree.",
)

weekly_graph_rebuild = dg.ScheduleDefinition(
    name="weekly_graph_rebuild",
    job=refresh_graph,
    cron_schedule="0 3 * * 0",
    run_config=full_rebuild_config(),
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Sunday at 03:00: communities, profiles and the RAPTOR tree rebuilt in full from the tables.",
)
