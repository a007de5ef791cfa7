"""What one write step did: counts, skipped input with reasons, timing and a preview of rows.

Each asset turns its `StepReport` into Dagster materialization metadata; the runner and the command
line read the same counts back from that metadata.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

COUNT_NAMES = ("inserted", "updated", "deleted", "unchanged", "skipped")
MAX_LISTED_PROBLEMS = 50


@dataclass(frozen=True)
class Problem:
    """Input that was skipped: where (file, or file:line) and why, in one line."""

    location: str
    reason: str

    def __str__(self) -> str:
        return f"{self.location}: {self.reason}"


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

    @property
    def skipped(self) -> int:
        return len(self.problems)

    def skip(self, location: str, reason: str) -> None:
        self.problems.append(Problem(location, reason))

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
            # One "location: reason" line per skipped input; the runner and the CLI read them back.
            values["skipped_inputs"] = [str(problem) for problem in self.problems[:MAX_LISTED_PROBLEMS]]
            if len(self.problems) > MAX_LISTED_PROBLEMS:
                values["skipped_inputs"].append(f"… and {len(self.problems) - MAX_LISTED_PROBLEMS} more")
        if self.preview_columns:
            values["preview"] = markdown_table(self.preview_columns, self.preview_rows)
        return values


def markdown_table(columns: Sequence[str], rows: Sequence[Sequence[object]], max_chars: int = 80) -> str:
    def cell(value: object) -> str:
        text = " ".join(str(value).split()) if value is not None else ""
        text = text if len(text) <= max_chars else text[: max_chars - 1] + "…"
        return text.replace("|", "\\|")

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return "\n".join(lines)
