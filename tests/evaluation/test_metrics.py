"""Passage-level scoring: evidence maps to passages as find rows do, and the numbers match hand-computed ones."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pipelines.evaluation.dataset import Question
from pipelines.evaluation.metrics import latency_percentiles, metric_names, paired_p_value, per_question_scores
from pipelines.evaluation.passages import passage_ranking
from pipelines.evaluation.report import ArmOutcome, build_report

CHUNK_DOCUMENTS = {"p-a#0": "p-a", "p-a#1": "p-a", "p-b#0": "p-b", "p-x#0": "p-x"}


def test_chunks_and_facts_count_for_their_passage_and_summaries_for_none() -> None:
    evidence = [
        (None, "p-x#0"),  # a source chunk of a distractor
        (None, None),  # a community summary: not a passage
        (None, "p-b#0"),  # a chunk of gold passage b
        ("p-a", "p-a#1"),  # a fact carrying its document
        (None, "p-a#0"),  # another chunk of a, already ranked
        ("p-b", None),  # a fact of b, already ranked
    ]
    assert passage_ranking(evidence, CHUNK_DOCUMENTS) == ["p-x", "p-b", "p-a"]


def test_metrics_match_hand_computed_values_on_a_toy_ranking() -> None:
    questions = [
        Question(id="q1", text="?", gold_ids=("p-a", "p-b")),
        Question(id="q2", text="?", gold_ids=("p-c",)),
    ]
    rankings = {"q1": ["p-x", "p-b", "p-a"], "q2": ["p-x", "p-y"]}
    scores = per_question_scores(questions, rankings, metric_names([1, 2, 5]))
    assert scores["recall@1"].tolist() == [0.0, 0.0]
    assert scores["recall@2"].tolist() == [0.5, 0.0]
    assert scores["recall@5"].tolist() == [1.0, 0.0]
    assert scores["mrr"].tolist() == [0.5, 0.0]
    ideal = 1 + 1 / math.log2(3)
    assert scores["ndcg@10"][0] == pytest.approx((1 / math.log2(3) + 1 / math.log2(4)) / ideal)
    assert scores["ndcg@10"][1] == 0.0


def test_a_question_without_any_ranking_scores_zero() -> None:
    questions = [Question(id="q1", text="?", gold_ids=("p-a",)), Question(id="q2", text="?", gold_ids=("p-b",))]
    assert per_question_scores(questions, {"q2": ["p-b"]}, ["recall@2"])["recall@2"].tolist() == [0.0, 1.0]
    assert per_question_scores(questions, {}, ["mrr"])["mrr"].tolist() == [0.0, 0.0]


def test_paired_test_separates_a_consistent_gain_from_noise() -> None:
    baseline = np.array([0.0, 0.5, 0.5, 0.0, 1.0, 0.5, 0.0, 0.5])
    assert paired_p_value(baseline, baseline) == 1.0
    # Every one of 8 questions gains: only the all-gain and all-loss sign patterns are as extreme.
    assert paired_p_value(baseline, baseline + 0.5) == pytest.approx(2 / 2**8)
    noisy = baseline + np.array([0.5, -0.5, 0.5, -0.5, 0.0, 0.0, 0.5, -0.5])
    assert paired_p_value(baseline, noisy) > 0.5


def test_latency_percentiles() -> None:
    assert latency_percentiles([1.0, 2.0, 3.0, 4.0, 100.0]) == {"p50_ms": 3.0, "p95_ms": 80.8}


def test_report_compares_every_arm_with_dense_only() -> None:
    questions = [Question(id=f"q{i}", text="?", gold_ids=(f"p{i}", f"p{i + 1}")) for i in range(8)]
    dense = ArmOutcome("dense", {f"q{i}": [f"p{i}", "x"] for i in range(8)}, [1.0, 3.0])
    find = ArmOutcome("find", {f"q{i}": ["x", f"p{i}", f"p{i + 1}"] for i in range(8)}, [2.0, 4.0])
    report = build_report("toy", "dev", questions, [dense, find], [2, 5, 10])
    assert report["arms"]["dense"]["recall@5"] == 0.5
    assert report["arms"]["find"]["recall@2"] == 0.5
    assert report["arms"]["find"]["recall@5"] == 1.0
    assert report["arms"]["find"]["p50_ms"] == 3.0
    gain = report["significance"]["arms"]["find"]["recall@5"]
    assert gain["difference"] == 0.5
    assert gain["p_value"] == pytest.approx(2 / 2**8, abs=1e-4)
    assert "dense" not in report["significance"]["arms"]
