"""The code location: every asset, check, sensor and schedule under pipelines/defs/.

`pipelines.definitions` serves it to Dagster; the retrieval_eval asset builds its benchmark's
database with it, so it loads the tree here rather than import the module that serves it.
"""

from pathlib import Path

import dagster as dg

import pipelines.defs


def code_location() -> dg.Definitions:
    # The folder holding the package: the repository in an editable install, site-packages otherwise.
    return dg.load_defs(defs_root=pipelines.defs, project_root=Path(pipelines.defs.__file__).resolve().parents[2])
