"""The Dagster instance directory: runs from the CLI and from the UI land in the same history."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pipelines.config import data_dir

INSTANCE_SETTINGS = Path(__file__).with_name("dagster.yaml")


def ensure_dagster_home() -> Path:
    """DAGSTER_HOME if set, else `<data dir>/dagster`, holding our dagster.yaml (telemetry and the first-visit dialog off)."""
    home = Path(os.environ.get("DAGSTER_HOME") or data_dir() / "dagster").resolve()
    home.mkdir(parents=True, exist_ok=True)
    settings = home / "dagster.yaml"
    if not settings.exists():
        shutil.copyfile(INSTANCE_SETTINGS, settings)
    os.environ["DAGSTER_HOME"] = str(home)
    return home
