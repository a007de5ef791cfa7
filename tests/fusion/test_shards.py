"""Fan-out over several databases: two shards holding halves of a corpus against one holding all."""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from collections.abc import Callable, Sequence

import psycopg
import pytest

from pipelines.fusion import (
    BM25Args,
    EntityStateArgs,
    Evidence,
    FindArgs,
    FuseOptions,
    FuseResult,
    PredicateWalkArgs,
    SubQuery,
    TemporalRangeArgs,
    fuse,
)
from pipelines.cli import main
from pipelines.fusion.shards import (
    ShardClient,
    describe_url,
    fuse_shards,
    parse_shard_urls,
)
from pipelines.resources.database import Database
from pipelines.errors import InputError
from tests.fusion.test_postgres_client import CORPUS, QUESTIONS, plant, plant_corpus
from tests.fusion.test_postgres_client import ENTITIES as NORTH_ENTITIES
from tests.fusion.test_postgres_client import FACTS as NORTH_FACTS

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


@pytest.fixture(scope="module")
def corpus_whole_and_halves(make_schema_url: Callable[[], str]) -> tuple[str, str, str]:
    """One database holding the whole corpus, and two holding alternate documents of it."""
    whole, first, second = make_schema_url(), make_schema_url(), make_schema_url()
    for url, documents in ((whole, CORPUS), (first, CORPUS[0::2]), (second, CORPUS[1::2])):
        with Database(url) as database:
            plant_corpus(database, documents)
    return whole, first, second


def ids_of(evidence: Sequence[Evidence]) -> list[str]:
    return [item.entity_id for item in evidence]


@pytest.mark.parametrize("question", QUESTIONS)
def test_find_on_two_halves_returns_the_top_results_of_the_whole(corpus_whole_and_halves, question):
    whole, first, second = corpus_whole_and_halves
    queries = [SubQuery("find", "2", "find", find=FindArgs(question, k=4))]
    one = fuse_on([whole], queries)
    two = fuse_on([first, second], queries)
    assert not two.degraded and one.evidence
    # Tolerance: the same evidence, not always the same order. A find row carries no score that
    # compares across databases (the statement keeps its `ordering` inside), so each shard's rows
    # are scored by lane priority and position in the lane: the halves' lanes interleave, position
    # by position, with entity id breaking a tie. Dense distances agree across shards, but the
    # sources lane fuses per-database ranks, and BM25 statistics are per database.
    top = len(one.evidence)
    assert set(ids_of(two.evidence[:top])) == set(ids_of(one.evidence))
    assert len(two.evidence) == top


@pytest.mark.parametrize("question", QUESTIONS)
def test_bm25_on_two_halves_finds_what_the_whole_finds_with_per_database_scores(corpus_whole_and_halves, question):
    whole, first, second = corpus_whole_and_halves
    queries = [SubQuery("bm25", "1", "words", bm25=BM25Args(question))]
    one = fuse_on([whole], queries)
    two = fuse_on([first, second], queries)
    # Every chunk holding a query term is found either way, and here the best one is clear enough
    # to stay first. Scores differ: idf uses each database's chunk count and document
    # frequencies, and length normalisation its own average length, so near-ties may swap.
    assert set(ids_of(two.evidence)) == set(ids_of(one.evidence))
    assert ids_of(two.evidence)[0] == ids_of(one.evidence)[0]
    assert two.evidence[0].score != pytest.approx(one.evidence[0].score)


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


def as_uri(conninfo: str) -> str:
    """A key=value connection string as a postgresql:// URI: its options hold a comma, which
    --shards would read as a separator, and a URI percent-encodes it."""
    parts = psycopg.conninfo.conninfo_to_dict(conninfo)
    query = urllib.parse.urlencode({"host": parts["host"], "options": parts["options"]}, quote_via=urllib.parse.quote)
    return f"postgresql://{parts['user']}@/{parts['dbname']}?{query}"


def test_lanegraph_find_with_shards_prints_the_fused_evidence(corpus_whole_and_halves, capsys):
    _, first, second = corpus_whole_and_halves
    unreachable = "postgresql://nobody@/lanegraph?host=/nonexistent-socket-dir"
    shards = ",".join([as_uri(first), as_uri(second), unreachable])
    status = main(["find", "What does fault code HX-4417 mean?", "--k", "4", "--shards", shards, "--json"])
    printed = json.loads(capsys.readouterr().out)
    assert status == 0
    assert printed["evidence"][0]["entity_id"] == "chunk:heron-faults#0"
    assert printed["evidence"][0]["source"] == "find@shard2"
    assert printed["degraded"] and printed["degraded_reason"].startswith("find:find@shard3 failed: ")
    assert set(printed["shards"]) == {"shard1", "shard2", "shard3"}

    assert main(["find", "What does fault code HX-4417 mean?", "--shards", shards]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0].startswith("shard2   Heron fault log: Fault code HX-4417")
    assert "-- degraded: find:find@shard3 failed: " in text


def test_lanegraph_find_fails_when_no_shard_answers(capsys):
    unreachable = "postgresql://nobody@/lanegraph?host=/nonexistent-socket-dir"
    assert main(["find", "anything", "--shards", unreachable]) == 1
    assert "-- degraded: find:find@shard1 failed: DatabaseError: cannot connect" in capsys.readouterr().out
