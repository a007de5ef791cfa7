"""One template serves the three vector lanes; its stand-in table is refused in a lane of another kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.config import LanegraphConfig
from pipelines.lanes_config import LANE_TEMPLATES
from pipelines.read.compiler import compile_find
from pipelines.read.templates import TemplateError
from pipelines.read.vector_lane import VECTOR_KINDS


def test_the_three_vector_lanes_compile_from_one_template(config: LanegraphConfig) -> None:
    lanes = {lane.kind: lane for lane in compile_find(config).lanes}
    assert set(VECTOR_KINDS) <= set(lanes)
    assert {lanes[kind].templates for kind in VECTOR_KINDS} == {(LANE_TEMPLATES / "vector.sql",)}


def test_the_stand_in_table_in_a_lane_of_another_kind_is_refused(config: LanegraphConfig, tmp_path: Path) -> None:
    template = tmp_path / "overview.sql"
    template.write_text((LANE_TEMPLATES / "vector.sql").read_text())
    lanes = dict(config.lanes)
    lanes["overview"] = lanes["overview"].model_copy(update={"template": str(template)})
    with pytest.raises(TemplateError, match=rf"lane overview: {template}: vector_item stands for .* kind is overview"):
        compile_find(config.model_copy(update={"lanes": lanes}), cached=False)
