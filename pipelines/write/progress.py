"""Progress of long write steps, for whoever runs them in this process (the command line's bar).

Dagster runs the assets of `lanegraph ingest` in-process, so a listener registered here sees every
batch a step finishes; steps also log the same progress to the run's event log for the UI.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Log = Callable[[str], None]
# (step name, units done, units in total, unit name)
ProgressListener = Callable[[str, int, int, str], None]

_listeners: list[ProgressListener] = []
_lock = threading.Lock()


@contextmanager
def listening(listener: ProgressListener) -> Iterator[None]:
    with _lock:
        _listeners.append(listener)
    try:
        yield
    finally:
        with _lock:
            _listeners.remove(listener)


def report_progress(step: str, done: int, total: int, unit: str) -> None:
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        listener(step, done, total, unit)


def step_progress(
    step: str, total: int, unit: str, log: Log, log_interval_seconds: float = 10.0
) -> Callable[[int], None]:
    """A callback for `done` units of a step: tells the listeners, and writes a log line now and
    then (every log line is an event in the run's history, so one per unit would swamp it)."""
    last_logged = time.monotonic()

    def advance(done: int) -> None:
        nonlocal last_logged
        report_progress(step, done, total, unit)
        now = time.monotonic()
        if done >= total or now - last_logged >= log_interval_seconds:
            last_logged = now
            log(f"{step}: {done}/{total} {unit}")

    return advance
