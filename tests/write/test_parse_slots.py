"""Parse tasks run one per worker, and one fewer while a worker's core is yielded (never none)."""

from __future__ import annotations

import threading

from pipelines.write.extraction.parse_slots import ParseSlots

WAIT_SECONDS = 0.2


def start_taking(slots: ParseSlots) -> threading.Event:
    """Take a slot in another thread; the event is set once the take returned."""
    taken = threading.Event()

    def take() -> None:
        slots.take()
        taken.set()

    threading.Thread(target=take, daemon=True).start()
    return taken


def test_as_many_tasks_run_as_there_are_workers() -> None:
    slots = ParseSlots(2)
    slots.take()
    slots.take()
    third = start_taking(slots)
    assert not third.wait(WAIT_SECONDS)
    slots.give_back()
    assert third.wait(5)


def test_a_yielded_worker_starts_no_task_until_it_is_given_back() -> None:
    slots = ParseSlots(2)
    slots.take()
    slots.take()
    with slots.one_yielded():
        # Both tasks that were running run on; only once one ends is the limit one task.
        slots.give_back()
        waiting = start_taking(slots)
        assert not waiting.wait(WAIT_SECONDS)
        slots.give_back()
        assert waiting.wait(5)
        after_the_yield = start_taking(slots)
        assert not after_the_yield.wait(WAIT_SECONDS)
    assert after_the_yield.wait(5)


def test_a_single_worker_keeps_parsing_when_it_is_yielded() -> None:
    slots = ParseSlots(1)
    with slots.one_yielded(), slots.one_yielded():
        assert start_taking(slots).wait(5)
