"""Writing many items fast without letting one bad item spoil the rest.

Items are written a batch per transaction (a commit waits for a disk flush, so one commit per
document is slow); a batch that fails is rolled back whole and written again one item per
transaction, so every item is either fully written or skipped with the database's reason, and the
counts only ever include committed work, each item counted for the partition (source file) it comes
from. Only errors caused by an item's data are skipped this way; a lost connection or a broken
statement fails the step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Generic, TypeVar

import psycopg

from pipelines.resources.database import Database
from pipelines.errors import first_line_of
from pipelines.write.report import StepReport

Item = TypeVar("Item")
# Errors an item's own values cause: a value PostgreSQL cannot store, a violated constraint, a
# value beyond a limit of the server (an index entry over the btree maximum, an array too large).
ITEM_ERRORS = (psycopg.DataError, psycopg.IntegrityError, psycopg.errors.ProgramLimitExceeded)


class BatchWriter(Generic[Item]):
    """Collects items and writes them `batch_size` at a time with `write(connection, items)`; once a
    batch is committed, each item's `counts(item)` (inserted, updated, ...) are added to `report`
    for its partition, `partition(item)`."""

    def __init__(
        self,
        database: Database,
        write: Callable[[psycopg.Connection, Sequence[Item]], None],
        *,
        batch_size: int,
        report: StepReport,
        describe: Callable[[Item], str],
        partition: Callable[[Item], str],
        counts: Callable[[Item], Mapping[str, int]],
        on_flush: Callable[[int], None] = lambda written: None,
    ) -> None:
        self.database = database
        self.write = write
        self.batch_size = batch_size
        self.report = report
        self.describe = describe
        self.partition = partition
        self.counts = counts
        self.on_flush = on_flush
        self.pending: list[Item] = []
        self.failed: list[Item] = []
        self.written = 0

    def add(self, item: Item) -> None:
        self.pending.append(item)
        if len(self.pending) >= self.batch_size:
            self.flush()

    def flush(self) -> None:
        batch, self.pending = self.pending, []
        if not batch:
            return
        try:
            self._one_transaction(batch)
            committed = batch
        except ITEM_ERRORS:
            committed = []
            for item in batch:
                try:
                    self._one_transaction([item])
                    committed.append(item)
                except ITEM_ERRORS as error:
                    self.failed.append(item)
                    self.report.skip(
                        self.describe(item), f"database error: {first_line_of(error)}", self.partition(item)
                    )
        for item in committed:
            self.report.count(self.partition(item), self.counts(item))
        self.written += len(batch)
        self.on_flush(self.written)

    def _one_transaction(self, batch: Sequence[Item]) -> None:
        with self.database.connection() as connection, connection.transaction():
            self.write(connection, batch)
