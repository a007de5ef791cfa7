"""Progress of long write steps, for whoever runs them in this process (the command line's bar).

Dagster runs the assets of `lanegraph ingest` in-process, so a listener registered here sees every
batch a step finishes; steps also log the same progress to the run's event log for the UI.
"""

from __future__ import annotations

import threading
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


def step_progress(step: str, total: int, unit: str, log: Log) -> Callable[[int], None]:
    """A callback for `done` units of a step: tells the listeners and writes a log line."""

    def advance(done: int) -> None:
        report_progress(step, done, total, unit)
        log(f"{step}: {done}/{total} {unit}")

    return advance
