"""Validation and immutability of the fusion engine's values, and the names other tools import."""

from __future__ import annotations

import dataclasses

import pytest

import pipelines.fusion
from pipelines.fusion import (
    BM25Args,
    EntityStateArgs,
    Evidence,
    FindArgs,
    FuseOptions,
    PredicateWalkArgs,
    SubQuery,
    TemporalRangeArgs,
)


def test_package_exports_the_documented_names():
    assert set(pipelines.fusion.__all__) == {
        "fuse",
        "FuseOptions",
        "FuseResult",
        "SubQuery",
        "Evidence",
        "EntityStateArgs",
        "PredicateWalkArgs",
        "TemporalRangeArgs",
        "BM25Args",
        "FindArgs",
        "GraphQueryClient",
    }


def test_evidence_defaults_and_immutability():
    evidence = Evidence("e1", "1", "bm25")
    assert (evidence.score, evidence.snippet_text, evidence.body_ref) == (0.0, "", "")
    with pytest.raises(dataclasses.FrozenInstanceError):
        evidence.score = 2.0


def test_integer_scores_are_stored_as_floats_so_equal_inputs_print_equally():
    assert repr(Evidence("e1", "0", "s", 1)) == repr(Evidence("e1", "0", "s", 1.0))


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda: Evidence("e1", "3", "s"), ValueError, r"Evidence.tier must be one of '0', '1', '2', got '3'"),
        (lambda: Evidence("e1", 0, "s"), ValueError, r"Evidence.tier"),
        (lambda: Evidence(7, "0", "s"), TypeError, r"Evidence.entity_id must be a str, got int"),
        (lambda: Evidence("e1", "0", None), TypeError, r"Evidence.source must be a str"),
        (lambda: Evidence("e1", "0", "s", "high"), TypeError, r"Evidence.score must be a number"),
        (lambda: Evidence("e1", "0", "s", float("nan")), ValueError, r"Evidence.score must not be NaN"),
        (lambda: SubQuery("vector", "0", "s"), ValueError, r"SubQuery.type must be one of"),
        (lambda: SubQuery("bm25", "9", "s"), ValueError, r"SubQuery.tier"),
        (lambda: SubQuery("bm25", "1", 5), TypeError, r"SubQuery.source must be a str"),
        (
            lambda: SubQuery("bm25", "1", "s", bm25=EntityStateArgs(["e"])),
            TypeError,
            r"SubQuery.bm25 must be BM25Args or None, got EntityStateArgs",
        ),
        (lambda: EntityStateArgs("e1"), TypeError, r"EntityStateArgs.entity_ids must be a sequence of str"),
        (lambda: EntityStateArgs(["e1", 2]), TypeError, r"EntityStateArgs.entity_ids\[1\] must be a str"),
        (lambda: PredicateWalkArgs(["e1"], max_hops=-1), ValueError, r"max_hops must be >= 0"),
        (lambda: PredicateWalkArgs(["e1"], max_hops=True), TypeError, r"max_hops must be an int"),
        (lambda: TemporalRangeArgs("yesterday", "2024-01-01"), ValueError, r"TemporalRangeArgs.start must be an ISO 8601"),
        (lambda: BM25Args(None), TypeError, r"BM25Args.query must be a str"),
        (lambda: FindArgs("q", k=0), ValueError, r"FindArgs.k must be >= 1"),
        (lambda: FuseOptions(budget_tokens=1.5), TypeError, r"FuseOptions.budget_tokens must be an int"),
    ],
)
def test_bad_values_raise_one_line_errors_naming_the_field(build, error, message):
    with pytest.raises(error, match=message):
        build()


def test_a_subquery_without_its_arguments_is_constructible():
    bare = SubQuery(type="predicate_walk", tier="0", source="walk")
    assert bare.predicate_walk is None


def test_sequences_are_frozen_into_tuples():
    walk = PredicateWalkArgs(["a", "b"], ["knows"])
    assert walk.seeds == ("a", "b")
    assert walk.predicates == ("knows",)
    assert EntityStateArgs(iter(["x"])).entity_ids == ("x",)


def test_zero_hops_walks_one_hop():
    assert PredicateWalkArgs(["a"]).hops == 1
    assert PredicateWalkArgs(["a"], max_hops=3).hops == 3


def test_negative_options_are_allowed_because_they_select_the_defaults():
    assert FuseOptions(-1, -1, -1).max_parallelism == -1
