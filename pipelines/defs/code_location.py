"""The code location: every asset, check, sensor and schedule under pipelines/defs/.

`pipelines.definitions` serves it to Dagster; the retrieval_eval asset builds its benchmark's
database with it, so it loads the tree here rather than import the module that serves it.
"""

from pathlib import Path

import dagster as dg

import pipelines


def code_location() -> dg.Definitions:
    # The project file sits inside the package, so an installed wheel finds it as an editable
    # install does: a repository's pyproject.toml is not in site-packages.
    return dg.load_from_defs_folder(path_within_project=Path(pipelines.__file__).parent)
