"""The tuned settings judged on data the study never saw: dev, beside the current settings, under
the paired randomization test `lanegraph eval` uses."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pipelines.evaluation.metrics import paired_p_value
from pipelines.evaluation.report import DIGITS, SIGNIFICANCE_LEVEL
from pipelines.tuning.scoring import SplitScores

OBJECTIVE = "objective"


@dataclass(frozen=True)
class MetricComparison:
    current: float
    tuned: float
    p_value: float

    @property
    def difference(self) -> float:
        return self.tuned - self.current


@dataclass(frozen=True)
class DevComparison:
    questions: int
    objective: str
    metrics: Mapping[str, MetricComparison]

    @property
    def improved(self) -> bool:
        """The tuned objective is higher on dev, and the paired test says it is no accident."""
        result = self.metrics[OBJECTIVE]
        return result.difference > 0 and result.p_value < SIGNIFICANCE_LEVEL

    @property
    def verdict(self) -> str:
        result = self.metrics[OBJECTIVE]
        change = f"dev {self.objective} {result.current:.4f} → {result.tuned:.4f} ({result.difference * 100:+.1f} points, p={result.p_value:.3f}, {self.questions} questions)"
        if self.improved:
            return f"{change}: the tuned settings are better"
        if result.difference <= 0:
            return f"{change}: the tuned settings do not improve on dev"
        return f"{change}: not significant at p < {SIGNIFICANCE_LEVEL}, which chance alone could give"

    def to_json(self) -> dict[str, object]:
        return {
            "questions": self.questions,
            "objective": self.objective,
            "improved": self.improved,
            "verdict": self.verdict,
            "metrics": {
                name: {
                    "current": round(result.current, DIGITS),
                    "tuned": round(result.tuned, DIGITS),
                    "difference": round(result.difference, DIGITS),
                    "p_value": round(result.p_value, DIGITS),
                }
                for name, result in self.metrics.items()
            },
        }

    def markdown(self) -> str:
        lines = ["| metric | current | tuned | Δ points | p |", "|---|---:|---:|---:|---:|"]
        for name, result in self.metrics.items():
            marker = "*" if result.p_value < SIGNIFICANCE_LEVEL else ""
            label = f"{OBJECTIVE} ({self.objective})" if name == OBJECTIVE else name
            lines.append(
                f"| {label} | {result.current:.4f} | {result.tuned:.4f} | {result.difference * 100:+.1f} | {result.p_value:.3f}{marker} |"
            )
        return f"{self.verdict}\n\n" + "\n".join(lines)


def compare_on_dev(
    current: SplitScores, tuned: SplitScores, weights: Mapping[str, float], objective: str
) -> DevComparison:
    metrics = {
        OBJECTIVE: MetricComparison(
            current.objective(weights),
            tuned.objective(weights),
            paired_p_value(current.objective_per_question(weights), tuned.objective_per_question(weights)),
        )
    }
    for metric, values in current.per_question.items():
        metrics[metric] = MetricComparison(
            current.mean(metric), tuned.mean(metric), paired_p_value(values, tuned.per_question[metric]) if len(values) else 1.0
        )
    return DevComparison(len(current.questions), objective, metrics)
