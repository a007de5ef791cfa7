"""Where the files the product reads at run time are found: `sql_templates/` and the default
`lanes.yaml`.

They live at the repository root, where users read and edit them. A built wheel carries copies
inside the package, in a `shipped` folder beside this module (the build step in setup.py), so an installed lanegraph
finds them through importlib.resources from any working directory; an editable install has no such
copy and reads the repository's own files, so an edit there takes effect at once.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

_PACKAGED = Path(str(files("pipelines") / "shipped"))
SHIPPED_ROOT = _PACKAGED if _PACKAGED.is_dir() else Path(__file__).resolve().parents[1]
SQL_TEMPLATES = SHIPPED_ROOT / "sql_templates"
DEFAULT_LANES = SHIPPED_ROOT / "lanes.yaml"
