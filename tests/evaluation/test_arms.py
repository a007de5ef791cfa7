"""Which arms an evaluation runs, and that each is the plan it claims to be."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipelines.config import load_config
from tests import REPOSITORY
from pipelines.evaluation.arms import choose_arms, ranking_statement
from pipelines.evaluation.answers import answer_found, scorable_answers
from pipelines.evaluation.demo_dataset import demo_dataset
from pipelines.evaluation.dataset import parse_dataset
from pipelines.errors import InputError
from tests.plans import every_lane_on

LANES = REPOSITORY / "lanes.yaml"


def test_standard_arms_then_one_ablation_per_lane_and_facts_part() -> None:
    config = every_lane_on(load_config(LANES))
    arms = {arm.name: arm for arm in choose_arms(config, None, [])}
    lanes = [name for name in config.plan.order if config.plan.includes(name, config.lanes[name].kind)]
    assert list(arms)[:5] == ["bm25", "dense", "ppr", "sources", "find"]
    assert arms["sources"].config.plan.order == ["sources"]
    assert arms["find"].config == config
    for lane in lanes:
        assert arms[f"find-minus-{lane}"].config.plan.order == [name for name in lanes if name != lane]
    assert arms["find-minus-walk"].config.plan.hops == 0
    assert arms["find-minus-neighbors"].config.plan.neighbors is False
    assert arms["find-minus-fuzzy_mentions"].config.plan.fuzzy_mentions is False
    assert arms["find-minus-bridges"].config.plan.bridges is False
    assert arms["bm25"].ranking == "bm25" and arms["dense"].ranking == "dense"


def test_selected_arms_keep_their_order_and_unknown_ones_are_refused() -> None:
    config = load_config(LANES)
    assert [arm.name for arm in choose_arms(config, ["find", "dense"], [])] == ["find", "dense"]
    with pytest.raises(InputError, match=r"^unknown arm 'bm52'; arms are: bm25, dense, ppr, sources, find, "):
        choose_arms(config, ["bm52"], [])


def test_a_lanes_file_is_an_arm_named_after_it_but_may_not_change_the_build(tmp_path: Path) -> None:
    config = load_config(LANES)
    text = LANES.read_text()
    deeper = tmp_path / "deeper.yaml"
    deeper.write_text(re.sub(r"(?m)^  fusion_depth: \d+$", "  fusion_depth: 80", text))
    (arm,) = [arm for arm in choose_arms(config, ["find"], [deeper]) if arm.name == "deeper"]
    assert arm.config.settings.fusion_depth == 80
    rechunked = tmp_path / "rechunked.yaml"
    rechunked.write_text(re.sub(r"(?m)^    max_tokens: \d+$", "    max_tokens: 120", text))
    with pytest.raises(InputError, match=r"rechunked.yaml: its pipeline section differs"):
        choose_arms(config, ["find"], [rechunked])
    with pytest.raises(InputError, match=r"arm name 'find' \(the file name\) is already taken"):
        (tmp_path / "find.yaml").write_text(text)
        choose_arms(config, ["find"], [tmp_path / "find.yaml"])


@pytest.mark.parametrize(("ranking", "key"), [("bm25", "score"), ("dense", "rank")])
def test_baselines_compile_the_sources_lane_own_rankings(ranking: str, key: str) -> None:
    config = load_config(LANES)
    statement = ranking_statement(config, ranking)
    rows = [("c2", 1.0), ("c1", 1.0), ("c3", 3.0)] if key == "score" else [("c2", 2), ("c1", 3), ("c3", 1)]
    width = max(statement.chunk_column, statement.key_column) + 1

    def placed(chunk_id: str, key: float) -> tuple:
        row: list[object] = [None] * width
        row[statement.chunk_column], row[statement.key_column] = chunk_id, key
        return tuple(row)

    ordered = statement.chunk_ids([placed(*row) for row in rows])
    assert ordered == (["c3", "c1", "c2"] if key == "score" else ["c3", "c2", "c1"])
    values = statement.values(config, "Who built it?", [0.0] * config.pipeline.embedding.dimension)
    assert {bind.name for bind in statement.statement.binds} <= set(values)


def test_demo_dataset_is_a_valid_benchmark_over_the_demo_documents() -> None:
    dataset = parse_dataset(demo_dataset(), Path("demo"))
    assert len(dataset.passages) >= 10
    assert len(dataset.questions_in("dev")) >= 5
    assert all(question.gold_ids for question in dataset.questions)
    # Every answer phrase is written in one of its question's gold documents, as whole words.
    texts = {passage.id: f"{passage.title} {passage.text}" for passage in dataset.passages}
    answered = [question for question in dataset.questions if scorable_answers(question)]
    assert len(answered) >= 5
    for question in answered:
        gold_text = " ".join(texts[gold] for gold in question.gold_ids)
        assert answer_found(scorable_answers(question), gold_text), question.text
