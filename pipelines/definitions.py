"""The Dagster code location: every asset, check, sensor and schedule under pipelines/defs/."""

from pipelines.defs.code_location import code_location

defs = code_location()
# Where a step process of the multiprocess executor imports the definitions from again.
LOCATION = f"{__name__}:defs"
