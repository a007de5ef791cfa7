"""POST /documents and GET /jobs/{id}: JSONL accepted as a background ingest job, confined to the
token's scopes."""

from __future__ import annotations

import json
import time

import pytest

from collections.abc import Iterator

from pipelines.serve.app import create_app
from pipelines.serve.jobs import Jobs, ingest_with_runner
from pipelines.serve.service import Service
from pipelines.serve.tokens import create_token
from tests.read.planting import EMBEDDER
from tests.serve.conftest import RunningServer, Served

JSONL = {"Content-Type": "application/x-ndjson"}


def test_bad_records_are_refused_whole_naming_the_line(served: Served) -> None:
    with served.client(served.tenant_a) as client:
        body = json.dumps({"id": "ok", "text": "Fine."}) + "\n" + json.dumps({"id": "bad", "txet": "typo"}) + "\n"
        refused = client.post("/documents", content=body, headers=JSONL)
        assert refused.status_code == 422 and refused.json()["detail"].startswith("line 2: unknown field 'txet'")
        outside = client.post("/documents", content=json.dumps({"text": "x", "scopes": ["tenant-b"]}), headers=JSONL)
        assert outside.status_code == 422 and "tenant-b not among the token's scopes" in outside.text
        public = client.post("/documents", content=json.dumps({"text": "x", "scopes": []}), headers=JSONL)
        assert public.status_code == 422
        assert client.post("/documents", content=b"\n\n", headers=JSONL).status_code == 422
        assert client.get("/jobs/job-0000000000000000").status_code == 404


@pytest.fixture()
def fresh(make_database, config, tmp_path) -> Iterator[Served]:  # type: ignore[no-untyped-def]
    """A server on an empty database: the planted world is no write side's output, and its checks fail."""
    database = make_database()
    jobs = Jobs(database, tmp_path / "api-inbox", ingest_with_runner(database.url))
    service = Service(database, config, embedder=EMBEDDER, jobs=jobs)
    tenant_a = create_token(database, "tenant a", ["tenant-a"])[1]
    tenant_b = create_token(database, "tenant b", ["tenant-b"])[1]
    with RunningServer(create_app(service)) as running:
        yield Served(running.url, database, "", tenant_a, tenant_b)
    jobs.close()


@pytest.mark.slow
def test_a_job_ingests_the_records_for_its_token_only(fresh: Served) -> None:
    served = fresh
    record = {"id": "fjord-log", "title": "Fjord Ferry Log", "text": "The Skarvik ferry crosses the fjord at dawn."}
    with served.client(served.tenant_a) as client:
        accepted = client.post("/documents", content=json.dumps(record) + "\n", headers=JSONL)
        assert accepted.status_code == 202, accepted.text
        job = accepted.json()
        assert job["state"] in {"queued", "running"} and accepted.headers["location"] == f"/jobs/{job['id']}"
        deadline = time.monotonic() + 600
        while job["state"] in {"queued", "running"} and time.monotonic() < deadline:
            time.sleep(1)
            job = client.get(f"/jobs/{job['id']}").json()
        assert job["state"] == "succeeded", (job["error"], job["report"])
        found = client.post("/find", json={"question": "When does the Skarvik ferry cross the fjord?"}).json()
        assert any("Skarvik" in evidence["line"] for evidence in found["evidence"])
        assert all(set(evidence["scopes"]) <= {"tenant-a"} for evidence in found["evidence"])
    with served.client(served.tenant_b) as client:
        assert client.get(f"/jobs/{job['id']}").status_code == 404
        found = client.post("/find", json={"question": "When does the Skarvik ferry cross the fjord?"}).json()
        assert not any("Skarvik" in evidence["line"] for evidence in found["evidence"])
