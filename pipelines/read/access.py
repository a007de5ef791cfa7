"""Fact access (access_count, last_accessed), recorded on the primary after find, never inside it.

find runs READ ONLY so that a hot standby can serve it; the facts it handed out are then folded in
on the primary in one short statement, however many finds the batch holds. The dense facts lane
ranks by that frequency and recency, so the ranking keeps learning wherever the reads ran.
Recording runs under the caller's scopes: a caller can only count accesses to facts it may read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import psycopg

from pipelines.read.find import FindResult
from pipelines.resources.database import Database

# The rows are locked in id order first: concurrent finds (a server's clients asking alike questions)
# update overlapping facts, and an UPDATE locks them in whatever order its join yields, so two of
# them deadlocked (measured: 16 of 366 requests of `lanegraph bench serve` at 16 clients).
RECORD_ACCESS = """
WITH accessed AS (
    SELECT id, count(*)::integer AS times FROM unnest(%(fact_ids)s::text[]) AS id GROUP BY id
), locked AS (
    SELECT fact.id FROM fact JOIN accessed USING (id) ORDER BY fact.id FOR UPDATE OF fact
)
UPDATE fact
SET access_count = fact.access_count + accessed.times, last_accessed = now()
FROM accessed JOIN locked USING (id)
WHERE fact.id = accessed.id
"""


def record_access(
    primary: Database, results: Iterable[FindResult], *, scopes: Sequence[str] | None = None
) -> int:
    """Count every fact each result handed out, in one statement; return the facts updated.

    On a standby (the primary URL pointing at a read-only server) this raises
    `psycopg.errors.ReadOnlySqlTransaction`; callers that may run there use `record_access_or_say`.
    """
    fact_ids = [fact_id for result in results for fact_id in result.accessed_fact_ids]
    if not fact_ids:
        return 0
    with primary.connection(scopes) as connection:
        return connection.execute(RECORD_ACCESS, {"fact_ids": fact_ids}).rowcount


def record_access_or_say(
    primary: Database, results: Sequence[FindResult], *, scopes: Sequence[str] | None = None
) -> str:
    """`record_access`, or why it was skipped: a standby cannot record, and the read it follows
    must not fail for that. Returns an empty string when recorded."""
    try:
        record_access(primary, results, scopes=scopes)
    except psycopg.errors.ReadOnlySqlTransaction:
        return "fact access not recorded: the database is a read-only standby (point DATABASE_URL at its primary)"
    return ""
