"""Resources shared by every asset, configured from lanes.yaml and the environment."""

import dagster as dg

from pipelines.resources.database import DatabaseResource


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources={"database": DatabaseResource()})
