"""Progress of long write steps, with counts, rate and time left, for whoever runs them in this
process (the command line) and for the run's event log (the UI).

Dagster runs the assets of `lanegraph ingest` in-process, so a listener registered here sees every
update a step reports. Every update is also weighed for the run log: each log line is an event in
the run's history, so a step writes its first and last update and, in between, one line per tenth of
the work or per half minute, never two within a couple of seconds. Listeners that print lines rather
than redraw one (a log file, a pipe) print exactly those.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

Log = Callable[[str], None]
Embed = Callable[[Sequence[str]], np.ndarray]

# The pace of logged lines: at most one per MIN_LOG_SECONDS, and one whenever another of LOG_PARTS
# equal parts of the work is done or MAX_SILENT_SECONDS passed without a line.
MIN_LOG_SECONDS = 2.0
MAX_SILENT_SECONDS = 30.0
LOG_PARTS = 10
# Texts per embedding call in a step that shows progress: an update per call comes every few seconds
# even on a slow, busy CPU. The local model fills each width's last pass of a call with copies (its
# passes have fixed shapes); at 128 a call, that filler cost short sentences 15% more model time.
EMBED_SLICE = 512


@dataclass(frozen=True)
class StepProgress:
    """Where a step stands: `done` of `total` units, `seconds` after it began."""

    step: str
    done: int
    total: int
    unit: str
    seconds: float
    # Written to the run log as well: the step's paced lines (first, last, every tenth or half minute).
    logged: bool

    @property
    def finished(self) -> bool:
        return self.done >= self.total

    def line(self) -> str:
        counts = f"{self.step}: {self.done:,}/{self.total:,} {self.unit}"
        if self.done == 0 or self.seconds <= 0:
            return counts
        rate = self.done / self.seconds
        if self.finished:
            return f"{counts} in {duration(self.seconds)} ({per_second(rate)})"
        left = (self.total - self.done) / rate
        return f"{counts} ({100 * self.done // self.total}%, {per_second(rate)}, about {duration(left)} left)"


ProgressListener = Callable[[StepProgress], None]

_listeners: list[ProgressListener] = []
_lock = threading.Lock()


def silent(message: str) -> None:
    """For a caller that wants no progress lines."""


def duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def per_second(rate: float) -> str:
    """A rate that stays readable for slow steps too (a few documents a minute)."""
    if rate >= 10:
        return f"{rate:,.0f}/s"
    if rate >= 1:
        return f"{rate:.1f}/s"
    return f"{rate * 60:.1f}/min"


@contextmanager
def listening(listener: ProgressListener) -> Iterator[None]:
    with _lock:
        _listeners.append(listener)
    try:
        yield
    finally:
        with _lock:
            _listeners.remove(listener)


def _tell_listeners(progress: StepProgress) -> None:
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        listener(progress)


def step_progress(step: str, total: int, unit: str, log: Log) -> Callable[[int], None]:
    """A callback for `done` units of a step that tells the listeners and writes the paced lines to
    `log`. It announces the step at once (0 of total), so a slow first batch is not silent; a step
    with nothing to do says nothing."""
    started = time.monotonic()
    last_logged = started
    next_part = 1

    def advance(done: int) -> None:
        nonlocal last_logged, next_part
        if total <= 0:
            return
        now = time.monotonic()
        parts_done = done * LOG_PARTS // total
        logged = (
            done == 0
            or done >= total
            or (now - last_logged >= MIN_LOG_SECONDS and (parts_done >= next_part or now - last_logged >= MAX_SILENT_SECONDS))
        )
        progress = StepProgress(step, done, total, unit, now - started, logged)
        if logged:
            last_logged = now
            next_part = parts_done + 1
            log(progress.line())
        _tell_listeners(progress)

    advance(0)
    return advance


def embed_showing_progress(embed: Embed, texts: Sequence[str], advance: Callable[[int], None], done_before: int = 0) -> np.ndarray:
    """The texts' vectors, in the texts' order, embedded EMBED_SLICE at a time with
    `advance(done_before + embedded)` after each slice: embedding is the slow part of most steps,
    and one call over thousands is silent.

    The texts go to the model longest first, so every slice holds texts of about one length: a
    model pads each pass to its longest text (an HTTP server) or to a width fixed by length (the
    local one), and slices in the given order (sentences of any length mixed) spent a third to
    half of the model's time on padding."""
    order = sorted(range(len(texts)), key=lambda index: -len(texts[index]))
    parts = []
    for start in range(0, len(order), EMBED_SLICE):
        parts.append(embed([texts[index] for index in order[start : start + EMBED_SLICE]]))
        advance(done_before + start + len(parts[-1]))
    if not parts:
        return embed(texts)
    vectors = np.concatenate(parts)
    if len(vectors) != len(texts):
        # The model lost or added rows; the caller's shape check says so.
        return vectors
    in_given_order = np.empty_like(vectors)
    in_given_order[order] = vectors
    return in_given_order
