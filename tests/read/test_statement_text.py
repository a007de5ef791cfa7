"""The compiled find statement, text for text, for the shipped plan and for every lane on.

The recorded statements in `statements/` (text files, so no tool reads them as code) pin what a refactor of the templates or the compiler must
leave unchanged. A change meant to alter the statement regenerates them, and its diff shows the
new SQL: `python -m tests.read.test_statement_text`."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.config import LanegraphConfig, load_config
from pipelines.read.compiler import compile_find
from tests import REPOSITORY
from tests.plans import every_lane_on

STATEMENTS = Path(__file__).parent / "statements"


def plans() -> dict[str, LanegraphConfig]:
    shipped = load_config(REPOSITORY / "lanes.yaml")
    return {"shipped_plan": shipped, "every_lane_on": every_lane_on(shipped)}


@pytest.mark.parametrize("plan", ["shipped_plan", "every_lane_on"])
def test_the_statement_is_the_recorded_one(plan: str) -> None:
    recorded = (STATEMENTS / f"{plan}.txt").read_text(encoding="utf-8")
    compiled = compile_find(plans()[plan], cached=False).sql + "\n"
    assert compiled == recorded, (
        f"the {plan} statement differs from statements/{plan}.txt; if that is meant, regenerate it "
        "with `python -m tests.read.test_statement_text` and review the diff"
    )


if __name__ == "__main__":
    for name, config in plans().items():
        (STATEMENTS / f"{name}.txt").write_text(compile_find(config, cached=False).sql + "\n", encoding="utf-8")
