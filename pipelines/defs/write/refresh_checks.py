"""The asset check every graph-wide asset carries: its last completed refresh consumed the documents
there are now (`pipelines.write.graph.refresh_state`)."""

import dagster as dg

from pipelines.resources.database import DatabaseResource
from pipelines.write.graph.refresh_state import steps_out_of_step


def follows_its_sources(asset: dg.AssetsDefinition) -> dg.AssetChecksDefinition:
    step = asset.key.path[-1]

    @dg.asset_check(
        asset=asset,
        name=f"{step}_follows_its_sources",
        description=(
            "The last completed refresh consumed the documents there are now: a refresh cut short (a kill, "
            "a failed step) fails this until the next ingest or materialization runs it again."
        ),
    )
    def check(database: DatabaseResource) -> dg.AssetCheckResult:
        with database.connection() as connection:
            behind = steps_out_of_step(connection, [step])
        return dg.AssetCheckResult(passed=not behind, metadata={"out_of_step": bool(behind)})

    return check
