"""Side-by-side timing: every variant runs on every question, interleaved, in one process.

Machines here are noisy (other processes share two cores), so a latency is only ever reported
next to the latency of what it is compared with, measured in the same loop: for each question the
variants run one after another, and the order rotates from question to question so that no variant
always runs first (cold) or last (after the others warmed the cache for it). Rotation alone keeps
neighbours in one order (A before B in all but one rotation of each cycle), and the first variant
of a question to touch its pages pays for reading them into shared buffers: find ran before the
per-lane round trips on 16 questions in 17 and looked 1.5x slower than them at 100k chunks, while
run back to back on one warm question the two took the same time. So every other cycle of
rotations runs in reverse, and any two variants run in each order equally often.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

Query = TypeVar("Query")


@dataclass(frozen=True)
class Summary:
    """Latency percentiles of one variant, in milliseconds."""

    p50_ms: float
    p95_ms: float
    mean_ms: float
    samples: int

    @classmethod
    def of(cls, samples_ms: Sequence[float]) -> Summary:
        if not samples_ms:
            raise ValueError("no samples to summarize")
        values = np.asarray(samples_ms, dtype=float)
        return cls(
            float(np.percentile(values, 50)), float(np.percentile(values, 95)), float(values.mean()), len(values)
        )

    def as_dict(self) -> dict[str, float | int]:
        return {"p50_ms": self.p50_ms, "p95_ms": self.p95_ms, "mean_ms": self.mean_ms, "samples": self.samples}


def rotation(names: Sequence[str], step: int) -> list[str]:
    """`names` rotated left by `step`: the run order of the variants for one question."""
    shift = step % len(names)
    return [*names[shift:], *names[:shift]]


def run_order(names: Sequence[str], step: int) -> list[str]:
    """The run order of the variants for the `step`th question: `names` rotated by `step`, reversed
    on every other cycle of rotations."""
    order = rotation(names, step)
    return order if (step // len(names)) % 2 == 0 else order[::-1]


def interleaved(
    variants: Mapping[str, Callable[[Query], object]],
    queries: Sequence[Query],
    *,
    rounds: int = 1,
    warmup_queries: int = 10,
) -> dict[str, list[float]]:
    """Milliseconds per call of every variant on every question, A B C, B C A, C A B, then
    C B A, A C B, B A C, ...

    A warm-up pass over the first `warmup_queries` questions runs the same loop unrecorded: it
    fills the buffer cache, prepares the statements and lets PostgreSQL settle on a generic or
    custom plan (it plans custom five times first)."""
    if not variants or not queries:
        raise ValueError("interleaved timing needs at least one variant and one question")
    names = list(variants)
    samples: dict[str, list[float]] = {name: [] for name in names}
    passes = [(list(queries[:warmup_queries]), False)] + [(list(queries), True)] * rounds
    step = 0
    for pass_queries, recording in passes:
        for query in pass_queries:
            for name in run_order(names, step):
                started = time.perf_counter_ns()
                variants[name](query)
                elapsed_ms = (time.perf_counter_ns() - started) / 1e6
                if recording:
                    samples[name].append(elapsed_ms)
            step += 1
    return samples


def ratio(numerator: float, denominator: float) -> float:
    """numerator / denominator; infinity when the denominator is not positive."""
    return numerator / denominator if denominator > 0 else math.inf


def growth_per_decade(smaller_size: int, smaller_ms: float, larger_size: int, larger_ms: float) -> float:
    """The factor latency grows by per 10x corpus, from two sizes (sizes need not be 10x apart)."""
    decades = math.log10(larger_size / smaller_size)
    if decades <= 0:
        raise ValueError("growth needs a larger second size")
    return ratio(larger_ms, smaller_ms) ** (1 / decades)
