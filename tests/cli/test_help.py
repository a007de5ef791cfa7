"""`lanegraph --help` answers at once: it lists every command without importing any of them."""

from __future__ import annotations

import subprocess
import sys

from pipelines.cli import COMMAND_HELP

LISTS_AND_REPORTS_IMPORTS = """
import sys
from pipelines.cli import main
try:
    main(["--help"])
except SystemExit:
    pass
print("HEAVY", sorted(name for name in ("dagster", "torch", "sqlglot", "pydantic", "psycopg", "numpy", "ranx") if name in sys.modules))
"""


def test_top_level_help_lists_every_command_and_imports_no_heavy_library():
    done = subprocess.run([sys.executable, "-c", LISTS_AND_REPORTS_IMPORTS], capture_output=True, text=True, check=True)
    for name in COMMAND_HELP:
        assert f"    {name}" in done.stdout
    assert "HEAVY []" in done.stdout


def test_a_command_help_still_shows_its_own_options():
    done = subprocess.run([sys.executable, "-m", "pipelines.cli", "find", "--help"], capture_output=True, text=True, check=True)
    assert "--budget" in done.stdout
