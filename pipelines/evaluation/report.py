"""The evaluation report: per-arm metrics, latency and the paired test against dense-only.

`build_report` returns the JSON document other tools read; `text_table` and `markdown_table` render
that same document, so what is printed can never disagree with what is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pipelines.evaluation.answers import ANSWER_METRIC, answer_scores, scored_questions
from pipelines.evaluation.dataset import Question
from pipelines.evaluation.metrics import (
    PERMUTATIONS,
    latency_percentiles,
    metric_names,
    paired_p_value,
    per_question_scores,
)

BASELINE_ARM = "dense"
SIGNIFICANCE_LEVEL = 0.05
DIGITS = 4


@dataclass(frozen=True)
class ArmOutcome:
    """What one arm returned: each question's passage ranking (best first), each call's latency, and
    each question's prompt (the evidence packed into the token budget, as text)."""

    name: str
    rankings: Mapping[str, Sequence[str]]
    latencies_ms: Sequence[float]
    prompts: Mapping[str, str] = field(default_factory=dict)


def build_report(
    dataset: str, split: str, questions: Sequence[Question], outcomes: Sequence[ArmOutcome], cutoffs: Sequence[int]
) -> dict[str, object]:
    metrics = metric_names(cutoffs)
    scores = {outcome.name: per_question_scores(questions, outcome.rankings, metrics) for outcome in outcomes}
    if scored_questions(questions):
        metrics.append(ANSWER_METRIC)
        for outcome in outcomes:
            scores[outcome.name][ANSWER_METRIC] = answer_scores(questions, outcome.prompts)
    arms = {
        outcome.name: {
            **{metric: round(float(scores[outcome.name][metric].mean()), DIGITS) for metric in metrics},
            **latency_percentiles(outcome.latencies_ms),
        }
        for outcome in outcomes
    }
    report: dict[str, object] = {"dataset": dataset, "split": split, "queries": len(questions), "arms": arms}
    categories = _category_figures(questions, scores, metrics)
    if categories:
        report["categories"] = categories
    if ANSWER_METRIC in metrics:
        report["answer_questions"] = len(scored_questions(questions))
    if BASELINE_ARM in scores:
        baseline = scores[BASELINE_ARM]
        report["significance"] = {
            "baseline": BASELINE_ARM,
            "test": f"paired randomization test over questions, two-sided, {PERMUTATIONS} resamples",
            "arms": {
                name: {
                    metric: {
                        "difference": round(float((arm_scores[metric] - baseline[metric]).mean()), DIGITS),
                        "p_value": round(paired_p_value(baseline[metric], arm_scores[metric]), DIGITS),
                    }
                    for metric in metrics
                }
                for name, arm_scores in scores.items()
                if name != BASELINE_ARM
            },
        }
    return report


def _category_figures(
    questions: Sequence[Question], scores: Mapping[str, Mapping[str, object]], metrics: Sequence[str]
) -> dict[str, object]:
    """Each arm's means over the questions of each `meta.category`, when the questions carry one
    (LoCoMo's single-hop, multi-hop, temporal, open-domain)."""
    categories = sorted({question.category for question in questions if question.category is not None})
    answered = scored_questions(questions)
    figures: dict[str, object] = {}
    for category in categories:
        # Answer coverage is scored over the questions with a scorable answer only.
        members = {
            metric: np.array([question.category == category for question in (answered if metric == ANSWER_METRIC else questions)], dtype=bool)
            for metric in metrics
        }
        figures[category] = {
            "queries": int(members[metrics[0]].sum()),
            "arms": {
                arm: {
                    metric: round(float(np.asarray(arm_scores[metric])[members[metric]].mean()), DIGITS)
                    if members[metric].any() else None
                    for metric in metrics
                }
                for arm, arm_scores in scores.items()
            },
        }
    return figures


def _headline_metric(metrics: Sequence[str]) -> str:
    """The metric the difference column shows: Recall@5 when measured (the benchmark's headline)."""
    return "recall@5" if "recall@5" in metrics else metrics[0]


def _label(metric: str) -> str:
    return {"mrr": "MRR", ANSWER_METRIC: "Ans@budget"}.get(
        metric, metric.replace("recall", "R").replace("ndcg", "nDCG")
    )


def _difference_cell(report: Mapping[str, object], arm: str, metric: str) -> str:
    significance = report.get("significance")
    if not isinstance(significance, Mapping) or arm not in significance["arms"]:
        return "—" if arm == BASELINE_ARM else ""
    test = significance["arms"][arm][metric]
    marker = "*" if test["p_value"] < SIGNIFICANCE_LEVEL else ""
    return f"{test['difference'] * 100:+.1f} (p={test['p_value']:.3f}){marker}"


def report_rows(report: Mapping[str, object]) -> tuple[list[str], list[list[str]]]:
    arms: Mapping[str, Mapping[str, float]] = report["arms"]  # type: ignore[assignment]
    metrics = [key for key in next(iter(arms.values())) if not key.endswith("_ms")] if arms else []
    headline = _headline_metric(metrics) if metrics else ""
    header = ["arm", *(_label(m) for m in metrics), "p50 ms", "p95 ms", f"Δ{_label(headline)} vs {BASELINE_ARM}"]
    rows = [
        [
            name,
            *(f"{values[m]:.3f}" for m in metrics),
            f"{values['p50_ms']:.1f}",
            f"{values['p95_ms']:.1f}",
            _difference_cell(report, name, headline),
        ]
        for name, values in arms.items()
    ]
    return header, rows


def _caption(report: Mapping[str, object]) -> str:
    answers = (
        f"; Ans@budget: a gold answer in the evidence packed into the token budget, over the "
        f"{report['answer_questions']} questions not answered by yes or no"
        if "answer_questions" in report
        else ""
    )
    return (
        f"{report['dataset']}: {report['queries']} {report.get('split', '')} questions; Δ in points, "
        f"* = p < {SIGNIFICANCE_LEVEL} (paired randomization test){answers}"
    )


def text_table(report: Mapping[str, object]) -> str:
    header, rows = report_rows(report)
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.ljust(width) if index == 0 else cell.rjust(width)
            for index, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return "\n".join([_caption(report), line(header), line(["-" * w for w in widths]), *map(line, rows)])


def category_table(report: Mapping[str, object]) -> str:
    """Each arm's figures per question category; empty when the questions carry no category."""
    categories: Mapping[str, Mapping[str, Any]] = report.get("categories") or {}  # type: ignore[assignment]
    if not categories:
        return ""
    rows = []
    metrics: list[str] = []
    for category, figures in categories.items():
        arms: Mapping[str, Mapping[str, float | None]] = figures["arms"]
        for arm, values in arms.items():
            metrics = list(values)
            rows.append([f"{category} ({figures['queries']} q)", arm, *("—" if value is None else f"{value:.3f}" for value in values.values())])
    header = ["category", "arm", *map(_label, metrics)]
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    return "\n".join(
        "  ".join(cell.ljust(width) if index < 2 else cell.rjust(width) for index, (cell, width) in enumerate(zip(cells, widths, strict=True))).rstrip()
        for cells in [header, ["-" * width for width in widths], *rows]
    )


def markdown_table(report: Mapping[str, object]) -> str:
    header, rows = report_rows(report)
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---", *["---:"] * (len(header) - 1)]) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]
    return f"{_caption(report)}\n\n" + "\n".join(lines)
