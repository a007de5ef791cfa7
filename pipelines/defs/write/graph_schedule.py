"""The graph-wide job and its daily schedule, so summaries follow the day's documents."""

import dagster as dg

from pipelines.orchestration.groups import GRAPH_GROUP

refresh_graph = dg.define_asset_job(
    "refresh_graph",
    selection=dg.AssetSelection.groups(GRAPH_GROUP),
    description="Entity graph, communities, profiles and RAPTOR levels, recomputed from the tables.",
)

daily_graph_refresh = dg.ScheduleDefinition(
    name="daily_graph_refresh",
    job=refresh_graph,
    cron_schedule="0 3 * * *",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Every night at 03:00: the entity graph, communities, profiles and RAPTOR tree recomputed.",
)
