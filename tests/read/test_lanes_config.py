"""lanes.yaml's retrieval sections load strictly, and the editor schema is current."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.config import load_config
from pipelines.errors import ConfigError
from pipelines.read.json_schema import lanes_json_schema
from tests import REPOSITORY

SETTINGS = (REPOSITORY / "lanes.yaml").read_text()


def load_changed(tmp_path: Path, old: str, new: str):  # type: ignore[no-untyped-def]
    assert old in SETTINGS
    path = tmp_path / "lanes.yaml"
    path.write_text(SETTINGS.replace(old, new, 1))
    return path, load_config(path)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("  fusion_depth: 40", "  fusion_depth: forty", "settings.fusion_depth: Input should be a valid integer"),
        ("  fusion_depth: 40", "  fusion_dept: 40", "settings.fusion_dept: unknown key"),
        ("  fusion_depth: 40", "  fusion_depth: 400", "settings.fusion_depth: Input should be less than or equal to 100"),
        ("  rrf_k: 60", "  rrf_k: 60\n  k: 3", "duplicate key 'settings.k'"),
        ("  ann_search_depth: 100", "  ann_search_depth: 40", "settings.ann_search_depth: Input should be greater than or equal to 100"),
        ("  ann_search_depth: 100", "  ann_search_depth: 1001", "settings.ann_search_depth: Input should be less than or equal to 1000"),
        ("  hops: 0 ", "  hops: two ", "plan.hops: Input should be a valid integer"),
        ("      find_max_distance: 0.9", "      find_max_distanse: 0.9", "lanes.overview.settings.find_max_distanse: unknown key"),
        ("limit: k * fact_candidate_factor", "limit: k * 3", "lanes.facts.limit: limit expression 'k * 3' may only combine setting names"),
        ("limit: k * fact_candidate_factor", "limit: k * fact_factor", "lanes.facts.limit: unknown setting 'fact_factor'"),
        ("limit: raptor_k", "limit: find_max_distance", "lanes.overview.limit: setting 'find_max_distance' is not an integer"),
        ("order: [sources, facts,", "order: [sources, factz,", "plan.order.1: 'factz' is not a lane defined under `lanes`"),
        ("    kind: overview", "    kind: overviews", "lanes.overview.kind: Input should be"),
        ("    template: vector.sql", "    template: vectors.sql", "lanes.working_memory.template: template 'vectors.sql' not found"),
    ],
)
def test_a_mistake_names_file_line_and_key(tmp_path, old, new, expected):
    path = tmp_path / "lanes.yaml"
    changed = SETTINGS.replace(old, new, 1)
    path.write_text(changed)
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    message = str(raised.value)
    line = next(n for n, text in enumerate(changed.splitlines(), 1) if new.splitlines()[-1] in text)
    assert message.startswith(f"{path}:{line}: ") and expected in message


def test_overrides_are_exactly_the_keys_written(tmp_path):
    _, config = load_changed(tmp_path, "      find_max_distance: 0.9", "      find_max_distance: 0.9\n      k: 2")
    assert config.lanes["overview"].overrides == {"find_max_distance", "k"}
    assert config.lanes["facts"].overrides == frozenset()


@pytest.mark.parametrize("setting", ["ann_search_depth: 200", "budget_tokens: 100"])
def test_a_lane_cannot_override_what_applies_to_the_whole_statement(tmp_path, setting):
    path = tmp_path / "lanes.yaml"
    path.write_text(SETTINGS.replace("      find_max_distance: 0.9", f"      find_max_distance: 0.9\n      {setting}", 1))
    with pytest.raises(ConfigError, match=rf"lanes\.overview\.settings: {setting.split(':')[0]} applies to the whole find statement"):
        load_config(path)


def test_a_minimal_file_gets_the_seven_standard_lanes(tmp_path):
    path = tmp_path / "lanes.yaml"
    path.write_text("version: 1\n")
    config = load_config(path)
    assert config.plan.order == ["sources", "facts", "entity_catalog", "working_memory", "profile", "communities", "overview"]
    assert set(config.lanes) == set(config.plan.order)


def test_the_committed_json_schema_is_current():
    assert (REPOSITORY / "lanes.schema.json").read_text() == lanes_json_schema(), "regenerate: lanegraph compile --json-schema > lanes.schema.json"
    schema = json.loads((REPOSITORY / "lanes.schema.json").read_text())
    assert {"plan", "settings", "lanes", "pipeline"} <= set(schema["properties"])


def test_a_file_edited_at_once_to_the_same_size_is_read_again(tmp_path):
    path = tmp_path / "lanes.yaml"
    path.write_text(SETTINGS)
    assert load_config(path).settings.fusion_depth == 40
    path.write_text(SETTINGS.replace("  fusion_depth: 40", "  fusion_depth: 50", 1))
    assert load_config(path).settings.fusion_depth == 50


def test_the_conversations_preset_is_lanes_yaml_but_for_its_documented_choices() -> None:
    # One build serves both files, and a change to lanes.yaml that the preset missed would make
    # the two drift apart without anyone choosing it.
    pages = load_config(REPOSITORY / "lanes.yaml")
    conversations = load_config(REPOSITORY / "lanes.conversations.yaml")
    assert conversations.pipeline == pages.pipeline
    assert conversations.settings == pages.settings
    plan_changes = {name for name in type(pages.plan).model_fields if getattr(pages.plan, name) != getattr(conversations.plan, name)}
    assert plan_changes == {"bridges", "named_facts"}
    lane_changes = {name for name in pages.lanes if pages.lanes[name] != conversations.lanes[name]}
    assert lane_changes == {"sources"}
    assert conversations.lanes["sources"].limit == "fusion_depth"
