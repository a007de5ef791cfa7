"""`lanegraph check` and `lanegraph compile` on good and broken lanes: a broken template is refused
with one line naming the lane, the file and the line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pipelines import lanes_config
from pipelines.cli import main
from pipelines.config import load_config
from pipelines.fusion.primitives import PRIMITIVES_DIR, check_primitives
from pipelines.lanes_config import LANE_TEMPLATES
from pipelines.read.templates import TemplateError
from tests import REPOSITORY

VECTOR = (LANE_TEMPLATES / "vector.sql").read_text()


def lanes_with_template(tmp_path: Path, template_text: str) -> Path:
    """lanes.yaml with the working_memory lane reading `template_text` from a file of its own."""
    template = tmp_path / "vector.sql"
    template.write_text(template_text)
    settings = (REPOSITORY / "lanes.yaml").read_text().replace(
        "template: vector.sql", f"template: {template}", 1
    )
    path = tmp_path / "lanes.yaml"
    path.write_text(settings)
    return path


def line_of(text: str, fragment: str) -> int:
    return next(number for number, line in enumerate(text.splitlines(), 1) if fragment in line)


BROKEN = {
    "a literal LIMIT": (
        ("LIMIT :lane_limit", "LIMIT 7"),
        "LIMIT 7",
        "literal 7 in LIMIT",
    ),
    "a misspelled column": (
        ("vector_item.scopes,", "vector_item.scope,"),
        "vector_item.scope,",
        "unknown column session_item.scope",
    ),
    "an unknown setting": (
        ("<= :find_max_distance", "<= :find_max_distanse"),
        ":find_max_distanse",
        "unknown setting 'find_max_distanse'",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_check_rejects_a_broken_template_naming_lane_file_and_line(tmp_path, capsys, case):
    (old, new), fragment, problem = BROKEN[case]
    assert old in VECTOR
    text = VECTOR.replace(old, new)
    lanes = lanes_with_template(tmp_path, text)
    assert main(["check", "--offline", "--lanes", str(lanes)]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1
    where = f"lane working_memory: {tmp_path / 'vector.sql'}:{line_of(text, fragment)}: "
    assert where in error and problem in error


def test_a_marked_constant_is_allowed(tmp_path, capsys):
    text = VECTOR.replace("LIMIT :lane_limit", "LIMIT 10  -- @constant: a fixed window")
    assert main(["check", "--offline", "--lanes", str(lanes_with_template(tmp_path, text))]) == 0
    assert "ok   binds only" in capsys.readouterr().out


def test_a_literal_compared_with_a_column_is_rejected(tmp_path, capsys):
    text = VECTOR.replace("candidate.distance <= :find_max_distance", "candidate.distance <= 0.5")
    assert text != VECTOR
    assert main(["check", "--offline", "--lanes", str(lanes_with_template(tmp_path, text))]) == 2
    assert "literal 0.5 compared with a column" in capsys.readouterr().err


def test_a_lane_limit_naming_an_unknown_setting_is_rejected(tmp_path, capsys):
    settings = (REPOSITORY / "lanes.yaml").read_text()
    broken = settings.replace("limit: session_find_k", "limit: session_find_kk")
    path = tmp_path / "lanes.yaml"
    path.write_text(broken)
    assert main(["check", "--offline", "--lanes", str(path)]) == 2
    error = capsys.readouterr().err
    assert f"{path}:{line_of(broken, 'session_find_kk')}: lanes.working_memory.limit: unknown setting 'session_find_kk'" in error


def test_compile_prints_one_statement_with_the_pgvector_operator(capsys):
    assert main(["compile"]) == 0
    sql = capsys.readouterr().out
    assert "<=>" in sql and "MATERIALIZED" in sql and "UNION ALL" in sql
    assert "IS NOT DISTINCT FROM" not in sql


def test_compile_is_byte_identical_for_settings_that_differ_only_in_values(tmp_path, capsys):
    settings = (REPOSITORY / "lanes.yaml").read_text()
    changed = tmp_path / "lanes.yaml"
    changed.write_text(
        settings.replace("  k: 8", "  k: 5").replace("  rrf_k: 60", "  rrf_k: 10")
        .replace("find_max_distance: 0.9", "find_max_distance: 0.6")
    )
    assert main(["compile"]) == 0
    original = capsys.readouterr().out
    assert main(["compile", "--lanes", str(changed)]) == 0
    assert capsys.readouterr().out == original


def test_check_refuses_a_literal_limit_in_a_fusion_primitive(tmp_path: Path):
    assert len(check_primitives()) == len(list(PRIMITIVES_DIR.glob("*.sql")))
    copy = tmp_path / "primitives"
    shutil.copytree(PRIMITIVES_DIR, copy)
    broken = copy / "entity_state.sql"
    broken.write_text(broken.read_text().replace("LIMIT CAST(:entity_state_limit AS bigint)", "LIMIT 10"))
    with pytest.raises(TemplateError, match=r"entity_state\.sql:27: .*literal 10 in LIMIT"):
        check_primitives(copy)


def test_check_offline_reports_the_primitives(capsys):
    assert main(["check", "--offline"]) == 0
    assert "fusion primitives: 4 templates compile" in capsys.readouterr().out


def test_check_compiles_the_lanes_the_plan_leaves_off(capsys):
    assert main(["check", "--offline"]) == 0
    out = capsys.readouterr().out
    left_off = next(line for line in out.splitlines() if line.startswith("templates this plan leaves off"))
    for template in ("overview.sql", "entity_catalog.sql", "facts/walk_hop.sql"):
        assert template in left_off


def test_check_fails_on_a_literal_limit_in_a_lane_the_shipped_plan_leaves_off(tmp_path, monkeypatch, capsys):
    shipped = load_config(REPOSITORY / "lanes.yaml")
    assert not shipped.plan.raptor
    copy = tmp_path / "lanes"
    shutil.copytree(LANE_TEMPLATES, copy)
    overview = copy / "overview.sql"
    text = overview.read_text()
    assert "LIMIT :lane_limit" in text
    overview.write_text(text.replace("LIMIT :lane_limit", "LIMIT 10"))
    # The shipped settings file, unchanged, reading its templates from the broken copy.
    monkeypatch.setattr(lanes_config, "LANE_TEMPLATES", copy)
    assert main(["check", "--offline", "--lanes", str(REPOSITORY / "lanes.yaml")]) == 2
    error = capsys.readouterr().err
    assert f"lane overview: {overview}:{line_of(text, 'LIMIT :lane_limit')}: " in error
    assert "literal 10 in LIMIT" in error and "maximal plan" in error
