"""The fusion primitives over several databases (shards), each reached by its own DATABASE_URL.

Every sub-query is fanned out once per shard, its source suffixed `@<shard>` (`find@shard2`), and
the engine fuses the lot. So each shard's failure is its own degraded reason ("find:find@shard2
failed: ...") while the other shards' evidence is kept, and every evidence names the shard that
found it. Ids are the same in every database (entity, chunk and document ids derive from the
source), so a chunk or entity present in several shards dedups to one evidence.

A shard opens its database on first use, inside the sub-query, so an unreachable URL degrades the
result instead of failing before any shard is asked.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial

import psycopg

from pipelines.fusion.engine import fuse
from pipelines.fusion.models import (
    BM25Args,
    EntityStateArgs,
    Evidence,
    FindArgs,
    FuseOptions,
    FuseResult,
    GraphQueryClient,
    PredicateWalkArgs,
    SubQuery,
    TemporalRangeArgs,
    Tier,
)
from pipelines.fusion.postgres_client import PostgresQueryClient
from pipelines.config import LanegraphConfig, load_config
from pipelines.resources.database import Database, connect
from pipelines.resources.embedder import QuestionEmbedder
from pipelines.errors import InputError

SHARD_SEPARATOR = "@"


def shard_source(source: str, shard: str) -> str:
    return f"{source}{SHARD_SEPARATOR}{shard}"


def describe_url(url: str) -> str:
    """host:port/dbname of a connection string, without its password, for messages and listings."""
    try:
        target = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "(not a valid PostgreSQL connection string)"
    options = f" ({target['options']})" if target.get("options") else ""
    return f"{target.get('host') or 'localhost'}:{target.get('port') or 5432}/{target.get('dbname', '')}{options}"


def parse_shard_urls(text: str) -> list[str]:
    """The URLs of `--shards URL1,URL2,...`; URLs in key=value form may not contain commas."""
    urls = [url.strip() for url in text.split(",")]
    if not any(urls):
        raise InputError("--shards: give at least one database URL, e.g. --shards postgresql://a/db,postgresql://b/db")
    if not all(urls):
        raise InputError(f"--shards: empty URL in {text!r}; separate URLs with single commas")
    return urls


class PostgresShard:
    """One shard's PostgresQueryClient, opened on first use; a failure to open is kept and re-raised
    for every later sub-query, so one unreachable server is waited for once, not once per sub-query."""

    def __init__(
        self, url: str, make_client: Callable[[Database], PostgresQueryClient] = PostgresQueryClient
    ) -> None:
        self.url = url
        self._make_client = make_client
        # A thread lock, not an asyncio one: opening runs in a worker thread, and the shard may
        # serve several event loops in turn (one per asyncio.run).
        self._lock = threading.Lock()
        self._client: PostgresQueryClient | None = None
        self._failure: Exception | None = None

    def _open(self) -> PostgresQueryClient:
        with self._lock:
            if self._failure is not None:
                raise self._failure
            if self._client is None:
                try:
                    # One plain connection first: it fails at once on a refused or malformed URL,
                    # where opening the pool would retry until its own timeout.
                    connect(self.url).close()
                    self._client = self._make_client(Database(self.url))
                except Exception as error:
                    self._failure = error
                    raise
            return self._client

    async def client(self) -> PostgresQueryClient:
        if self._client is not None:
            return self._client
        return await asyncio.to_thread(self._open)

    def close(self) -> None:
        if self._client is not None:
            self._client.database.close()


class ShardClient:
    """A GraphQueryClient that serves each `<source>@<shard>` sub-query from that shard's client.

    Build the sub-queries with `fan_out`, or call `fuse_shards`, which does both.
    """

    def __init__(self, shards: Mapping[str, GraphQueryClient | PostgresShard]) -> None:
        if not shards:
            raise ValueError("ShardClient needs at least one shard")
        for name in shards:
            if not name or SHARD_SEPARATOR in name:
                raise ValueError(f"shard name {name!r} must be non-empty and free of {SHARD_SEPARATOR!r}")
        self.shards = dict(shards)

    @classmethod
    def from_urls(
        cls,
        urls: Sequence[str],
        *,
        config: LanegraphConfig | None = None,
        embedder: QuestionEmbedder | None = None,
        scopes: Sequence[str] | None = None,
    ) -> ShardClient:
        """Shards `shard1`, `shard2`, ... in the order given, each opened on first use; every
        shard answers with the same configuration, embedder and caller scopes."""
        make_client = partial(PostgresQueryClient, config=config or load_config(), embedder=embedder, scopes=scopes)
        return cls({f"shard{position}": PostgresShard(url, make_client) for position, url in enumerate(urls, 1)})

    def fan_out(self, queries: Sequence[SubQuery]) -> tuple[SubQuery, ...]:
        """Every query once per shard, query-major, so input order (the engine's tie-break) stays
        the caller's order first and the shard order second."""
        return tuple(
            replace(query, source=shard_source(query.source, name)) for query in queries for name in self.shards
        )

    async def _client_for(self, source: str) -> GraphQueryClient:
        _, separator, name = source.rpartition(SHARD_SEPARATOR)
        shard = self.shards.get(name) if separator else None
        if shard is None:
            raise LookupError(f"source {source!r} names no shard; expected <source>@<one of {', '.join(self.shards)}>")
        return await shard.client() if isinstance(shard, PostgresShard) else shard

    async def entity_state(self, args: EntityStateArgs, tier: Tier, source: str, limit: int) -> list[Evidence]:
        return await (await self._client_for(source)).entity_state(args, tier, source, limit)

    async def predicate_walk(
        self, args: PredicateWalkArgs, tier: Tier, source: str, limit: int
    ) -> list[Evidence]:
        return await (await self._client_for(source)).predicate_walk(args, tier, source, limit)

    async def temporal_range(
        self, args: TemporalRangeArgs, tier: Tier, source: str, limit: int
    ) -> list[Evidence]:
        return await (await self._client_for(source)).temporal_range(args, tier, source, limit)

    async def bm25(self, args: BM25Args, tier: Tier, source: str, limit: int) -> list[Evidence]:
        return await (await self._client_for(source)).bm25(args, tier, source, limit)

    async def find(self, args: FindArgs, tier: Tier, source: str, limit: int) -> list[Evidence]:
        return await (await self._client_for(source)).find(args, tier, source, limit)

    def close(self) -> None:
        """Close the databases this client opened; clients passed in stay the caller's to close."""
        for shard in self.shards.values():
            if isinstance(shard, PostgresShard):
                shard.close()

    def __enter__(self) -> ShardClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


async def fuse_shards(
    shards: ShardClient,
    queries: Sequence[SubQuery],
    options: FuseOptions | None = None,
    *,
    timeout: float | None = None,
) -> FuseResult:
    """`fuse` of every query on every shard: one ranking, one budget, a degraded reason per failed shard."""
    return await fuse(shards, shards.fan_out(queries), options, timeout=timeout)


# The find statement is led by its dense rankings: the neural tier.
FIND_TIER: Tier = "2"
FIND_SOURCE = "find"
# The statement's lane limits already bound its rows; a lower cap would cut the lowest-priority
# lanes of every shard.
FIND_ROWS_PER_SHARD = 10_000


async def find_on_shards(
    shards: ShardClient, question: str, *, k: int, budget_tokens: int, timeout: float | None = None
) -> FuseResult:
    """The find statement on every shard, fused into one ranking within `budget_tokens`."""
    query = SubQuery("find", FIND_TIER, FIND_SOURCE, find=FindArgs(question, k=k))
    options = FuseOptions(max_results_per_subquery=FIND_ROWS_PER_SHARD, budget_tokens=budget_tokens)
    return await fuse_shards(shards, [query], options, timeout=timeout)
