"""The compiled find statement: one UNION ALL in a MATERIALIZED CTE, typed positional binds, a text
that depends on the shape only, compiled once per shape."""

from __future__ import annotations

import re

import pytest

from pipelines.config import LanegraphConfig
from pipelines.read.cacheability import changed_values
from pipelines.read.compiler import RESULT_COLUMNS, compile_find, compile_template
from pipelines.read.lane_parts import PRIMITIVES
from pipelines.lanes_config import Plan
from pipelines.read.templates import TemplateError


def with_plan(config: LanegraphConfig, **plan) -> LanegraphConfig:  # type: ignore[no-untyped-def]
    return config.model_copy(update={"plan": config.plan.model_copy(update=plan)})


def test_the_statement_has_the_promised_form(config):
    sql = compile_find(config).sql
    assert "<=>" in sql and "IS NOT DISTINCT FROM" not in sql
    assert "ordered_context AS MATERIALIZED (" in sql
    assert sql.count("UNION ALL") >= len(config.plan.order) - 1
    outer = sql[sql.rindex(")") + 1 :]
    assert re.sub(r"\s+", " ", outer).strip() == (
        f"SELECT {', '.join(RESULT_COLUMNS)} FROM ordered_context ORDER BY priority, ordering, evidence_id"
    )
    assert not re.search(r":[a-z_]+\b", sql.replace("::", "")), "a named bind survived"


def test_every_bind_is_positional_with_an_explicit_type(config):
    statement = compile_find(config)
    positions = {int(p) for p in re.findall(r"\$(\d+)", statement.sql)}
    assert positions == {bind.position for bind in statement.binds} == set(range(1, len(statement.binds) + 1))
    for bind in statement.binds:
        uses = re.findall(rf"\$({bind.position})(?!\d)", statement.sql)
        typed = re.findall(rf"CAST\(\${bind.position} AS [A-Z][A-Z ()0-9\[\]]*\)", statement.sql)
        assert len(uses) == len(typed), f"${bind.position} ({bind.name}) appears without its type"
    types = {bind.name: bind.sql_type for bind in statement.binds}
    assert types["query_vector"] == "vector(384)"
    assert types["k"] == "bigint" and types["find_max_distance"] == "double precision"
    assert types["question_terms"] == "text[]" and types["question"] == "text"
    # A lane that overrides a setting binds its own value under its own name.
    assert types["overview.find_max_distance"] == "double precision"


def test_values_never_change_the_text(config):
    changed = changed_values(config)
    assert changed.settings != config.settings
    assert changed.lanes["overview"].settings != config.lanes["overview"].settings
    assert compile_find(changed, cached=False).sql == compile_find(config, cached=False).sql


def test_the_shape_changes_the_text_and_each_shape_is_compiled_once(config):
    two_hops = compile_find(with_plan(config, hops=2))
    three_hops = compile_find(with_plan(config, hops=3))
    assert "facts_walk_hop_3" in three_hops.sql and "facts_walk_hop_3" not in two_hops.sql
    assert "facts_walk_hop" not in compile_find(with_plan(config, hops=0)).sql
    assert "facts_neighbors" not in compile_find(with_plan(config, neighbors=False)).sql
    assert "SIMILARITY(" not in compile_find(with_plan(config, fuzzy_mentions=False)).sql
    assert "sources_bridge" not in compile_find(with_plan(config, bridges=False)).sql
    no_summaries = compile_find(with_plan(config, profiles=False, communities=False, raptor=False))
    assert [lane.name for lane in no_summaries.lanes] == ["sources", "facts", "entity_catalog", "working_memory"]
    assert compile_find(with_plan(config, hops=3)) is three_hops


@pytest.mark.parametrize("field", [name for name, field in Plan.model_fields.items() if field.annotation is bool])
def test_every_plan_toggle_is_part_of_the_cached_shape(config, field):
    flipped = with_plan(config, **{field: not getattr(config.plan, field)})
    assert compile_find(flipped).sql == compile_find(flipped, cached=False).sql != compile_find(config).sql


def test_priorities_follow_the_plan_order(config):
    order = ["sources", "facts", "overview", "entity_catalog", "working_memory", "profile", "communities"]
    statement = compile_find(with_plan(config, order=order))
    assert [(lane.name, lane.priority) for lane in statement.lanes] == [(name, i) for i, name in enumerate(order)]


def test_every_dense_ranking_is_known_for_the_index_check(config):
    statement = compile_find(config)
    assert statement.dense_tables == ("chunk", "community", "entity", "entity_kind", "fact", "profile", "session_item")
    assert statement.lexical_tables == ("bm25_posting",)


def test_a_primitive_compiles_through_the_same_compiler():
    statement = compile_template(PRIMITIVES / "bm25.sql", bind_types={"bm25_limit": "bigint"})
    assert {b.name: b.sql_type for b in statement.binds} == {
        "query_text": "text", "bm25_k1": "double precision", "bm25_b": "double precision", "bm25_limit": "bigint",
    }
    assert "CAST(CAST(" not in statement.sql


def test_a_primitive_bind_without_a_type_is_refused(tmp_path):
    template = tmp_path / "untyped.sql"
    template.write_text("SELECT entity.id FROM entity WHERE entity.name = :who\n")
    with pytest.raises(TemplateError, match=r"untyped.sql: bind :who has no type"):
        compile_template(template)



def test_coalesced_columns_compile_as_case_so_row_security_can_probe_an_index_with_them(tmp_path):
    # PostgreSQL counts COALESCE as possibly leaky and CASE as not: under row security only the
    # CASE form of a join key (the bridge's merged chunk id, a fact's document) reaches a primary key.
    template = tmp_path / "keys.sql"
    template.write_text(
        "SELECT coalesce(chunk.document_id, chunk.id) AS key, coalesce(lower(chunk.text), '') AS text FROM chunk"
    )
    sql = re.sub(r"\s+", " ", compile_template(template).sql)
    assert "CASE WHEN NOT chunk.document_id IS NULL THEN chunk.document_id ELSE chunk.id END AS key" in sql
    # An argument that is itself computed stays in COALESCE, which evaluates it once.
    assert "COALESCE(LOWER(chunk.text), '') AS text" in sql


def test_the_cached_shape_holds_every_part_toggle_of_the_plan() -> None:
    # A toggle missing from the shape would be served the statement of another plan from the cache.
    from dataclasses import fields

    from pipelines.lanes_config import KIND_TOGGLES, LANE_TOGGLES, Plan
    from pipelines.read.compiler import Shape

    toggles = set(Plan.model_fields) - {"order"} - set(KIND_TOGGLES.values()) - set(LANE_TOGGLES.values())
    assert toggles <= {field.name for field in fields(Shape)}
