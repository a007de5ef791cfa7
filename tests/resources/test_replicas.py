"""Hot standbys of the embedded server serving find: same rows, same row security, and a standby
that dies or lags degrades find to the primary instead of failing it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from pipelines.cli import main
from pipelines.config import LanegraphConfig, data_dir, load_config
from pipelines.fusion.models import FindArgs
from pipelines.fusion.postgres_client import PostgresQueryClient
from pipelines.read.access import record_access
from pipelines.read.find import FindResult, find
from pipelines.resources.database import Database
from pipelines.resources.embedded_postgres import EmbeddedPostgres, EmbeddedStandby
from pipelines.errors import DatabaseError
from pipelines.resources.read_servers import (
    PRIMARY,
    READ_URLS_ENV,
    ReadServers,
    current_wal_lsn,
    server_url_for,
)
from tests import REPOSITORY
from tests.read.planting import EMBEDDER

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("DATABASE_URL")), reason="standbys are made of the embedded server"
)
QUESTION = "Who leads Project Heron?"
DOCUMENTS = [
    {"id": "heron", "title": "Project Heron", "scopes": [],
     "text": "Project Heron is led by Maren Okafor. Project Heron is built in Porto."},
    {"id": "heron-budget", "title": "Heron budget", "scopes": ["acme"],
     "text": "Project Heron has a budget of four million euros, approved by Maren Okafor."},
    {"id": "heron-rival", "title": "Heron rival", "scopes": ["globex"],
     "text": "Project Heron competes with Project Kestrel, which Ivo Lindqvist leads."},
]


def rows(result: FindResult) -> list[tuple[str, str]]:
    return [(candidate.evidence_id, candidate.line) for candidate in result.evidence]


def ask(database: Database | ReadServers, config, scopes=None) -> FindResult:  # type: ignore[no-untyped-def]
    return find(database, QUESTION, config=config, embedder=EMBEDDER, scopes=scopes)


@pytest.fixture(scope="module")
def config() -> LanegraphConfig:
    return load_config(REPOSITORY / "lanes.yaml")


@pytest.fixture(scope="module")
def standby_url() -> Iterator[str]:
    """A standby made by `lanegraph db replica add`: the URL its last line prints."""
    lines: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("builtins.print", lambda *parts, **_: lines.append(" ".join(map(str, parts))))
        assert main(["db", "replica", "add", "reads1"]) == 0
    yield lines[-1]
    assert main(["db", "replica", "remove", "reads1"]) == 0
    assert not EmbeddedPostgres(data_dir()).standbys()


@pytest.fixture(scope="module")
def ingested(make_schema_url: Callable[[], str], standby_url: str, tmp_path_factory) -> Iterator[Database]:
    """Three documents (public, acme's, globex's) ingested by `lanegraph ingest`, which then waits
    until the standby replayed the ingest."""
    folder: Path = tmp_path_factory.mktemp("replicated")
    (folder / "heron.jsonl").write_text("".join(json.dumps(document) + "\n" for document in DOCUMENTS))
    url = make_schema_url()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DATABASE_URL", url)
        patch.setenv(READ_URLS_ENV, standby_url)
        assert main(["ingest", str(folder), "--no-graph", "--wait-for-replicas", "60"]) == 0
    database = Database(url)
    yield database
    database.close()


@pytest.fixture()
def standby(ingested: Database, standby_url: str) -> Iterator[Database]:
    database = Database(server_url_for(standby_url, ingested.url))
    yield database
    database.close()


def test_the_standby_serves_find_with_the_primarys_rows_after_an_ingest(ingested, standby, config):
    on_primary = ask(ingested, config)
    assert any("Project Heron is led by Maren Okafor" in line for _, line in rows(on_primary)), rows(on_primary)
    assert rows(ask(standby, config)) == rows(on_primary)
    with standby.connection() as connection:
        assert connection.execute("SELECT pg_is_in_recovery()").fetchone()[0]


def test_replica_list_shows_the_standby_streaming(standby_url, capsys):
    assert main(["db", "replica", "list"]) == 0
    listed = capsys.readouterr().out
    assert "reads1" in listed and "running  streaming" in listed and standby_url in listed


def test_find_spreads_over_read_servers_and_says_which_answered(ingested, standby_url, config):
    with ReadServers(ingested, [standby_url], include_primary=True) as reads:
        served = [ask(reads, config) for _ in range(4)]
    assert sorted(result.served_by for result in served) == [PRIMARY, PRIMARY, "read1", "read1"]
    assert all(rows(result) == rows(served[0]) and not result.degraded_reason for result in served)


def test_the_fusion_client_reads_from_the_standby(ingested, standby, standby_url, config):
    def evidence(database):  # type: ignore[no-untyped-def]
        client = PostgresQueryClient(database, config=config, embedder=EMBEDDER, scopes=["acme"])
        return [(e.entity_id, e.snippet_text) for e in asyncio.run(client.find(FindArgs(QUESTION, k=8), "2", "find", 50))]

    with ReadServers(ingested, [standby_url]) as reads:
        spread = evidence(reads)
    assert spread and spread == evidence(standby) == evidence(ingested)


def test_row_security_holds_on_the_standby(ingested, standby, standby_url, config):
    # Each scope set's login is made by the primary at its first confined read (0090); a standby
    # holds only what it replayed, and says so.
    with pytest.raises(DatabaseError, match="standby"):
        ask(standby, config, ["never-read-on-the-primary"])
    on_primary = {tuple(scopes): ask(ingested, config, scopes) for scopes in ([], ["acme"], ["acme", "globex"])}
    with ReadServers(ingested, [standby_url]) as reads:
        reads.wait_for_replay(current_wal_lsn(ingested), 60)
    for scopes in ([], ["acme"], ["acme", "globex"]):
        on_standby = ask(standby, config, scopes)
        assert rows(on_standby) == rows(on_primary[tuple(scopes)])
        documents = {candidate.document_id for candidate in on_standby.evidence if candidate.document_id}
        allowed = {document["id"] for document in DOCUMENTS if set(document["scopes"]) <= set(scopes)}
        assert documents and documents <= allowed
    assert "heron-budget" not in {c.document_id for c in ask(standby, config, []).evidence}


def test_find_on_a_standby_from_the_command_line_skips_recording_access(ingested, standby_url, monkeypatch, capsys):
    monkeypatch.setenv("DATABASE_URL", server_url_for(standby_url, ingested.url))
    assert main(["find", QUESTION, "--json"]) == 0
    captured = capsys.readouterr()
    evidence = json.loads(captured.out)["evidence"]
    assert evidence
    # Only facts handed out are recorded; with none there is nothing to skip.
    handed_out_facts = any(row["fact_id"] for row in evidence)
    assert handed_out_facts == ("fact access not recorded: the database is a read-only standby" in captured.err)


def test_a_lagging_standby_is_skipped_and_find_says_so(ingested, standby, standby_url, config):
    with standby.connection() as connection:
        connection.execute("SELECT pg_wal_replay_pause()")
    try:
        with ingested.connection() as connection:
            connection.execute("UPDATE document SET updated_at = now() WHERE id = 'heron'")
        # Received but not replayed: WAL still on its way is not counted as lag.
        lsn = current_wal_lsn(ingested)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with standby.connection() as connection:
                if connection.execute("SELECT pg_last_wal_receive_lsn() >= %s::pg_lsn", (lsn,)).fetchone()[0]:
                    break
            time.sleep(0.05)
        with ReadServers(ingested, [standby_url], max_lag_seconds=0) as reads:
            result = ask(reads, config)
            assert result.served_by == PRIMARY
            assert "read server read1" in result.degraded_reason and "lagging" in result.degraded_reason
            with pytest.raises(DatabaseError, match="has not replayed the primary's WAL up to"):
                reads.wait_for_replay(current_wal_lsn(ingested), timeout_seconds=0.5)
    finally:
        with standby.connection() as connection:
            connection.execute("SELECT pg_wal_replay_resume()")


def wait_until_exited(pid: int) -> None:
    """A killed postmaster's backends end when its exit completes (it closes their lifeline pipe),
    which takes tens of milliseconds with a machine-sized shared memory; an open connection's next
    question before then is still answered by the standby."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} still exiting after 30 s")


def test_killing_the_standby_mid_run_degrades_find_to_the_primary(ingested, config):
    doomed = EmbeddedStandby(EmbeddedPostgres(data_dir()), "doomed")
    url = server_url_for(doomed.create(), ingested.url)
    try:
        with ReadServers(ingested, [url]) as reads:
            reads.wait_for_replay(current_wal_lsn(ingested), timeout_seconds=60)
            before = ask(reads, config)
            assert before.served_by == "read1" and not before.degraded_reason
            killed = doomed.status().pid
            os.kill(killed, signal.SIGKILL)
            wait_until_exited(killed)
            after = ask(reads, config)
            assert after.served_by == PRIMARY
            assert after.degraded_reason.startswith("read server read1 (")
            assert after.degraded_reason.endswith("; read from the primary")
            assert rows(after) == rows(before)
            again = ask(reads, config)
            assert again.served_by == PRIMARY and "read server read1" in again.degraded_reason
        # Nothing lost: the primary records what the degraded reads handed out.
        assert record_access(ingested, [after, again]) == len(set(after.accessed_fact_ids))
    finally:
        doomed.remove()
    assert not doomed.pgdata.exists()
