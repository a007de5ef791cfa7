"""The fusion engine's client over one PostgreSQL database: each primitive is one SQL statement.

Statements come from sql_templates/primitives/ and are compiled once per process; every per-call
value is a bind. Evidence ids are entity ids for graph primitives and chunk ids for BM25, the keys
the find statement's rows use, so evidence from several databases fuses on the same key.

psycopg work runs in a worker thread. When the awaiting task is cancelled (the engine's per
sub-query timeout, or the caller), the server is asked to cancel the statement, so the worker ends
promptly, its transaction rolls back and the connection goes back to the pool in a usable state;
`statement_timeout` bounds a statement nobody cancels.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.numeric import Int8

from pipelines.fusion.models import (
    BM25Args,
    EntityStateArgs,
    Evidence,
    PredicateWalkArgs,
    TemporalRangeArgs,
)
from pipelines.fusion.primitives import primitive_statement
from pipelines.read.lanes_config import Settings
from pipelines.resources.database import Database

DEFAULT_STATEMENT_TIMEOUT_SECONDS = 30.0
CANCEL_REQUEST_TIMEOUT_SECONDS = 5.0
# Stemming for the temporal_range topic; a bind, so another language needs no new statement.
DEFAULT_TEXT_SEARCH_CONFIG = "english"

Row = Mapping[str, Any]


class _StatementRun:
    """One statement on a pooled connection in a worker thread, cancellable from the event loop.

    The lock orders the worker's hand-over of the connection against `cancel`, so a cancel request
    can only reach the statement it was meant for, never a later user of the same connection.
    """

    def __init__(self, database: Database, statement: str, params: Mapping[str, object], timeout_ms: int):
        self._database = database
        self._statement = statement
        self._params = params
        self._timeout_ms = timeout_ms
        self._lock = threading.Lock()
        self._connection = None
        self._cancelled = False

    def rows(self) -> list[Row]:
        with self._database.connection() as connection:
            with self._lock:
                if self._cancelled:
                    # Waiting for a pooled connection can outlast the caller; then run nothing.
                    return []
                self._connection = connection
            try:
                with connection.cursor(row_factory=dict_row) as cursor:
                    cursor.execute(
                        "SELECT set_config('statement_timeout', %s, true)", (f"{self._timeout_ms}ms",)
                    )
                    cursor.execute(self._statement, self._params)
                    return cursor.fetchall()
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


async def run_statement(
    database: Database,
    statement: str,
    params: Mapping[str, object],
    *,
    timeout_seconds: float = DEFAULT_STATEMENT_TIMEOUT_SECONDS,
) -> list[Row]:
    """Rows of one statement, run off the event loop; cancelling the caller cancels the statement."""
    run = _StatementRun(database, statement, params, max(1, int(timeout_seconds * 1000)))
    worker = asyncio.ensure_future(asyncio.to_thread(run.rows))
    # After a cancel nobody awaits the worker; its QueryCanceled must not be logged as unretrieved.
    worker.add_done_callback(lambda done: done.cancelled() or done.exception())
    try:
        return await asyncio.shield(worker)
    except asyncio.CancelledError:
        run.cancel()
        raise


def _bigint(value: int) -> Int8:
    # psycopg sends a Python int as int2, int4 or int8 by its value, which would split one prepared
    # statement into several; every integer bind is sent as bigint.
    return Int8(value)


def _snippet(text: str, chars: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= chars else flat[: chars - 1].rstrip() + "…"


def entity_state_evidence(rows: Sequence[Row], tier: str, source: str) -> list[Evidence]:
    """One evidence per entity: its live statements, or its name when it has none right now.

    The entities were named by the caller, so each is as relevant as the others: score 1.
    """
    return [
        Evidence(
            entity_id=row["entity_id"],
            tier=tier,
            source=source,
            score=1.0,
            snippet_text=row["statements"] or row["entity_name"],
        )
        for row in rows
    ]


def predicate_walk_evidence(rows: Sequence[Row], tier: str, source: str) -> list[Evidence]:
    """Reached entities scored 1 / (1 + hops): nearer is better, and below a named entity's 1."""
    return [
        Evidence(
            entity_id=row["entity_id"],
            tier=tier,
            source=source,
            score=1.0 / (1 + row["hops"]),
            snippet_text=row["via_statement"] or row["entity_name"],
        )
        for row in rows
    ]


def temporal_range_evidence(rows: Sequence[Row], tier: str, source: str) -> list[Evidence]:
    """Entities scored m / (m + 1) for m matching facts: more evidence in the window ranks higher."""
    return [
        Evidence(
            entity_id=row["entity_id"],
            tier=tier,
            source=source,
            score=row["fact_count"] / (row["fact_count"] + 1),
            snippet_text=row["statements"],
        )
        for row in rows
    ]


def bm25_evidence(rows: Sequence[Row], tier: str, source: str, snippet_chars: int) -> list[Evidence]:
    """Chunks with their Okapi BM25 score; the body is the chunk's document."""
    return [
        Evidence(
            entity_id=row["chunk_id"],
            tier=tier,
            source=source,
            score=row["score"],
            snippet_text=_snippet(row["text"], snippet_chars),
            body_ref=row["document_id"],
        )
        for row in rows
    ]


class PostgresQueryClient:
    """A GraphQueryClient over one database; every returned evidence carries the given tier and source."""

    def __init__(
        self,
        database: Database,
        *,
        settings: Settings | None = None,
        statement_timeout_seconds: float = DEFAULT_STATEMENT_TIMEOUT_SECONDS,
        text_search_config: str = DEFAULT_TEXT_SEARCH_CONFIG,
    ) -> None:
        self.database = database
        self.settings = settings or Settings()
        self.statement_timeout_seconds = statement_timeout_seconds
        self.text_search_config = text_search_config

    async def _rows(self, primitive: str, params: Mapping[str, object]) -> list[Row]:
        return await run_statement(
            self.database,
            primitive_statement(primitive),
            params,
            timeout_seconds=self.statement_timeout_seconds,
        )

    async def entity_state(self, args: EntityStateArgs, tier: str, source: str, limit: int) -> list[Evidence]:
        rows = await self._rows(
            "entity_state", {"entity_ids": list(args.entity_ids), "entity_state_limit": _bigint(limit)}
        )
        return entity_state_evidence(rows, tier, source)

    async def predicate_walk(
        self, args: PredicateWalkArgs, tier: str, source: str, limit: int
    ) -> list[Evidence]:
        rows = await self._rows(
            "predicate_walk",
            {
                "seeds": list(args.seeds),
                "predicates": list(args.predicates),
                "max_hops": _bigint(args.hops),
                "predicate_walk_limit": _bigint(limit),
            },
        )
        return predicate_walk_evidence(rows, tier, source)

    async def temporal_range(
        self, args: TemporalRangeArgs, tier: str, source: str, limit: int
    ) -> list[Evidence]:
        rows = await self._rows(
            "temporal_range",
            {
                "window_start": args.start,
                "window_end": args.end,
                "topic": args.topic,
                "text_search_config": self.text_search_config,
                "temporal_range_limit": _bigint(limit),
            },
        )
        return temporal_range_evidence(rows, tier, source)

    async def bm25(self, args: BM25Args, tier: str, source: str, limit: int) -> list[Evidence]:
        rows = await self._rows(
            "bm25",
            {
                "query_text": args.query,
                "bm25_k1": self.settings.bm25_k1,
                "bm25_b": self.settings.bm25_b,
                "bm25_limit": _bigint(limit),
            },
        )
        return bm25_evidence(rows, tier, source, self.settings.snippet_chars)
