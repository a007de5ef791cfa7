"""The built wheel, installed without the source tree: what a user who runs `pip install` gets."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import dagster as dg
import pytest

from pipelines.cli.demo import NEEDS_YOUR_QUESTIONS
from pipelines.definitions import defs
from tests import REPOSITORY


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(folder), str(REPOSITORY)],
        check=True, capture_output=True,
    )
    (built,) = folder.glob("lanegraph-*.whl")
    return built


def test_the_wheel_carries_every_sql_template_and_the_default_settings(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {
        f"pipelines/shipped/{path.relative_to(REPOSITORY).as_posix()}"
        for path in (REPOSITORY / "sql_templates").rglob("*.sql")
    }
    assert len(shipped) > 30
    assert shipped <= names, sorted(shipped - names)
    assert "pipelines/shipped/lanes.yaml" in names
    assert "pipelines/shipped/lanes.conversations.yaml" in names


@pytest.mark.slow
def test_an_installed_wheel_runs_the_demo_which_materializes_every_asset_and_find_works_from_an_empty_directory(wheel, tmp_path, make_schema_url):
    """The wheel goes into a venv of its own (dependencies seen through a path entry to this venv's
    site-packages, whose editable install of lanegraph is not loaded), then runs outside the source tree."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    site_packages = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    Path(site_packages, "test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)], check=True)

    empty = tmp_path / "elsewhere"
    empty.mkdir()
    environment = {
        **os.environ,
        "DATABASE_URL": make_schema_url(),
        "LANEGRAPH_DATA_DIR": str(empty / "data"),
        "DAGSTER_HOME": str(empty / "dagster"),
    }
    environment.pop("LANEGRAPH_CONFIG", None)
    lanegraph = str(venv / "bin" / "lanegraph")

    def run(*arguments: str) -> str:
        done = subprocess.run([lanegraph, *arguments], cwd=empty, env=environment, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    located = subprocess.run(
        [python, "-c", "import pipelines.shipped as s; print(s.SQL_TEMPLATES)"],
        cwd=empty, check=True, capture_output=True, text=True,
    ).stdout
    assert located.startswith(site_packages), located
    assert "Q: " in run("demo", "--questions", "1")
    with dg.DagsterInstance.from_config(environment["DAGSTER_HOME"]) as instance:
        never = [
            key.to_user_string() for key in defs.resolve_asset_graph().get_all_asset_keys()
            if instance.get_latest_materialization_event(key) is None
            and key.to_user_string() not in NEEDS_YOUR_QUESTIONS
        ]
    assert never == [], f"never materialized after the demo: {never}"
    assert "Tomasz Wielgus" in run("find", "Who leads Project Heron now?")
