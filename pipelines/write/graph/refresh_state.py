"""What each graph-wide refresh consumed, so a refresh cut short is redone.

A step takes `sources_state` before it reads and `record_refresh`es it after its last write. A run
killed in between leaves the previous state recorded: `steps_out_of_step` then names the step, the
runner runs the graph refresh again although no document is new, and the step's asset check fails
until it has.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import psycopg

from pipelines.resources.database import Database

# Every live document as the per-document assets left it: its id and its content hash (which covers
# title, text, times and scopes). A document removed or changed changes the digest.
SOURCES_STATE = """
SELECT md5(coalesce(string_agg(id || ':' || content_hash, E'\\n' ORDER BY id), ''))
FROM document
"""

RECORD_REFRESH = """
INSERT INTO lanegraph_graph_refresh (step, sources_state, refreshed_at)
VALUES (%(step)s, %(state)s, now())
ON CONFLICT (step) DO UPDATE SET sources_state = excluded.sources_state, refreshed_at = excluded.refreshed_at
"""

RECORDED_STATES = "SELECT step, sources_state FROM lanegraph_graph_refresh WHERE step = ANY(%(steps)s)"


def sources_state(connection: psycopg.Connection) -> str:
    (state,) = connection.execute(SOURCES_STATE).fetchall()[0]
    return str(state)


def record_refresh(connection: psycopg.Connection, step: str, state: str) -> None:
    connection.execute(RECORD_REFRESH, {"step": step, "state": state})


def steps_out_of_step(connection: psycopg.Connection, steps: Sequence[str]) -> list[str]:
    """The steps whose last completed refresh consumed other sources than there are now (or that
    never completed one)."""
    current = sources_state(connection)
    recorded: dict[str, str] = dict(connection.execute(RECORDED_STATES, {"steps": list(steps)}).fetchall())
    return [step for step in steps if recorded.get(step) != current]


@contextmanager
def refreshing(database: Database, step: str) -> Iterator[None]:
    """Around one refresh of `step`: the state is read before the step reads anything, and recorded
    only once the block has written everything (a block that raises or is killed records nothing)."""
    with database.connection() as connection:
        state = sources_state(connection)
    yield
    with database.connection() as connection:
        record_refresh(connection, step, state)
