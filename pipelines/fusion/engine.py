"""Deterministic fusion: fan typed sub-queries out to a client, then dedup, rank and fit a budget.

Results are gathered per sub-query and merged in input order once every sub-query has finished,
so the output never depends on which sub-query completed first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from itertools import islice

from pipelines.fusion.models import (
    SUBQUERY_TYPES,
    Evidence,
    FuseOptions,
    FuseResult,
    GraphQueryClient,
    SubQuery,
)

DEFAULT_MAX_PARALLELISM = 8
DEFAULT_MAX_RESULTS_PER_SUBQUERY = 50
DEFAULT_BUDGET_TOKENS = 4000
# Half of the time left leaves the other half for queued sub-queries, ranking and the caller.
SUBQUERY_TIMEOUT_FRACTION = 0.5
DEFAULT_SUBQUERY_TIMEOUT_SECONDS = 30.0
NO_SUBQUERIES_REASON = "no sub-queries"


class _SubQueryFailed(Exception):
    """A sub-query could not produce evidence; its message becomes a degraded reason."""


def per_subquery_timeout(time_left: float | None) -> float:
    """Seconds one sub-query may run, given the seconds left before the caller's deadline."""
    if time_left is None:
        return DEFAULT_SUBQUERY_TIMEOUT_SECONDS
    return max(0.0, time_left) * SUBQUERY_TIMEOUT_FRACTION


def estimate_tokens(evidence: Evidence) -> int:
    """Rough prompt cost of one evidence: four UTF-8 bytes per token, at least one."""
    text = evidence.entity_id + evidence.snippet_text + evidence.source + evidence.body_ref
    return max(1, len(text.encode("utf-8")) // 4)


def _describe(error: BaseException) -> str:
    message = str(error)
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def _option_or_default(value: int, default: int) -> int:
    return value if value > 0 else default


async def _execute(
    client: GraphQueryClient, query: SubQuery, limit: int, seconds: float
) -> tuple[Evidence, ...]:
    # Queries are read by attribute so that a type a newer planner emits degrades instead of crashing.
    if query.type not in SUBQUERY_TYPES:
        raise _SubQueryFailed(f"unknown sub-query type {query.type!r}")
    args = getattr(query, query.type)
    if args is None:
        raise _SubQueryFailed(f"missing {query.type} arguments")
    method = getattr(client, query.type, None)
    if method is None:
        raise _SubQueryFailed(f"client has no {query.type} method")
    if seconds <= 0:
        # Starting a statement only to cancel it at once would load the database for nothing.
        raise _SubQueryFailed("timed out before it started")
    window = asyncio.timeout(seconds)
    try:
        async with window:
            found = await method(args, query.tier, query.source, limit)
    except TimeoutError as error:
        if window.expired():
            raise _SubQueryFailed("timed out") from None
        raise _SubQueryFailed(f"timed out ({_describe(error)})") from None
    # The client is asked for `limit` rows; a client that ignores it must not flood the ranking.
    kept = tuple(islice(found, limit))
    for item in kept:
        if not isinstance(item, Evidence):
            raise _SubQueryFailed(f"client returned {type(item).__name__}, not Evidence")
    return kept


async def _run_bounded(
    client: GraphQueryClient,
    query: SubQuery,
    limit: int,
    deadline: float | None,
    slots: asyncio.Semaphore,
) -> tuple[Evidence, ...] | str:
    """Evidence of one sub-query, or the message explaining why it failed."""
    async with slots:
        loop = asyncio.get_running_loop()
        seconds = per_subquery_timeout(None if deadline is None else deadline - loop.time())
        try:
            return await _execute(client, query, limit, seconds)
        except _SubQueryFailed as failure:
            return str(failure)
        except asyncio.CancelledError:
            # Our own cancellation (the caller's) must propagate; one the client raised on its own
            # is just another failure of this sub-query.
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise
            return "cancelled by the client"
        except Exception as error:
            return _describe(error)


def _deduplicate(batches: Iterable[Sequence[Evidence]]) -> list[Evidence]:
    """One evidence per entity_id: lower tier, then higher score; ties keep the earliest copy."""
    best: dict[str, Evidence] = {}
    for batch in batches:
        for evidence in batch:
            if not evidence.entity_id:
                continue
            current = best.get(evidence.entity_id)
            # Tiers are the single digits "0" < "1" < "2", so string order is tier order.
            if (
                current is None
                or evidence.tier < current.tier
                or (evidence.tier == current.tier and evidence.score > current.score)
            ):
                best[evidence.entity_id] = evidence
    return list(best.values())


def _rank(evidence: Iterable[Evidence]) -> list[Evidence]:
    return sorted(evidence, key=lambda item: (item.tier, -item.score, item.entity_id))


def _fit_budget(ranked: Sequence[Evidence], budget_tokens: int) -> tuple[tuple[Evidence, ...], int]:
    """The longest prefix of `ranked` whose estimated tokens fit, and the tokens it uses.

    A prefix, unlike find's `pack` (which skips an item that does not fit and keeps going): the
    fused evidence is one ranking across sub-queries and shards, and a prefix keeps it one, so a
    caller never holds an item while a better-ranked one was dropped for its size."""
    used = 0
    kept: list[Evidence] = []
    for evidence in ranked:
        cost = estimate_tokens(evidence)
        if used + cost > budget_tokens:
            break
        kept.append(evidence)
        used += cost
    return tuple(kept), used


async def fuse(
    client: GraphQueryClient,
    queries: Sequence[SubQuery],
    options: FuseOptions | None = None,
    *,
    timeout: float | None = None,
) -> FuseResult:
    """Run `queries` on `client` in parallel and return deduplicated, ranked, budget-fitted evidence.

    `timeout` is the caller's deadline in seconds from now (None = no deadline). A failing
    sub-query degrades the result; only the caller's cancellation escapes, and it cancels the
    sub-queries in flight.
    """
    if client is None:
        raise TypeError("fuse needs a GraphQueryClient, got None")
    if options is None:
        options = FuseOptions()
    elif not isinstance(options, FuseOptions):
        raise TypeError(f"fuse options must be FuseOptions, got {type(options).__name__}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))):
        raise TypeError(f"fuse timeout must be a number of seconds or None, got {type(timeout).__name__}")
    queries = tuple(queries)
    if not queries:
        return FuseResult(evidence=(), degraded=True, degraded_reason=NO_SUBQUERIES_REASON, budget_tokens_used=0)

    parallelism = _option_or_default(options.max_parallelism, DEFAULT_MAX_PARALLELISM)
    limit = _option_or_default(options.max_results_per_subquery, DEFAULT_MAX_RESULTS_PER_SUBQUERY)
    budget = _option_or_default(options.budget_tokens, DEFAULT_BUDGET_TOKENS)
    deadline = None if timeout is None else asyncio.get_running_loop().time() + timeout
    slots = asyncio.Semaphore(parallelism)

    async with asyncio.TaskGroup() as group:
        tasks = [
            group.create_task(_run_bounded(client, query, limit, deadline, slots)) for query in queries
        ]
    outcomes = [task.result() for task in tasks]

    reasons = [
        f"{query.type}:{query.source} failed: {outcome}"
        for query, outcome in zip(queries, outcomes)
        if isinstance(outcome, str)
    ]
    batches = [outcome for outcome in outcomes if not isinstance(outcome, str)]
    kept, used = _fit_budget(_rank(_deduplicate(batches)), budget)
    return FuseResult(
        evidence=kept, degraded=bool(reasons), degraded_reason="; ".join(reasons), budget_tokens_used=used
    )
