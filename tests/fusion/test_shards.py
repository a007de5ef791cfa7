"""Fan-out over several databases: two shards holding halves of a corpus against one holding all."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import pytest

from pipelines.fusion import (
    EntityStateArgs,
    Evidence,
    FuseOptions,
    FuseResult,
    PredicateWalkArgs,
    SubQuery,
    TemporalRangeArgs,
    fuse,
)
from pipelines.fusion.shards import (
    ShardClient,
    describe_url,
    fuse_shards,
    parse_shard_urls,
)
from pipelines.resources.database import Database
from pipelines.resources.errors import InputError
from tests.fusion.test_postgres_client import ENTITIES as NORTH_ENTITIES
from tests.fusion.test_postgres_client import FACTS as NORTH_FACTS
from tests.fusion.test_postgres_client import plant

# A second, unconnected graph. Sharding by tenant keeps each connected graph inside one database.
SOUTH_ENTITIES = [
    ("e-orbit", "Orbit", "organization"),
    ("e-fay", "Fay", "person"),
    ("e-gus", "Gus", "person"),
]
SOUTH_FACTS = [
    ("f:fay-orbit", "e-fay", "works_at", "e-orbit", None, "Fay works at Orbit", "2020-05-01", None, False),
    ("f:gus-orbit", "e-gus", "works_at", "e-orbit", None, "Gus worked at Orbit", "2019-01-01", "2019-09-01", False),
    ("f:gus-fay", "e-gus", "knows", "e-fay", None, "Gus knows Fay", None, None, False),
    ("f:fay-lead", "e-fay", "role", None, "lead", "Fay is the team lead", "2021-01-01", None, False),
]

GRAPH_QUERIES = [
    SubQuery("entity_state", "0", "named", entity_state=EntityStateArgs(["e-alice", "e-fay", "e-gus", "e-dave"])),
    SubQuery("predicate_walk", "0", "walk", predicate_walk=PredicateWalkArgs(["e-alice", "e-fay"], max_hops=2)),
    SubQuery(
        "predicate_walk",
        "0",
        "employers",
        predicate_walk=PredicateWalkArgs(["e-bob", "e-gus"], predicates=["works_at"], max_hops=1),
    ),
    SubQuery(
        "temporal_range", "0", "early-2019", temporal_range=TemporalRangeArgs("2019-03-01T00:00:00Z", "2019-04-01T00:00:00Z")
    ),
    SubQuery(
        "temporal_range",
        "0",
        "jobs",
        temporal_range=TemporalRangeArgs("2019-01-01T00:00:00Z", "2022-01-01T00:00:00Z", topic="working"),
    ),
]
GENEROUS = FuseOptions(budget_tokens=100_000)


@pytest.fixture()
def whole_and_halves(make_schema_url: Callable[[], str]) -> tuple[str, str, str]:
    """URLs of one database with both graphs and of two shards with one graph each."""
    whole, north, south = make_schema_url(), make_schema_url(), make_schema_url()
    for url, parts in (
        (whole, [(NORTH_ENTITIES, NORTH_FACTS), (SOUTH_ENTITIES, SOUTH_FACTS)]),
        (north, [(NORTH_ENTITIES, NORTH_FACTS)]),
        (south, [(SOUTH_ENTITIES, SOUTH_FACTS)]),
    ):
        with Database(url) as database:
            for entities, facts in parts:
                plant(database, entities, facts)
    return whole, north, south


def without_shard(evidence: Sequence[Evidence]) -> list[tuple]:
    """Evidence as plain tuples, with the `@shardN` a shard client appends to the source taken off."""
    return [
        (item.entity_id, item.tier, item.source.rpartition("@")[0], item.score, item.snippet_text, item.body_ref)
        for item in evidence
    ]


def fuse_on(urls: Sequence[str], queries: Sequence[SubQuery], options: FuseOptions = GENEROUS) -> FuseResult:
    with ShardClient.from_urls(urls) as shards:
        return asyncio.run(fuse_shards(shards, queries, options))


def test_two_shards_of_separate_graphs_fuse_to_exactly_what_one_database_returns(whole_and_halves):
    whole, north, south = whole_and_halves
    one = fuse_on([whole], GRAPH_QUERIES)
    two = fuse_on([north, south], GRAPH_QUERIES)
    assert not one.degraded and not two.degraded
    # Every entity but Erin, whose only fact starts in 2031, is found by some sub-query.
    assert len(one.evidence) == len(NORTH_ENTITIES) + len(SOUTH_ENTITIES) - 1
    # Exact: every graph primitive's rows and scores depend only on the entity's own graph, and
    # each graph lives whole in one shard. Only the source differs, by the shard that found it.
    assert without_shard(two.evidence) == without_shard(one.evidence)
    assert {item.source.rpartition("@")[2] for item in two.evidence} == {"shard1", "shard2"}


@pytest.mark.parametrize("query", GRAPH_QUERIES, ids=lambda query: query.source)
def test_each_shard_cut_at_the_limit_still_gives_the_same_top_results(whole_and_halves, query):
    whole, north, south = whole_and_halves
    limit = 2
    options = FuseOptions(max_results_per_subquery=limit, budget_tokens=100_000)
    one = fuse_on([whole], [query], options)
    two = fuse_on([north, south], [query], options)
    # Each shard returns its own best `limit`; their fused best `limit` are the whole database's.
    assert without_shard(two.evidence[:limit]) == without_shard(one.evidence)


def test_an_unreachable_shard_degrades_the_result_and_keeps_the_others(whole_and_halves):
    whole, north, south = whole_and_halves
    unreachable = "host=/nonexistent-socket-dir dbname=lanegraph"
    result = fuse_on([north, unreachable, south], GRAPH_QUERIES)
    assert result.degraded
    # One reason per sub-query sent to the bad shard, in input order; each names the shard.
    reasons = result.degraded_reason.split("; ")
    assert [reason.split(" failed: ")[0] for reason in reasons] == [
        f"{query.type}:{query.source}@shard2" for query in GRAPH_QUERIES
    ]
    assert all("cannot connect to PostgreSQL" in reason for reason in reasons)
    assert without_shard(result.evidence) == without_shard(fuse_on([whole], GRAPH_QUERIES).evidence)


def test_fan_out_keeps_the_caller_order_first_and_the_shard_order_second():
    shards = ShardClient({"a": object(), "b": object()})  # type: ignore[dict-item]
    queries = [
        SubQuery("bm25", "1", "words", bm25=None),
        SubQuery("entity_state", "0", "named", entity_state=EntityStateArgs(["e-1"])),
    ]
    assert [query.source for query in shards.fan_out(queries)] == ["words@a", "words@b", "named@a", "named@b"]
    assert shards.fan_out(queries)[3].entity_state == EntityStateArgs(["e-1"])


def test_a_source_naming_no_shard_is_a_degraded_reason(database):
    shards = ShardClient({"only": object()})  # type: ignore[dict-item]
    query = SubQuery("entity_state", "0", "named@elsewhere", entity_state=EntityStateArgs(["e-1"]))
    result = asyncio.run(fuse(shards, [query]))
    assert result.degraded
    assert "names no shard" in result.degraded_reason


@pytest.mark.parametrize("name", ["", "a@b"])
def test_shard_names_must_be_usable_as_source_suffixes(name):
    with pytest.raises(ValueError, match="shard name"):
        ShardClient({name: object()})  # type: ignore[dict-item]


def test_shard_urls_are_comma_separated_and_never_empty():
    assert parse_shard_urls("postgresql://a/x, postgresql://b/y") == ["postgresql://a/x", "postgresql://b/y"]
    for text in ("", " , ", "postgresql://a/x,,postgresql://b/y"):
        with pytest.raises(InputError, match="--shards"):
            parse_shard_urls(text)


def test_a_shard_is_described_without_its_password():
    described = describe_url("postgresql://reader:secret@db.example:6543/corpus")
    assert described == "db.example:6543/corpus"
