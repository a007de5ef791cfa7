"""Ingest jobs of `lanegraph serve`: POST /documents accepts JSONL records at once and the runner
carries them through the assets in the background, as `lanegraph ingest` would; GET /jobs/{id} says
how far it got (sql_templates/schema/0081_api_jobs.sql).

Records are checked whole before anything is accepted: a bad line refuses the request, naming it.
A confined token's records are written under its scopes (a subset may be given, never another
scope nor public) and their ids under its id prefix, the one row security gives its memory items
(0052_writer_id_prefix.sql), so a tenant can neither overwrite nor learn of another tenant's
document. Jobs run one at a time per process: ingests share the machine's cores and the graph.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pipelines.errors import InputError, first_line_of
from pipelines.resources.database import Database
from pipelines.resources.scopes import ScopedRole
from pipelines.serve.tokens import ApiToken
from pipelines.write.documents.conversations import is_chat_record, is_turn_record
from pipelines.write.documents.sources import jsonl_documents
from pipelines.write.session.session import caller_id_prefix

# What a job does with its JSONL file: the ingest's report, as JSON.
Ingest = Callable[[Path], dict]

INSERT_JOB = """
INSERT INTO lanegraph_api_job (id, token_id, records, source_path) VALUES (%s, %s, %s, %s)
"""
START_JOB = "UPDATE lanegraph_api_job SET state = 'running', started_at = now() WHERE id = %s"
FINISH_JOB = """
UPDATE lanegraph_api_job SET state = %s, finished_at = now(), report = %s, error = %s WHERE id = %s
"""
ABANDON_JOBS = """
UPDATE lanegraph_api_job SET state = 'failed', finished_at = now(), error = 'the server stopped before the job ran; submit it again'
WHERE id = ANY(%s) AND state = 'queued'
"""
JOB = """
SELECT id, token_id, state, records, submitted_at, started_at, finished_at, report, error
FROM lanegraph_api_job WHERE id = %s
"""


def ingest_with_runner(database_url: str) -> Ingest:
    """`lanegraph ingest FILE` on `database_url`, through the runner and the project's definitions."""

    def run(path: Path) -> dict:
        from pipelines.definitions import LOCATION, defs
        from pipelines.orchestration.runner import ingest

        return ingest(path, definitions=defs, location=LOCATION, database_url=database_url).summary()

    return run


def caller_records(body: str, caller: ApiToken, id_prefix: str) -> list[dict]:
    """The body's JSONL records, each checked as `lanegraph ingest` reads it, with a confined
    caller's scopes and id prefix applied (to a conversation's name, which its turns' ids start
    with, when the record is a turn or a chat log)."""
    records = []
    seen: dict[str, int] = {}
    for number, line in enumerate(body.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            documents = jsonl_documents(line)
            record = json.loads(line)
            if caller.scopes is not None:
                scopes = record.get("scopes", list(caller.scopes))
                outside = sorted(set(scopes) - set(caller.scopes))
                if outside:
                    raise InputError(f"field 'scopes': {', '.join(outside)} not among the token's scopes")
                if not scopes:
                    raise InputError("field 'scopes': a token with scopes writes documents under at least one of them")
                record["scopes"] = scopes
                _apply_prefix(record, documents[0].id, id_prefix)
                documents = jsonl_documents(json.dumps(record))
        except InputError as error:
            raise InputError(f"line {number}: {error}") from None
        for document in documents:
            if document.id in seen:
                raise InputError(f"line {number}: duplicate id {document.id!r} (first on line {seen[document.id]})")
            seen[document.id] = number
        records.append(record)
    if not records:
        raise InputError("no records: send one JSON object a line (id, title, text, uri, observed_at, expires_at, scopes)")
    return records


def _prefixed(value: str, id_prefix: str) -> str:
    return value if value.startswith(id_prefix) else id_prefix + value


def _apply_prefix(record: dict, first_id: str, id_prefix: str) -> None:
    """Put the record's ids under the caller's prefix: a plain record's id; a conversation's name
    (its turns' ids start with it) and any id it gives."""
    if not (is_turn_record(record) or is_chat_record(record)):
        record["id"] = _prefixed(first_id, id_prefix)
        return
    conversation = record.get("conversation") or (record.get("id") if is_chat_record(record) else None)
    if conversation is not None:
        record["conversation"] = _prefixed(str(conversation), id_prefix)
    if "id" in record and not is_chat_record(record):
        record["id"] = _prefixed(str(record["id"]), id_prefix)


class Jobs:
    """Accepts ingest jobs, runs them one at a time on a thread of their own, and reports them."""

    def __init__(self, database: Database, inbox: Path, ingest: Ingest) -> None:
        self._database = database
        self._inbox = inbox
        self._ingest = ingest
        self._runner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lanegraph-ingest")
        self._submitted: list[str] = []

    def submit(self, caller: ApiToken, body: str) -> dict:
        with self._database.connection(caller.scopes, role=ScopedRole.WRITER) as connection:
            prefix = caller_id_prefix(connection) if caller.scopes is not None else ""
        records = caller_records(body, caller, prefix)
        job_id = f"job-{secrets.token_hex(8)}"
        self._inbox.mkdir(parents=True, exist_ok=True)
        path = self._inbox / f"{job_id}.jsonl"
        path.write_text("".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records), encoding="utf-8")
        with self._database.connection() as connection:
            connection.execute(INSERT_JOB, (job_id, caller.id, len(records), str(path)))
        self._submitted.append(job_id)
        self._runner.submit(self._run, job_id, path)
        return self.get(caller, job_id) or {}

    def _run(self, job_id: str, path: Path) -> None:
        with self._database.connection() as connection:
            connection.execute(START_JOB, (job_id,))
        try:
            report = self._ingest(path)
        except Exception as error:  # noqa: BLE001 - any failure is the job's outcome, reported by GET /jobs
            outcome: tuple[str, object, str | None] = ("failed", None, f"{type(error).__name__}: {first_line_of(error)}")
        else:
            # As `lanegraph ingest` exits 1: a skipped record or a failed check is no success.
            problems = [f"check {name} failed" for name, passed in sorted(report["checks"].items()) if not passed]
            problems += [f"skipped {line}" for line in report["skipped"]]
            outcome = ("failed" if problems else "succeeded", json.dumps(report), "; ".join(problems) or None)
        state, report_json, message = outcome
        with self._database.connection() as connection:
            connection.execute(FINISH_JOB, (state, report_json, message, job_id))

    def get(self, caller: ApiToken, job_id: str) -> dict | None:
        """The job, if it exists and is the caller's (an owner token sees every job)."""
        with self._database.connection() as connection:
            row = connection.execute(JOB, (job_id,)).fetchone()
        if row is None or (not caller.is_owner and row[1] != caller.id):
            return None
        job_id, _, state, records, submitted, started, finished, report, error = row
        return {
            "id": job_id, "state": state, "records": records,
            "submitted_at": submitted.isoformat(),
            "started_at": started.isoformat() if started else None,
            "finished_at": finished.isoformat() if finished else None,
            "report": report, "error": error,
        }

    def close(self) -> None:
        """Finish the running job; the ones not started yet are marked failed, to be submitted again."""
        self._runner.shutdown(wait=True, cancel_futures=True)
        if self._submitted:
            with self._database.connection() as connection:
                connection.execute(ABANDON_JOBS, (self._submitted,))
