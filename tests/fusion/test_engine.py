"""Behaviour of the fusion engine against an in-memory client (the engine itself runs no SQL)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
from pipelines.fusion.engine import estimate_tokens, per_subquery_timeout

Behaviour = Callable[[str, str, int], Awaitable[Sequence[Any]]]

SAMPLE_ARGS: dict[str, object] = {
    "entity_state": EntityStateArgs(["e1"]),
    "predicate_walk": PredicateWalkArgs(["e1"], ["works_at"], 2),
    "temporal_range": TemporalRangeArgs("2024-01-01T00:00:00Z", "2024-12-31T00:00:00Z", "mergers"),
    "bm25": BM25Args("acme merger"),
    "find": FindArgs("who bought acme?", k=5),
}


@dataclass(frozen=True)
class Call:
    method: str
    args: object
    tier: str
    source: str
    limit: int


class FakeClient:
    """Serves each sub-query by its source name and records what the engine asked and when."""

    def __init__(self, behaviours: dict[str, Behaviour]) -> None:
        self.behaviours = behaviours
        self.calls: list[Call] = []
        self.cancelled: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0

    async def _serve(self, method: str, args: object, tier: str, source: str, limit: int) -> Sequence[Any]:
        self.calls.append(Call(method, args, tier, source, limit))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self.behaviours[source](tier, source, limit)
        except asyncio.CancelledError:
            self.cancelled.append(source)
            raise
        finally:
            self.in_flight -= 1

    async def entity_state(self, args, tier, source, limit):
        return await self._serve("entity_state", args, tier, source, limit)

    async def predicate_walk(self, args, tier, source, limit):
        return await self._serve("predicate_walk", args, tier, source, limit)

    async def temporal_range(self, args, tier, source, limit):
        return await self._serve("temporal_range", args, tier, source, limit)

    async def bm25(self, args, tier, source, limit):
        return await self._serve("bm25", args, tier, source, limit)

    async def find(self, args, tier, source, limit):
        return await self._serve("find", args, tier, source, limit)


def hits(*found: tuple[str, float] | tuple[str, float, str], after: Awaitable[object] | None = None) -> Behaviour:
    """A behaviour returning (entity_id, score[, snippet]) hits stamped with the sub-query's tier and source."""

    async def behaviour(tier: str, source: str, limit: int) -> list[Evidence]:
        if after is not None:
            await after
        return [Evidence(hit[0], tier, source, hit[1], *hit[2:]) for hit in found]

    return behaviour


def sleeps(seconds: float) -> Behaviour:
    async def behaviour(tier: str, source: str, limit: int) -> list[Evidence]:
        await asyncio.sleep(seconds)
        return [Evidence(f"{source}-hit", tier, source, 1.0)]

    return behaviour


def raises(error: BaseException, after: Awaitable[object] | None = None) -> Behaviour:
    async def behaviour(tier: str, source: str, limit: int) -> list[Evidence]:
        if after is not None:
            await after
        raise error

    return behaviour


def hangs() -> Behaviour:
    async def behaviour(tier: str, source: str, limit: int) -> list[Evidence]:
        await asyncio.Event().wait()
        raise AssertionError("unreachable: nothing sets the event")

    return behaviour


def query(source: str, tier: str = "0", type: str = "entity_state") -> SubQuery:
    return SubQuery(type=type, tier=tier, source=source, **{type: SAMPLE_ARGS[type]})


async def until(condition: Callable[[], bool]) -> None:
    """Yield to the loop until `condition` holds; fails instead of hanging if it never does."""
    for _ in range(10_000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never became true")


def run(client: object, queries: Sequence[object], options: FuseOptions | None = None, **kwargs) -> FuseResult:
    return asyncio.run(fuse(client, queries, options, **kwargs))


def ids(result: FuseResult) -> list[str]:
    return [evidence.entity_id for evidence in result.evidence]


def test_ranks_by_tier_then_score_descending_then_entity_id():
    client = FakeClient(
        {
            "bm25": hits(("k-high", 9.0), ("k-low", 1.0)),
            "walk": hits(("w-b", 0.5), ("w-a", 0.5), ("w-top", 0.9)),
            "vector": hits(("n-1", 0.99)),
        }
    )
    result = run(client, [query("vector", "2"), query("bm25", "1"), query("walk", "0")])
    assert ids(result) == ["w-top", "w-a", "w-b", "k-high", "k-low", "n-1"]
    assert result.degraded is False
    assert result.degraded_reason == ""


def test_every_type_dispatches_to_its_method_with_its_arguments_tier_source_and_limit():
    types = list(SAMPLE_ARGS)
    client = FakeClient({type: hits((type, 1.0)) for type in types})
    run(client, [query(type, "1", type) for type in types], FuseOptions(max_results_per_subquery=7))
    assert sorted(client.calls, key=lambda call: types.index(call.method)) == [
        Call(type, SAMPLE_ARGS[type], "1", type, 7) for type in types
    ]


def test_token_cost_is_a_quarter_of_utf8_bytes_and_at_least_one():
    assert estimate_tokens(Evidence("e", "0", "s")) == 1
    # "é" and "漢" are 2 and 3 UTF-8 bytes: 1 + 2 + 3 + 1 + 1 = 8 bytes.
    assert estimate_tokens(Evidence("e", "0", "s", snippet_text="é漢", body_ref="r")) == 2
    assert estimate_tokens(Evidence("abcd", "0", "efgh", snippet_text="ijkl", body_ref="mno")) == 3


def test_budget_keeps_the_prefix_that_fills_it_exactly():
    # Costs: "a" + 13 chars + "s" = 15 bytes -> 3 tokens; 27 bytes -> 6 tokens; 7 bytes -> 1 token.
    client = FakeClient({"s": hits(("a", 3.0, "x" * 13), ("b", 2.0, "x" * 25), ("c", 1.0, "x" * 5))})
    result = run(client, [query("s")], FuseOptions(budget_tokens=9))
    assert ids(result) == ["a", "b"]
    assert result.budget_tokens_used == 9


def test_budget_stops_at_the_first_evidence_that_does_not_fit():
    client = FakeClient({"s": hits(("a", 3.0, "x" * 13), ("b", 2.0, "x" * 25), ("c", 1.0, "x" * 5))})
    result = run(client, [query("s")], FuseOptions(budget_tokens=8))
    # "c" alone would still fit, but the result is a prefix of the ranking.
    assert ids(result) == ["a"]
    assert result.budget_tokens_used == 3
    assert result.degraded is False


def test_lower_tier_wins_dedup_whatever_the_score():
    client = FakeClient({"bm25": hits(("shared", 100.0, "keyword copy")), "walk": hits(("shared", 0.01, "graph copy"))})
    result = run(client, [query("bm25", "1"), query("walk", "0")])
    assert result.evidence == (Evidence("shared", "0", "walk", 0.01, "graph copy"),)


def test_higher_score_wins_within_a_tier_and_is_kept_whole():
    client = FakeClient(
        {
            "first": hits(("shared", 0.2, "weak copy")),
            "second": hits(("shared", 0.8, "strong copy")),
        }
    )
    result = run(client, [query("first", "1"), query("second", "1")])
    assert result.evidence == (Evidence("shared", "1", "second", 0.8, "strong copy"),)


def test_full_tie_keeps_the_earlier_subquery_even_when_it_finishes_last():
    async def scenario() -> FuseResult:
        late = asyncio.Event()
        client = FakeClient(
            {
                "early": hits(("shared", 0.5, "from early"), after=late.wait()),
                "late": hits(("shared", 0.5, "from late")),
            }
        )
        task = asyncio.create_task(fuse(client, [query("early"), query("late")]))
        await until(lambda: [call.source for call in client.calls] == ["early", "late"] and client.in_flight == 1)
        late.set()
        return await task

    result = asyncio.run(scenario())
    assert result.evidence == (Evidence("shared", "0", "early", 0.5, "from early"),)


def test_full_tie_inside_one_subquery_keeps_its_first_copy():
    client = FakeClient({"s": hits(("shared", 0.5, "first"), ("shared", 0.5, "second"))})
    assert run(client, [query("s")]).evidence == (Evidence("shared", "0", "s", 0.5, "first"),)


def test_evidence_without_entity_id_is_dropped():
    client = FakeClient({"s": hits(("", 9.0), ("kept", 1.0))})
    assert ids(run(client, [query("s")])) == ["kept"]


def test_parallelism_cap_is_never_exceeded_and_every_subquery_runs():
    sources = [f"q{index}" for index in range(20)]
    client = FakeClient({source: sleeps(0.005) for source in sources})
    result = run(client, [query(source) for source in sources], FuseOptions(max_parallelism=4))
    assert client.max_in_flight == 4
    assert sorted(call.source for call in client.calls) == sorted(sources)
    assert len(result.evidence) == 20


def test_one_failure_degrades_without_cancelling_its_siblings():
    async def scenario() -> tuple[FuseResult, FakeClient]:
        failed = asyncio.Event()

        async def fail_then_signal(tier: str, source: str, limit: int) -> list[Evidence]:
            failed.set()
            raise RuntimeError("connection reset")

        client = FakeClient({"slow": hits(("kept", 1.0), after=failed.wait()), "broken": fail_then_signal})
        result = await fuse(client, [query("slow"), query("broken", type="bm25")])
        return result, client

    result, client = asyncio.run(scenario())
    assert ids(result) == ["kept"]
    assert result.degraded is True
    assert result.degraded_reason == "bm25:broken failed: RuntimeError: connection reset"
    assert client.cancelled == []


def test_reasons_follow_input_order_not_completion_order():
    async def scenario() -> FuseResult:
        second_failed = asyncio.Event()
        client = FakeClient(
            {
                "first": raises(ValueError("bad query"), after=second_failed.wait()),
                "second": raises(KeyError("k")),
            }
        )
        task = asyncio.create_task(fuse(client, [query("first", type="bm25"), query("second", type="find")]))
        await until(lambda: len(client.calls) == 2 and client.in_flight == 1)
        second_failed.set()
        return await task

    result = asyncio.run(scenario())
    assert result.degraded_reason == "bm25:first failed: ValueError: bad query; find:second failed: KeyError: 'k'"
    assert result.evidence == ()


def test_a_subquery_past_its_timeout_degrades_with_a_timed_out_reason():
    client = FakeClient({"stuck": hangs(), "quick": hits(("kept", 1.0))})
    result = run(client, [query("stuck", type="predicate_walk"), query("quick")], timeout=0.2)
    assert result.degraded_reason == "predicate_walk:stuck failed: timed out"
    assert ids(result) == ["kept"]
    assert client.cancelled == ["stuck"]


def test_a_timeout_raised_by_the_client_also_reads_as_timed_out():
    client = FakeClient({"s": raises(TimeoutError("statement timeout"))})
    result = run(client, [query("s")])
    assert result.degraded_reason == "entity_state:s failed: timed out (TimeoutError: statement timeout)"


def test_each_subquery_gets_half_the_time_left_or_thirty_seconds_without_deadline():
    assert per_subquery_timeout(None) == 30.0
    assert per_subquery_timeout(10.0) == 5.0
    assert per_subquery_timeout(-1.0) == 0.0


def test_an_expired_deadline_degrades_every_subquery_instead_of_raising():
    client = FakeClient({"a": hits(("x", 1.0)), "b": hits(("y", 1.0))})
    result = run(client, [query("a"), query("b")], timeout=0)
    assert result.degraded_reason == (
        "entity_state:a failed: timed out before it started; entity_state:b failed: timed out before it started"
    )
    assert result.evidence == ()
    assert client.calls == []


def test_no_subqueries_is_a_degraded_empty_result_not_an_error():
    assert run(FakeClient({}), []) == FuseResult(
        evidence=(), degraded=True, degraded_reason="no sub-queries", budget_tokens_used=0
    )


def test_no_client_is_an_error():
    with pytest.raises(TypeError, match="GraphQueryClient"):
        run(None, [query("s")])


def test_options_of_the_wrong_type_are_an_error():
    with pytest.raises(TypeError, match="FuseOptions"):
        run(FakeClient({}), [query("s")], {"budget_tokens": 10})


@pytest.mark.parametrize("type", list(SAMPLE_ARGS))
def test_missing_arguments_are_a_degraded_reason_not_a_crash(type: str):
    client = FakeClient({"ok": hits(("kept", 1.0))})
    result = run(client, [SubQuery(type=type, tier="0", source="bare"), query("ok")])
    assert result.degraded_reason == f"{type}:bare failed: missing {type} arguments"
    assert ids(result) == ["kept"]
    assert [call.source for call in client.calls] == ["ok"]


@dataclass(frozen=True)
class NewerPlannerQuery:
    """A sub-query of a type this engine does not know, as a newer planner might emit."""

    type: str
    tier: str
    source: str


def test_unknown_type_is_a_degraded_reason():
    client = FakeClient({"ok": hits(("kept", 1.0))})
    result = run(client, [NewerPlannerQuery("spatial_polygon", "0", "geo"), query("ok")])
    assert result.degraded_reason == "spatial_polygon:geo failed: unknown sub-query type 'spatial_polygon'"
    assert ids(result) == ["kept"]


def test_a_client_without_the_method_for_a_type_degrades():
    class GraphOnlyClient:
        async def entity_state(self, args, tier, source, limit):
            return [Evidence("kept", tier, source, 1.0)]

    result = run(GraphOnlyClient(), [query("s"), query("shard-1", "2", "find")])
    assert result.degraded_reason == "find:shard-1 failed: client has no find method"
    assert ids(result) == ["kept"]


def test_a_client_returning_something_other_than_evidence_degrades():
    async def rows(tier: str, source: str, limit: int) -> list[tuple[str, float]]:
        return [("e1", 1.0)]

    result = run(FakeClient({"s": rows}), [query("s")])
    assert result.degraded_reason == "entity_state:s failed: client returned tuple, not Evidence"


def test_caller_cancellation_propagates_and_cancels_subqueries_in_flight():
    async def scenario() -> FakeClient:
        client = FakeClient({source: hangs() for source in ("a", "b", "c")})
        task = asyncio.create_task(
            fuse(client, [query("a"), query("b"), query("c")], FuseOptions(max_parallelism=2))
        )
        await until(lambda: client.in_flight == 2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return client

    client = asyncio.run(scenario())
    assert sorted(client.cancelled) == ["a", "b"]
    assert client.in_flight == 0
    # The queued sub-query never reached the client.
    assert [call.source for call in client.calls] == ["a", "b"]


def test_a_cancellation_raised_by_the_client_itself_only_degrades_its_subquery():
    client = FakeClient({"odd": raises(asyncio.CancelledError()), "ok": hits(("kept", 1.0))})
    result = run(client, [query("odd"), query("ok")])
    assert result.degraded_reason == "entity_state:odd failed: cancelled by the client"
    assert ids(result) == ["kept"]


@pytest.mark.parametrize("value", [0, -3])
def test_zero_or_negative_options_fall_back_to_the_defaults(value: int):
    sources = [f"q{index}" for index in range(20)]
    # 1 + 15_998 + 1 bytes = exactly 4000 tokens: fits the default budget on its own.
    behaviours = {source: sleeps(0.005) for source in sources}
    behaviours["big"] = hits(("e", 1.0, "x" * 15_998))
    client = FakeClient(behaviours)
    options = FuseOptions(max_parallelism=value, max_results_per_subquery=value, budget_tokens=value)
    result = run(client, [query("big")] + [query(source, "1") for source in sources], options)
    assert client.max_in_flight == 8
    assert {call.limit for call in client.calls} == {50}
    assert ids(result) == ["e"]
    assert result.budget_tokens_used == 4000


def test_one_token_over_the_default_budget_is_dropped():
    client = FakeClient({"big": hits(("e", 1.0, "x" * 16_002))})
    result = run(client, [query("big")])
    assert result.evidence == ()
    assert result.budget_tokens_used == 0


def test_results_beyond_the_limit_are_cut_even_if_the_client_ignores_it():
    client = FakeClient({"s": hits(*[(f"e{index}", float(index)) for index in range(10)])})
    result = run(client, [query("s")], FuseOptions(max_results_per_subquery=3))
    assert client.calls[0].limit == 3
    assert ids(result) == ["e2", "e1", "e0"]


# --- determinism: any completion order gives the same bytes ---------------------------------

evidence_specs = st.tuples(
    st.sampled_from(["a", "b", "c", "d", ""]),
    st.sampled_from([0.0, 0.5, 1.0]),
    st.sampled_from(["", "short", "a much longer snippet text"]),
)
query_specs = st.tuples(
    st.sampled_from(list(SAMPLE_ARGS)),
    st.sampled_from(["0", "1", "2"]),
    st.lists(evidence_specs, max_size=5),
    st.booleans(),
)


async def fuse_in_completion_order(specs: list[tuple], order: Sequence[int], budget: int) -> FuseResult:
    """Fuse `specs`, letting sub-query `order[0]` finish first, then `order[1]`, and so on."""
    released = [asyncio.Event() for _ in specs]
    finished = [asyncio.Event() for _ in specs]

    def behaviour(index: int, found: list[tuple], fails: bool) -> Behaviour:
        async def serve(tier: str, source: str, limit: int) -> list[Evidence]:
            await released[index].wait()
            finished[index].set()
            if fails:
                raise RuntimeError(f"failure of {source}")
            return [Evidence(entity_id, tier, source, score, snippet) for entity_id, score, snippet in found]

        return serve

    client = FakeClient(
        {f"q{index}": behaviour(index, found, fails) for index, (_, _, found, fails) in enumerate(specs)}
    )
    queries = [query(f"q{index}", tier, type) for index, (type, tier, _, _) in enumerate(specs)]
    options = FuseOptions(max_parallelism=len(specs), budget_tokens=budget)
    task = asyncio.create_task(fuse(client, queries, options))
    await until(lambda: client.in_flight == len(specs))
    for index in order:
        released[index].set()
        await finished[index].wait()
    return await task


@settings(max_examples=150, deadline=None)
@given(
    specs=st.lists(query_specs, min_size=1, max_size=6),
    budget=st.integers(min_value=1, max_value=40),
    data=st.data(),
)
def test_same_inputs_give_byte_identical_results_in_any_completion_order(specs, budget, data):
    in_input_order = asyncio.run(fuse_in_completion_order(specs, range(len(specs)), budget))
    for _ in range(3):
        order = data.draw(st.permutations(range(len(specs))))
        assert repr(asyncio.run(fuse_in_completion_order(specs, order, budget))) == repr(in_input_order)

    kept_ids = ids(in_input_order)
    assert "" not in kept_ids
    assert len(set(kept_ids)) == len(kept_ids)
    ranking = [(evidence.tier, -evidence.score, evidence.entity_id) for evidence in in_input_order.evidence]
    assert ranking == sorted(ranking)
    assert in_input_order.budget_tokens_used <= budget
    assert in_input_order.degraded == any(fails for *_, fails in specs)
