"""The Dagster code location: every asset, check, sensor and schedule under pipelines/defs/."""

from pathlib import Path

import dagster as dg

import pipelines.defs

# The folder holding the package: the repository in an editable install, site-packages otherwise.
defs = dg.load_defs(defs_root=pipelines.defs, project_root=Path(pipelines.defs.__file__).resolve().parents[2])
