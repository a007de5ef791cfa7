"""`--write`: the user's lanes.yaml with the tuned values in place, comments kept, checked before written."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.config import load_config
from pipelines.errors import ConfigError
from pipelines.tuning.lanes_file import write_tuned_lanes
from tests import REPOSITORY


def test_tuned_values_land_in_place_and_every_comment_stays(tmp_path: Path) -> None:
    source = REPOSITORY / "lanes.yaml"
    target = tmp_path / "tuned.yaml"
    config = write_tuned_lanes(
        source, target, {"dense_weight": 0.45, "bm25_b": 0.3, "graph_ppr_damping": 0.8}, {"bridges": False}
    )
    before, after = source.read_text().splitlines(), target.read_text().splitlines()
    assert len(before) == len(after)
    changed = [(old, new) for old, new in zip(before, after, strict=True) if old != new]
    assert [new.split("#")[0].strip() for _, new in changed] == [
        "bridges: false", "dense_weight: 0.45", "graph_ppr_damping: 0.8", "bm25_b: 0.3",
    ]
    # The line's own comment survives the new value.
    assert changed[0][1].endswith("# sources: follow the entities the best chunks name to pages about or naming them")
    assert (config.settings.dense_weight, config.settings.bm25_b, config.plan.bridges) == (0.45, 0.3, False)
    assert load_config(target) == config
    assert main(["check", "--offline", "--lanes", str(target)]) == 0


def test_a_setting_the_file_leaves_to_its_default_is_added_to_its_section(tmp_path: Path) -> None:
    source = tmp_path / "lanes.yaml"
    source.write_text("version: 1\n# retrieval values\nsettings:\n  k: 8  # rows\n")
    target = tmp_path / "tuned.yaml"
    write_tuned_lanes(source, target, {"rrf_k": 30}, {"hops": 1})
    text = target.read_text()
    assert "  k: 8  # rows\n  rrf_k: 30\n" in text and "# retrieval values" in text
    assert load_config(target).plan.hops == 1


def test_values_the_settings_refuse_are_never_written(tmp_path: Path) -> None:
    target = tmp_path / "tuned.yaml"
    with pytest.raises(ConfigError, match=rf"{target}:\d+: settings.bm25_b"):
        write_tuned_lanes(REPOSITORY / "lanes.yaml", target, {"bm25_b": 1.5}, {})
    assert list(tmp_path.iterdir()) == []
