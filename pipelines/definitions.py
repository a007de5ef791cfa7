"""The Dagster code location: every asset, check, sensor and schedule under pipelines/defs/."""

import dagster as dg

import pipelines.defs
from pipelines.config import PROJECT_ROOT

defs = dg.load_defs(defs_root=pipelines.defs, project_root=PROJECT_ROOT)
