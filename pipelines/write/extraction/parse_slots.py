"""How many parse tasks run at once: one per worker process, and one fewer while the caller's
database server, on the same machine, works on a batch (stages, resolves and merges it).

The merge holds the graph write lock that every other writer waits on. Replayed on two cores beside
two busy processes, the merge of the MuSiQue build took 7.0 to 7.4 s instead of the 6.1 s it takes
alone; beside one, it took 6.1 s. A worker left idle for those seconds costs the parse little,
since the cores stay busy either way: one parses, the other serves the merge.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class ParseSlots:
    """A count of parse tasks in flight, bounded by the workers less those yielded (never below one)."""

    def __init__(self, workers: int) -> None:
        self._workers = workers
        self._yielded = 0
        self._running = 0
        self._changed = threading.Condition()

    def take(self) -> None:
        """Wait until a task may start, and count it as running."""
        with self._changed:
            self._changed.wait_for(lambda: self._running < max(1, self._workers - self._yielded))
            self._running += 1

    def give_back(self) -> None:
        """A task ended (done, failed or cancelled)."""
        with self._changed:
            self._running -= 1
            self._changed.notify_all()

    @contextmanager
    def one_yielded(self) -> Iterator[None]:
        """Inside: one slot fewer. Tasks already running finish; none starts in the freed slot."""
        with self._changed:
            self._yielded += 1
        try:
            yield
        finally:
            with self._changed:
                self._yielded -= 1
                self._changed.notify_all()
