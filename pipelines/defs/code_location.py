"""The code location: every asset, check, sensor and schedule under pipelines/defs/.

`pipelines.definitions` serves it to Dagster; the retrieval_eval asset builds its benchmark's
database with it, so it loads the tree here rather than import the module that serves it.
"""

import dagster as dg

import pipelines.defs
from pipelines.config import PROJECT_ROOT


def code_location() -> dg.Definitions:
    return dg.load_defs(defs_root=pipelines.defs, project_root=PROJECT_ROOT)
