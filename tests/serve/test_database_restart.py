"""The database goes away under a running server and comes back: requests meanwhile fail with 503
and a retry hint, and succeed again afterwards without restarting the server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx

from pipelines.resources.database import Database, prepare_database
from pipelines.resources.embedded_postgres import EmbeddedPostgres
from pipelines.serve.app import create_app
from pipelines.serve.service import Service
from pipelines.serve.tokens import create_token
from tests.read.planting import EMBEDDER
from tests.serve.conftest import RunningServer


def test_requests_get_503_while_the_database_is_down_and_succeed_after(
    own_server: EmbeddedPostgres, embedding_dimension: int, config,  # type: ignore[no-untyped-def]
) -> None:
    url = own_server.database_url("lanegraph")
    prepare_database(url, embedding_dimension)
    database = Database(url)
    tenant = create_token(database, "tenant", ["tenant-a"])[1]
    service = Service(database, config, embedder=EMBEDDER)
    # Load the model before the clock of the first request starts, as `Service.open` does.
    EMBEDDER.embed(["The standup moved to 9:30."])
    EMBEDDER.embed_questions(["When is the standup?"])
    with RunningServer(create_app(service)) as running, httpx.Client(
        base_url=running.url, headers={"Authorization": f"Bearer {tenant}"}, timeout=30
    ) as client:
        assert client.post("/memory", json={"text": "The standup moved to 9:30."}).status_code == 201
        assert client.post("/find", json={"question": "When is the standup?"}).status_code == 200

        # A fast shutdown, as an operator's restart does: sessions are ended mid-connection.
        os.kill(own_server.status().pid, signal.SIGINT)
        deadline = time.monotonic() + 60
        while own_server.status().running and time.monotonic() < deadline:
            time.sleep(0.1)
        for path, body in [("/find", {"question": "When is the standup?"}), ("/memory", {"text": "x y z"})]:
            down = client.post(path, json=body)
            assert down.status_code == 503, down.text
            assert int(down.headers["retry-after"]) > 0
        assert client.get("/ready").status_code == 503
        assert client.get("/health").status_code == 200

        # As a user would, from another process (the wheel keeps a server handle per process).
        restarted = subprocess.run(
            [sys.executable, "-m", "pipelines.cli", "db", "start"], capture_output=True, text=True, timeout=300,
            env={**os.environ, "LANEGRAPH_DATA_DIR": str(own_server.data_dir)},
        )
        assert restarted.returncode == 0, restarted.stderr
        statuses = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            statuses.append(client.post("/find", json={"question": "When is the standup?"}).status_code)
            if statuses[-1] == 200:
                break
            time.sleep(0.2)
        assert statuses[-1] == 200 and set(statuses) <= {200, 503}, statuses
        assert client.get("/ready").status_code == 200
        found = client.post("/find", json={"question": "When is the standup?"}).json()
        assert any("9:30" in evidence["line"] for evidence in found["evidence"])
    service.close()
