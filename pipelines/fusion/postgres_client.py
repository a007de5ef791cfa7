"""The fusion engine's client over one PostgreSQL database: each primitive is one SQL statement.

Statements come from sql_templates/primitives/ (and the find statement from lanes.yaml), compiled
by the find statement's compiler; every per-call value is a bind. Evidence ids follow the find
statement's `<kind>:<id>` convention: `entity:<entity id>` for the graph primitives, `chunk:<chunk
id>` for BM25 (the sources lane's own ids, so a BM25 hit and a find row on one chunk dedup), and the
row's evidence_id for find. Ids derive from the source, so they agree across databases and
evidence from several shards fuses on the same key.

psycopg work runs in a worker thread. When the awaiting task is cancelled (the engine's per
sub-query timeout, or the caller), the server is asked to cancel the statement, so the worker ends
promptly, its transaction rolls back and the connection goes back to the pool in a usable state;
`statement_timeout` bounds a statement nobody cancels.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Generic, TypeVar, cast

import psycopg

from pipelines.fusion.models import (
    BM25Args,
    EntityStateArgs,
    Evidence,
    FindArgs,
    PredicateWalkArgs,
    TemporalRangeArgs,
    Tier,
)
from pipelines.fusion.primitives import primitive_statement
from pipelines.config import LanegraphConfig, load_config
from pipelines.read.execute import run_statement
from pipelines.read.find import FindResult, find
from pipelines.resources.database import Database
from pipelines.resources.read_servers import ReadServers
from pipelines.resources.embedder import QuestionEmbedder

DEFAULT_STATEMENT_TIMEOUT_SECONDS = 30.0
CANCEL_REQUEST_TIMEOUT_SECONDS = 5.0
# Stemming for the temporal_range topic; a bind, so another language needs no new statement.
DEFAULT_TEXT_SEARCH_CONFIG = "english"

ENTITY_EVIDENCE = "entity:"
CHUNK_EVIDENCE = "chunk:"

Row = Mapping[str, Any]
T = TypeVar("T")


class _CancellableWork(Generic[T]):
    """Work on one pooled connection in a worker thread, cancellable from the event loop.

    The lock orders the worker's hand-over of the connection against `cancel`, so a cancel request
    can only reach the statement it was meant for, never a later user of the same connection.
    """

    def __init__(
        self,
        work: Callable[[psycopg.Connection], T],
        scopes: Sequence[str] | None,
        timeout_ms: int,
    ) -> None:
        self._work = work
        self._scopes = scopes
        self._timeout_ms = timeout_ms
        self._lock = threading.Lock()
        self._connection: psycopg.Connection | None = None
        self._cancelled = False

    def run(self, database: Database) -> T | None:
        with database.connection(self._scopes) as connection:
            with self._lock:
                if self._cancelled:
                    # Waiting for a pooled connection can outlast the caller; then run nothing.
                    return None
                self._connection = connection
            try:
                connection.execute("SELECT set_config('statement_timeout', %s, true)", (f"{self._timeout_ms}ms",))
                return self._work(connection)
            finally:
                with self._lock:
                    self._connection = None

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            if self._connection is None:
                return
            try:
                self._connection.cancel_safe(timeout=CANCEL_REQUEST_TIMEOUT_SECONDS)
            except psycopg.Error:
                # The cancellation itself must still propagate; statement_timeout ends the statement.
                pass


async def run_cancellable(
    database: Database | ReadServers,
    work: Callable[[psycopg.Connection], T],
    *,
    scopes: Sequence[str] | None = None,
    timeout_seconds: float = DEFAULT_STATEMENT_TIMEOUT_SECONDS,
) -> T:
    """`work(connection)` in a worker thread, in one transaction (confined to `scopes` when given)
    whose statements end after `timeout_seconds`; cancelling the caller cancels the statement.
    Given `ReadServers`, it runs on the next read server in turn, or on the primary when none can."""
    job = _CancellableWork(work, scopes, max(1, int(timeout_seconds * 1000)))

    def run_on_a_server() -> T | None:
        if isinstance(database, ReadServers):
            return database.run(job.run)[0]
        return job.run(database)

    worker = asyncio.ensure_future(asyncio.to_thread(run_on_a_server))
    # After a cancel nobody awaits the worker; its QueryCanceled must not be logged as unretrieved.
    worker.add_done_callback(lambda done: done.cancelled() or done.exception())
    try:
        # None comes back only from a cancelled job, and cancelling raises below instead.
        return cast(T, await asyncio.shield(worker))
    except asyncio.CancelledError:
        job.cancel()
        raise


def _snippet(text: str, chars: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= chars else flat[: chars - 1].rstrip() + "…"


def entity_state_evidence(rows: Sequence[Row], tier: Tier, source: str) -> list[Evidence]:
    """One evidence per entity: its live statements, or its name when it has none right now.

    The entities were named by the caller, so each is as relevant as the others: score 1.
    """
    return [
        Evidence(
            entity_id=ENTITY_EVIDENCE + row["entity_id"],
            tier=tier,
            source=source,
            score=1.0,
            snippet_text=row["statements"] or row["entity_name"],
        )
        for row in rows
    ]


def predicate_walk_evidence(rows: Sequence[Row], tier: Tier, source: str) -> list[Evidence]:
    """Reached entities scored 1 / (1 + hops): nearer is better, and below a named entity's 1."""
    return [
        Evidence(
            entity_id=ENTITY_EVIDENCE + row["entity_id"],
            tier=tier,
            source=source,
            score=1.0 / (1 + row["hops"]),
            snippet_text=row["via_statement"] or row["entity_name"],
        )
        for row in rows
    ]


def temporal_range_evidence(rows: Sequence[Row], tier: Tier, source: str) -> list[Evidence]:
    """Entities scored m / (m + 1) for m matching facts: more evidence in the window ranks higher."""
    return [
        Evidence(
            entity_id=ENTITY_EVIDENCE + row["entity_id"],
            tier=tier,
            source=source,
            score=row["fact_count"] / (row["fact_count"] + 1),
            snippet_text=row["statements"],
        )
        for row in rows
    ]


def bm25_evidence(rows: Sequence[Row], tier: Tier, source: str, snippet_chars: int) -> list[Evidence]:
    """Chunks with their Okapi BM25 score; the body is the chunk's document."""
    return [
        Evidence(
            entity_id=CHUNK_EVIDENCE + row["chunk_id"],
            tier=tier,
            source=source,
            score=row["score"],
            snippet_text=_snippet(row["text"], snippet_chars),
            body_ref=row["document_id"],
        )
        for row in rows
    ]


def find_score(priority: int, position: int) -> float:
    """A find row's score: its lane's priority first, then its position in the lane, as one float
    (higher is better). Lanes line up across databases even where a lane is shorter in one."""
    return -(priority + position / (position + 1))


def find_evidence(result: FindResult, lane_order: Sequence[str], tier: Tier, source: str) -> list[Evidence]:
    """The statement's rows in order, less the source excerpts a settled fact already covers.

    The budget is left to the engine, so every other candidate is offered, not find's own packing.
    """
    covered = {candidate.rank for candidate in result.covered}
    positions: Counter[str] = Counter()
    evidence = []
    for candidate in result.candidates:
        if candidate.rank in covered:
            continue
        position = positions[candidate.lane]
        positions[candidate.lane] += 1
        evidence.append(
            Evidence(
                entity_id=candidate.evidence_id,
                tier=tier,
                source=source,
                score=find_score(lane_order.index(candidate.lane), position),
                snippet_text=candidate.line,
                body_ref=candidate.document_id or "",
            )
        )
    return evidence


class _HeldConnection:
    """Lends find() the connection `run_cancellable` holds, so the find statement runs in the
    client's transaction: confined to its scopes, under its timeout, and cancellable."""

    def __init__(self, connection: psycopg.Connection) -> None:
        self._connection = connection

    @contextmanager
    def connection(self, *_: object, **__: object) -> Iterator[psycopg.Connection]:
        yield self._connection


class PostgresQueryClient:
    """A GraphQueryClient over one database (or a primary and its read servers, spreading the
    sub-queries over them); every returned evidence carries the given tier and source."""

    def __init__(
        self,
        database: Database | ReadServers,
        *,
        config: LanegraphConfig | None = None,
        embedder: QuestionEmbedder | None = None,
        scopes: Sequence[str] | None = None,
        statement_timeout_seconds: float = DEFAULT_STATEMENT_TIMEOUT_SECONDS,
        text_search_config: str = DEFAULT_TEXT_SEARCH_CONFIG,
    ) -> None:
        self.database = database
        self.config = config or load_config()
        self.embedder = embedder
        self.scopes = None if scopes is None else tuple(scopes)
        self.statement_timeout_seconds = statement_timeout_seconds
        self.text_search_config = text_search_config

    async def _rows(self, primitive: str, values: Mapping[str, object]) -> list[Row]:
        compiled = primitive_statement(primitive)
        rows = await run_cancellable(
            self.database,
            lambda connection: run_statement(connection, compiled.statement, values),
            scopes=self.scopes,
            timeout_seconds=self.statement_timeout_seconds,
        )
        return [compiled.row(row) for row in rows]

    async def entity_state(self, args: EntityStateArgs, tier: Tier, source: str, limit: int) -> list[Evidence]:
        rows = await self._rows(
            "entity_state", {"entity_ids": list(args.entity_ids), "entity_state_limit": limit}
        )
        return entity_state_evidence(rows, tier, source)

    async def predicate_walk(
        self, args: PredicateWalkArgs, tier: Tier, source: str, limit: int
    ) -> list[Evidence]:
        rows = await self._rows(
            "predicate_walk",
            {
                "seeds": list(args.seeds),
                "predicates": list(args.predicates),
                "max_hops": args.hops,
                "predicate_walk_limit": limit,
            },
        )
        return predicate_walk_evidence(rows, tier, source)

    async def temporal_range(
        self, args: TemporalRangeArgs, tier: Tier, source: str, limit: int
    ) -> list[Evidence]:
        rows = await self._rows(
            "temporal_range",
            {
                "window_start": args.start,
                "window_end": args.end,
                "topic": args.topic,
                "text_search_config": self.text_search_config,
                "temporal_range_limit": limit,
            },
        )
        return temporal_range_evidence(rows, tier, source)

    async def bm25(self, args: BM25Args, tier: Tier, source: str, limit: int) -> list[Evidence]:
        rows = await self._rows(
            "bm25",
            {
                "query_text": args.query,
                "bm25_k1": self.config.settings.bm25_k1,
                "bm25_b": self.config.settings.bm25_b,
                "bm25_limit": limit,
            },
        )
        return bm25_evidence(rows, tier, source, self.config.settings.snippet_chars)

    async def find(self, args: FindArgs, tier: Tier, source: str, limit: int) -> list[Evidence]:
        def run_find(connection: psycopg.Connection) -> FindResult:
            # Access is not recorded here: which facts reach the caller is decided after fusion.
            return find(
                _HeldConnection(connection),  # type: ignore[arg-type]
                args.question,
                k=args.k,
                config=self.config,
                embedder=self.embedder,
            )

        result = await run_cancellable(
            self.database, run_find, scopes=self.scopes, timeout_seconds=self.statement_timeout_seconds
        )
        return find_evidence(result, self.config.plan.order, tier, source)[:limit]
