"""Fact access (access_count, last_accessed), recorded on the primary after find, never inside it.

find runs READ ONLY so that a hot standby can serve it; the facts it handed out are then folded in
on the primary in one short statement, however many finds the batch holds. The dense facts lane
ranks by that frequency and recency, so the ranking keeps learning wherever the reads ran.
Recording runs under the caller's scopes: a caller can only count accesses to facts it may read, and
only through find's own path (`record_access`), never by writing the counters.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import psycopg

from pipelines.read.find import FindResult
from pipelines.resources.database import Database

RECORD_ACCESS = "SELECT lanegraph_record_fact_access(%(fact_ids)s::text[], %(signature)s)"
# What the signature says the ids are for, so it signs nothing else.
ACCESS_PURPOSE = "access"


def record_access(
    primary: Database, results: Iterable[FindResult], *, scopes: Sequence[str] | None = None
) -> int:
    """Count every fact each result handed out, in one statement; return the facts updated.

    No caller role may write the counters: lanegraph_record_fact_access() (0090) counts, in a
    confined block only with the application's signature over the ids, which SQL run in the block
    cannot make, and only facts the caller may read.

    On a standby (the primary URL pointing at a read-only server) this raises
    `psycopg.errors.ReadOnlySqlTransaction`; callers that may run there use `record_access_or_say`.
    """
    fact_ids = [fact_id for result in results for fact_id in result.accessed_fact_ids]
    if not fact_ids:
        return 0
    with primary.connection(scopes) as connection:
        signature = primary.block_signature(connection, ACCESS_PURPOSE, fact_ids)
        (counted,) = connection.execute(RECORD_ACCESS, {"fact_ids": fact_ids, "signature": signature}).fetchone() or (0,)
        return int(counted)


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
