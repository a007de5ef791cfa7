"""`lanegraph db`: the embedded server's lifecycle, as a user drives it from a shell."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import pytest

from pipelines.resources.embedded_postgres import EmbeddedPostgres
from pipelines.resources.server_memory import INCLUDE_LINE, SETTINGS_FILE, machine_memory_bytes, memory_settings


def lanegraph(*args: str, data_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "LANEGRAPH_DATA_DIR": str(data_dir), **env}
    environment.pop("DATABASE_URL", None) if "DATABASE_URL" not in env else None
    return subprocess.run(
        [sys.executable, "-m", "pipelines.cli", *args],
        capture_output=True, text=True, env=environment, timeout=300,
    )


@pytest.fixture()
def own_data_dir():
    """A data directory with its own embedded server, stopped afterwards whatever happened."""
    path = Path(tempfile.mkdtemp(prefix="lanegraph-cli-"))
    yield path
    EmbeddedPostgres(path).stop()


@pytest.mark.skipif(bool(os.environ.get("DATABASE_URL")), reason="exercises the embedded server")
def test_start_twice_stop_and_recover_from_sigkill(own_data_dir: Path) -> None:
    first = lanegraph("db", "start", data_dir=own_data_dir)
    assert first.returncode == 0, first.stderr
    pid = EmbeddedPostgres(own_data_dir).status().pid
    second = lanegraph("db", "start", data_dir=own_data_dir)
    assert second.returncode == 0, second.stderr
    assert EmbeddedPostgres(own_data_dir).status().pid == pid, "a second start reuses the running server"

    os.kill(pid, signal.SIGKILL)
    for _ in range(50):
        if not EmbeddedPostgres(own_data_dir).status().running:
            break
        time.sleep(0.1)
    status = lanegraph("db", "status", data_dir=own_data_dir)
    assert status.returncode == 1 and "stopped" in status.stdout

    recovered = lanegraph("db", "start", data_dir=own_data_dir)
    assert recovered.returncode == 0, recovered.stderr
    url = lanegraph("db", "url", data_dir=own_data_dir).stdout.strip()
    with psycopg.connect(url) as connection:
        assert connection.execute("SELECT count(*) FROM lanegraph_migration").fetchone()[0] > 0

    stopped = lanegraph("db", "stop", data_dir=own_data_dir)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    again = lanegraph("db", "stop", data_dir=own_data_dir)
    assert again.returncode == 0 and "was not running" in again.stdout


@pytest.mark.skipif(bool(os.environ.get("DATABASE_URL")), reason="exercises the embedded server")
def test_a_data_directory_from_before_sizing_is_sized_at_its_next_start(own_data_dir: Path) -> None:
    assert lanegraph("db", "start", data_dir=own_data_dir).returncode == 0
    assert lanegraph("db", "stop", data_dir=own_data_dir).returncode == 0
    pgdata = own_data_dir / "postgres"
    (pgdata / SETTINGS_FILE).unlink()
    configuration = pgdata / "postgresql.conf"
    configuration.write_text(configuration.read_text().replace(INCLUDE_LINE, ""))

    assert lanegraph("db", "start", data_dir=own_data_dir).returncode == 0
    status = lanegraph("db", "status", data_dir=own_data_dir)
    wanted = memory_settings(machine_memory_bytes())
    with psycopg.connect(lanegraph("db", "url", data_dir=own_data_dir).stdout.strip()) as connection:
        shown = connection.execute(
            "SELECT current_setting('shared_buffers'), current_setting('effective_cache_size'),"
            " pg_size_bytes(current_setting('shared_buffers')) = pg_size_bytes(%s)",
            (wanted["shared_buffers"],),
        ).fetchone()
    assert shown[2], f"shared_buffers {shown[0]}, wanted {wanted['shared_buffers']}"
    assert f"shared_buffers {shown[0]}, effective_cache_size {shown[1]}" in status.stdout
    assert configuration.read_text().count(INCLUDE_LINE) == 1, "the include is written once"


@pytest.mark.skipif(bool(os.environ.get("DATABASE_URL")), reason="exercises the embedded server")
def test_the_embedded_server_keeps_its_buffer_pool_across_restarts(own_data_dir: Path) -> None:
    assert lanegraph("db", "start", data_dir=own_data_dir).returncode == 0
    with psycopg.connect(lanegraph("db", "url", data_dir=own_data_dir).stdout.strip()) as connection:
        assert connection.execute("SELECT current_setting('pg_prewarm.autoprewarm')").fetchone() == ("on",)
    assert lanegraph("db", "stop", data_dir=own_data_dir).returncode == 0
    # What the pool held, recorded at shutdown, is what autoprewarm reads back at the next start.
    assert (own_data_dir / "postgres" / "autoprewarm.blocks").stat().st_size > 0


@pytest.mark.parametrize(
    "env, message",
    [
        ({"DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}, "cannot connect to PostgreSQL at 127.0.0.1:1/none"),
        ({"DATABASE_URL": "definitely not a url"}, "not a valid PostgreSQL connection string"),
    ],
)
def test_bad_database_url_is_one_line(own_data_dir: Path, env: dict[str, str], message: str) -> None:
    result = lanegraph("db", "start", data_dir=own_data_dir, **env)
    assert result.returncode == 2
    assert message in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_unusable_data_directory_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = lanegraph("db", "start", data_dir=blocker / "data")
    assert result.returncode == 2
    assert "cannot create data directory" in result.stderr and "LANEGRAPH_DATA_DIR" in result.stderr
    assert "Traceback" not in result.stderr


def test_invalid_lanes_yaml_names_file_line_and_key(tmp_path: Path, own_data_dir: Path) -> None:
    settings = tmp_path / "lanes.yaml"
    settings.write_text("version: 1\npipeline:\n  embedding:\n    dimension: lots\n")
    result = lanegraph("db", "start", data_dir=own_data_dir, LANEGRAPH_CONFIG=str(settings))
    assert result.returncode == 2
    assert f"{settings}:4: pipeline.embedding.dimension:" in result.stderr


def test_psql_runs_the_bundled_client_with_its_arguments(server_url: str, tmp_path: Path) -> None:
    done = lanegraph("db", "psql", "-At", "-c", "select 40 + 2", data_dir=tmp_path, DATABASE_URL=server_url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "42"


def test_other_commands_still_refuse_unknown_arguments(tmp_path: Path) -> None:
    done = lanegraph("db", "status", "--bogus", data_dir=tmp_path)
    assert done.returncode == 2 and "unrecognized arguments: --bogus" in done.stderr
