"""What `lanegraph serve` does for a caller, whatever protocol asked: HTTP (app.py) and MCP
(mcp_server.py) both call a `Service`.

One `Service` per process: the primary's pool, the read servers, the question embedder (loaded once,
here, not per request; concurrent finds share its passes) and the token verifier. Every call names
the caller's token, and runs as it: a token with scopes reads and writes through a confined
connection holding exactly those scopes, so nothing a request sends can reach another tenant's rows.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import psycopg
import pydantic
from psycopg_pool import PoolTimeout

from pipelines.config import LanegraphConfig, ServeSettings, data_dir, load_config
from pipelines.errors import DatabaseError, InputError, first_line_of
from pipelines.read.access import record_access_or_say
from pipelines.read.find import find
from pipelines.resources.database import Database, connect, open_database
from pipelines.resources.embedder import Embedder, EmbedderResource
from pipelines.resources.migrations import check_standby_schema
from pipelines.resources.read_servers import ReadServers
from pipelines.serve.jobs import Jobs, ingest_with_runner
from pipelines.serve.question_batches import QuestionBatches
from pipelines.serve.tokens import ApiToken, TokenVerifier
from pipelines.write.session.session import SessionItemRecord, remember_item

# Failures that mean "the database is not there now", not "this request is wrong": a restart, a
# failover, a full pool. The caller should retry; HTTP says 503 with Retry-After.
UNAVAILABLE = (DatabaseError, psycopg.OperationalError, PoolTimeout)
DEFAULT_PRESET = "default"
# Where POST /documents keeps each job's records (under the data directory), one JSONL file a job.
API_INBOX = "api-inbox"
# `lanegraph serve --pool-size`, handed to every worker process.
POOL_SIZE_ENV = "LANEGRAPH_SERVE_POOL_SIZE"


class CallerError(InputError):
    """The caller may not do this (HTTP 403): a write outside its scopes, an owner-only action."""


@dataclass(frozen=True)
class Readiness:
    ready: bool
    checks: dict[str, str] = field(default_factory=dict)


def with_statement_timeout(url: str, seconds: float) -> str:
    """`url` whose sessions cancel a statement running longer than `seconds`: a request that timed
    out stops costing the database too."""
    options = psycopg.conninfo.conninfo_to_dict(url).get("options") or ""
    milliseconds = max(1, int(seconds * 1000))
    return psycopg.conninfo.make_conninfo(url, options=f"{options} -c statement_timeout={milliseconds}".strip())


class Service:
    """Find and working memory for callers identified by token."""

    def __init__(
        self,
        database: Database,
        config: LanegraphConfig,
        *,
        reads: ReadServers | None = None,
        embedder: Embedder | None = None,
        presets: Mapping[str, LanegraphConfig] | None = None,
        jobs: Jobs | None = None,
    ) -> None:
        self.database = database
        self.config = config
        self.reads = reads
        self.embedder = embedder or EmbedderResource.from_settings(config.pipeline.embedding).get_embedder()
        self.questions = QuestionBatches(self.embedder, config.serve.question_batch)
        self.presets = {DEFAULT_PRESET: config, **(presets or {})}
        self.tokens = TokenVerifier(database)
        # None: this server takes no documents (POST /documents answers 501).
        self.jobs = jobs

    @classmethod
    def open(cls, config_path: Path | None = None, *, presets: Mapping[str, Path] | None = None) -> Service:
        """Migrate and open the primary (pool sized by `serve.pool_size`, statements cut at the
        request timeout), the read servers LANEGRAPH_READ_URLS names, and the embedder."""
        config = load_config(config_path)
        if os.environ.get(POOL_SIZE_ENV):
            config = config.model_copy(update={"serve": config.serve.model_copy(update={"pool_size": int(os.environ[POOL_SIZE_ENV])})})
        settings = config.serve
        with open_database(config_path) as migrated:
            url = migrated.url
        database = Database(with_statement_timeout(url, settings.request_timeout_seconds), max_size=settings.pool_size)
        loaded = {name: load_config(path) for name, path in (presets or {}).items()}
        for name, preset in loaded.items():
            if preset.pipeline.embedding != config.pipeline.embedding:
                raise InputError(f"--preset {name}: its pipeline.embedding differs from the served lanes.yaml's")
        reads = ReadServers.from_environment(database, pool_size=settings.pool_size)
        jobs = Jobs(database, data_dir() / API_INBOX, ingest_with_runner(url))
        service = cls(database, config, reads=reads, presets=loaded, jobs=jobs)
        # Load the model now, not on the first request.
        service.embedder.embed_questions(["warm up"])
        return service

    @property
    def settings(self) -> ServeSettings:
        return self.config.serve

    def close(self) -> None:
        if self.jobs is not None:
            self.jobs.close()
        if self.reads is not None:
            self.reads.close()
        self.database.close()

    def caller(self, secret: str) -> ApiToken | None:
        return self.tokens.verify(secret)

    def find(
        self, caller: ApiToken, question: str, *, k: int | None = None, budget: int | None = None,
        lanes: str | None = None,
    ) -> dict:
        """`lanegraph find --json --scopes <the caller's>` for this question; fact access is
        recorded on the primary as the caller, as the command does."""
        preset = lanes or DEFAULT_PRESET
        if preset not in self.presets:
            raise InputError(f"lanes: no preset {preset!r}; this server has {', '.join(sorted(self.presets))}")
        result = find(
            self.reads or self.database, question, k=k, budget=budget, config=self.presets[preset],
            embedder=self.questions, scopes=caller.scopes,
        )
        note = record_access_or_say(self.database, [result], scopes=caller.scopes)
        return {**result.to_json(), "lanes": preset, "note": note}

    def remember(
        self, caller: ApiToken, text: str, *, created_at: datetime | None = None, item_id: str | None = None,
        scopes: list[str] | None = None,
    ) -> dict:
        """One working-memory item, written on the primary as the caller; findable on return.
        Scopes default to the caller's own (public for an owner token)."""
        if len(text) > self.settings.max_memory_chars:
            raise InputError(f"text: {len(text)} characters; an item holds at most {self.settings.max_memory_chars}")
        chosen = scopes if scopes is not None else list(caller.scopes or ())
        try:
            record = SessionItemRecord(
                id=item_id or uuid.uuid4().hex, text=text, created_at=created_at, scopes=chosen
            )
        except pydantic.ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise InputError(f"{where}: {first['msg']}") from None
        try:
            item = remember_item(self.database, record, embedder=self.embedder, caller_scopes=caller.scopes)
        except psycopg.errors.InsufficientPrivilege as error:
            raise CallerError(f"refused by row security: {first_line_of(error)}") from None
        return {
            "id": item.id, "scopes": list(item.scopes), "created_at": item.created_at.isoformat(),
            "status": "inserted" if item.inserted else "updated",
        }

    def readiness(self) -> Readiness:
        """Whether this process should get traffic: the primary answers, its schema carries every
        migration this code expects, each read server answers within its lag limit."""
        checks: dict[str, str] = {}
        try:
            # A connection of its own, not one from the pool: while the server is down a pooled
            # request waits out the pool's timeout, and a load balancer's probe must hear at once.
            with connect(self.database.url) as connection:
                try:
                    check_standby_schema(connection, self.config.pipeline.embedding.dimension)
                    checks["migrations"] = "ok"
                except DatabaseError as error:
                    checks["migrations"] = str(error)
            checks["primary"] = "ok"
        except UNAVAILABLE as error:
            return Readiness(False, {"primary": f"unreachable: {first_line_of(error)}"})
        if self.reads is not None:
            for server in self.reads.servers:
                checks[server.name] = server.problem(self.database, self.reads.max_lag_seconds) or "ok"
        return Readiness(all(value == "ok" for value in checks.values()), checks)
