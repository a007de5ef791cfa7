"""A `lanegraph serve` app on the planted read-side world, served by uvicorn on 127.0.0.1 in the
test process, and tokens for the owner and two tenants."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from pipelines.config import LanegraphConfig
from pipelines.resources.database import Database
from pipelines.serve.app import create_app
from pipelines.serve.jobs import Jobs, ingest_with_runner
from pipelines.serve.service import Service
from pipelines.serve.tokens import create_token
from tests.read.conftest import plant_world
from tests.read.planting import EMBEDDER


class RunningServer:
    """uvicorn serving `app` on a free loopback port, in a thread of the test process."""

    def __init__(self, app: FastAPI) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
        self._thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self._socket]}, daemon=True)

    def __enter__(self) -> RunningServer:
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=30)
        self._socket.close()


@dataclass(frozen=True)
class Served:
    url: str
    database: Database
    owner: str
    tenant_a: str
    tenant_b: str

    def client(self, secret: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {secret}"} if secret else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


@pytest.fixture(scope="module")
def served(make_database, config: LanegraphConfig, tmp_path_factory) -> Iterator[Served]:  # type: ignore[no-untyped-def]
    database = plant_world(make_database())
    jobs = Jobs(database, tmp_path_factory.mktemp("api-inbox"), ingest_with_runner(database.url))
    service = Service(database, config, embedder=EMBEDDER, jobs=jobs)
    owner = create_token(database, "owner", None)[1]
    tenant_a = create_token(database, "tenant a", ["tenant-a"])[1]
    tenant_b = create_token(database, "tenant b", ["tenant-b"])[1]
    with RunningServer(create_app(service)) as running:
        yield Served(running.url, database, owner, tenant_a, tenant_b)
    jobs.close()
