"""Where the steps of a write-side run execute, as the runner and the command line name it.

`in_process`: one after another in the calling process. `multiprocess`: Dagster's multiprocess
executor, independent steps (embeddings, BM25, extraction; RAPTOR beside the entity graph) side by
side in one process each, at most one per usable CPU. `auto`: the latter when it can run, the
machine has CPUs to spare, and the sources to process are large enough to repay starting the step
processes. docs/operations.md, "Dagster past one process", has the measurement behind both limits.
"""

from __future__ import annotations

import os
from typing import Literal

Executor = Literal["auto", "in_process", "multiprocess"]
EXECUTORS: tuple[Executor, ...] = ("auto", "in_process", "multiprocess")
# With fewer usable CPUs, `auto` stays in-process: torch already spreads the embedding step over
# two cores, so a second step beside it only shares them, and each step process pays its start
# and loads its model again (1.25x slower for 300 passages on 2 cores).
MULTIPROCESS_MIN_CPUS = 4
# Below this many bytes of sources to process, `auto` stays in-process: starting the fork server
# and a process per step costs seconds that a small run cannot win back.
MULTIPROCESS_MIN_SOURCE_BYTES = 100_000


def usable_cpus() -> int:
    """CPUs this process may run on: its affinity, which a container or taskset makes smaller
    than the machine's count."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
