"""What one write step did: counts, skipped input with reasons, timing and a preview of rows.

Each asset turns its `StepReport` into Dagster materialization metadata; the runner and the command
line read the same counts back from that metadata. A per-document step also keeps the counts of each
partition (source file) apart, because Dagster records one materialization per partition of a run
and each should say what happened to its own file: those carry the partition's counts under the
plain names and the whole run's figures under `RUN_PREFIX` (`run_labelled`, `run_values`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

COUNT_NAMES = ("inserted", "updated", "deleted", "unchanged", "skipped")
MAX_LISTED_PROBLEMS = 50
RUN_PREFIX = "run_"


@dataclass(frozen=True)
class Problem:
    """Input that was skipped: where (file, or file:line) and why, in one line."""

    location: str
    reason: str

    def __str__(self) -> str:
        return f"{self.location}: {self.reason}"


@dataclass
class PartitionReport:
    """What a step did to one partition: the counts of its rows (and any step-specific tallies)."""

    counts: Counter[str] = field(default_factory=Counter)
    problems: list[Problem] = field(default_factory=list)

    def metadata(self) -> dict[str, object]:
        values: dict[str, object] = {name: self.counts[name] for name in COUNT_NAMES if name != "skipped"}
        values["skipped"] = len(self.problems)
        values.update({name: value for name, value in self.counts.items() if name not in COUNT_NAMES})
        if self.problems:
            values["skipped_inputs"] = listed_problems(self.problems)
        return values


@dataclass
class StepReport:
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    problems: list[Problem] = field(default_factory=list)
    # Rows of the step's table after the step, over the whole corpus.
    rows: int = 0
    # What the step processed, for the rate: documents, chunks, ...
    processed: int = 0
    unit: str = "documents"
    preview_columns: tuple[str, ...] = ()
    preview_rows: list[tuple] = field(default_factory=list)
    # Step-specific figures (e.g. seconds spent inside the embedding model).
    details: dict[str, object] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)
    seconds: float = 0.0
    # Per partition key, for steps over partitions; the fields above stay the run's totals.
    partitions: dict[str, PartitionReport] = field(default_factory=dict)

    @property
    def skipped(self) -> int:
        return len(self.problems)

    def skip(self, location: str, reason: str, partition: str | None = None) -> None:
        problem = Problem(location, reason)
        self.problems.append(problem)
        if partition is not None:
            self.partition(partition).problems.append(problem)

    def count(self, partition: str, counts: Mapping[str, int]) -> None:
        """Add a partition's counts to it and, for the names in COUNT_NAMES, to the run's totals."""
        self.partition(partition).counts.update(counts)
        for name, value in counts.items():
            if name in COUNT_NAMES:
                setattr(self, name, getattr(self, name) + value)

    def partition(self, key: str) -> PartitionReport:
        return self.partitions.setdefault(key, PartitionReport())

    def finish(self) -> StepReport:
        self.seconds = time.perf_counter() - self.started
        return self

    def counts(self) -> dict[str, int]:
        return {name: int(getattr(self, name)) for name in COUNT_NAMES}

    def metadata(self) -> dict[str, object]:
        """Plain values and markdown; the defs layer wraps them for Dagster."""
        rate = self.processed / self.seconds if self.seconds > 0 else 0.0
        values: dict[str, object] = {
            **self.counts(),
            "rows": self.rows,
            f"{self.unit}_processed": self.processed,
            "seconds": round(self.seconds, 3),
            f"{self.unit}_per_second": round(rate, 1),
            **self.details,
        }
        if self.problems:
            values["skipped_inputs"] = listed_problems(self.problems)
        if self.preview_columns:
            values["preview"] = markdown_table(self.preview_columns, self.preview_rows)
        return values


def listed_problems(problems: Sequence[Problem]) -> list[str]:
    """One "location: reason" line per skipped input; the runner and the CLI read them back."""
    lines = [str(problem) for problem in problems[:MAX_LISTED_PROBLEMS]]
    if len(problems) > MAX_LISTED_PROBLEMS:
        lines.append(f"… and {len(problems) - MAX_LISTED_PROBLEMS} more")
    return lines


def run_labelled(values: Mapping[str, object]) -> dict[str, object]:
    """A run's figures named as the run's, beside a partition's own figures in its metadata."""
    return {RUN_PREFIX + name: value for name, value in values.items()}


def run_values(metadata: Mapping[str, object]) -> dict[str, object]:
    """The run's figures back from a partition's metadata under their plain names."""
    return {name.removeprefix(RUN_PREFIX): value for name, value in metadata.items() if name.startswith(RUN_PREFIX)}


def markdown_table(columns: Sequence[str], rows: Sequence[Sequence[object]], max_chars: int = 80) -> str:
    def cell(value: object) -> str:
        text = " ".join(str(value).split()) if value is not None else ""
        text = text if len(text) <= max_chars else text[: max_chars - 1] + "…"
        return text.replace("|", "\\|")

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return "\n".join(lines)
