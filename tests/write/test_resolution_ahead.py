"""A batch's names are resolved against the graph as committed before its merge takes the graph
write lock (migration 0114). What another writer commits in between must count as if the batch
had been resolved after it: the merge probes those names again under the lock."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import psycopg

from pipelines.resources.database import Database, connect
from pipelines.resources.scopes import ScopedRole
from pipelines.write.extraction import extraction_sql as q
from pipelines.write.extraction.extraction import extract_documents
from pipelines.write.extraction.ontology import ENTITY_KINDS
from pipelines.write.extraction.rule_extractor import RuleExtractor
from tests.write.corpus import seed_documents
from tests.write.test_parallel_extraction import MERGE_SIMILARITY, graph

LATE = {
    "late.md": (
        "# Late\n\nOskar Brandt met Ilse Marchetti in Tampere. Kelpstone Photonics Ltd supplies Tessel Labs. "
        "Heron Works hired Oskar Brandt.\n"
    ),
}
# The graph before either writer: an entity the late document names; one name under two other
# kinds, the organisation of higher degree; an entity that the other writer aliases.
BEFORE = """
INSERT INTO entity (id, name, kind, normalized_name, degree) VALUES
    ('e-brandt', 'Oskar Brandt', 'person', 'oskar brandt', 0),
    ('e-marchetti-org', 'Ilse Marchetti', 'organization', 'ilse marchetti', 2),
    ('e-marchetti-place', 'Ilse Marchetti', 'place', 'ilse marchetti', 1),
    ('e-heron', 'Heron Labs', 'organization', 'heron labs', 0);
"""
# What the other writer commits while the late document's batch waits for the lock, each a change
# that moves one of its names: the entity it resolved to deleted; the other kind of a name raised
# above it; a name created; a near spelling of another created; a name recorded as an alias.
BETWEEN = """
DELETE FROM entity WHERE id = 'e-brandt';
UPDATE entity SET degree = 5 WHERE id = 'e-marchetti-place';
INSERT INTO entity (id, name, kind, normalized_name) VALUES
    ('e-kelpstone', 'Kelpstone Photonics Ltd', 'organization', 'kelpstone photonics ltd'),
    ('e-tessel', 'Tessel-Labs', 'organization', 'tessel-labs');
UPDATE entity SET aliases = ARRAY['heron works'] WHERE id = 'e-heron';
"""


def _planted(database: Database) -> None:
    seed_documents(database, LATE)
    with database.connection() as connection:
        connection.execute(
            q.REGISTER_ENTITY_KINDS, {"names": list(ENTITY_KINDS), "descriptions": list(ENTITY_KINDS.values())}
        )
        connection.execute(BEFORE)


def _waiting_for_the_graph_lock(url: str, timeout: float = 120) -> bool:
    deadline = time.monotonic() + timeout
    with connect(url, autocommit=True) as connection:
        while time.monotonic() < deadline:
            if connection.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted").fetchone()[0]:
                return True
            time.sleep(0.05)
    return False


def test_what_another_writer_commits_while_a_batch_waits_for_the_lock_is_resolved_against(make_database) -> None:
    together, serial = make_database(), make_database()
    for database in (together, serial):
        _planted(database)
    extractor = RuleExtractor()

    with serial.connection() as connection:
        connection.execute(BETWEEN)
    extract_documents(serial, extractor, list(LATE), MERGE_SIMILARITY)

    writer = connect(together.url)
    writer.execute(q.GRAPH_WRITE_LOCK)
    with ThreadPoolExecutor(1) as run:
        late = run.submit(extract_documents, together, extractor, list(LATE), MERGE_SIMILARITY)
        try:
            # The late batch has resolved its names ahead and now waits for the lock.
            waited = _waiting_for_the_graph_lock(together.url)
            writer.execute(BETWEEN)
        finally:
            writer.commit()
            writer.close()
        report = late.result(timeout=120)
    assert waited, "the late batch never waited for the graph lock"
    assert report.lock_wait_seconds > 0 and report.resolve_ahead_seconds > 0

    expected = graph(serial)
    assert graph(together) == expected
    entity_of = {normalized: entity_id for entity_id, _, _, normalized, _, _ in expected["entities"]}
    mentioned = {entity_id for entity_id, *_ in expected["mentions"]}
    # Each change moved its name: a new Oskar Brandt, the place, the other writer's two
    # organisations, and the alias.
    assert entity_of["oskar brandt"] != "e-brandt" and "e-brandt" not in mentioned
    assert {"e-marchetti-place", "e-kelpstone", "e-tessel", "e-heron"} <= mentioned
    assert "e-marchetti-org" not in mentioned


def test_a_change_stamps_the_entity_with_the_writers_epoch(database: Database) -> None:
    _planted(database)
    with database.connection() as connection:
        before = connection.execute("SELECT epoch FROM lanegraph_graph_write_epoch").fetchone()[0]
        connection.execute("UPDATE entity SET degree = 3 WHERE id = 'e-heron'")
        connection.execute("UPDATE entity SET embedding = NULL WHERE id = 'e-brandt'")
    with database.connection() as connection:
        epochs = dict(connection.execute("SELECT id, changed_epoch FROM entity").fetchall())
        after = connection.execute("SELECT epoch FROM lanegraph_graph_write_epoch").fetchone()[0]
    # One epoch per transaction; a change to a column resolution does not read (the embedding)
    # leaves its row's stamp alone.
    assert after == before + 1 and epochs["e-heron"] == after
    assert epochs["e-brandt"] == epochs["e-marchetti-org"] == before


def test_an_epoch_is_taken_once_per_transaction_and_in_commit_order(database: Database) -> None:
    with connect(database.url) as first, connect(database.url) as second:
        taken = first.execute("SELECT lanegraph_graph_write_epoch(), lanegraph_graph_write_epoch()").fetchone()
        assert taken[0] == taken[1]
        # The second writer waits for the first to commit before it can take the next epoch.
        second.execute("SET lock_timeout = '200ms'")
        try:
            second.execute("SELECT lanegraph_graph_write_epoch()")
            waited = False
        except psycopg.errors.LockNotAvailable:
            waited = True
        second.rollback()
        first.commit()
        assert waited
        assert second.execute("SELECT lanegraph_graph_write_epoch()").fetchone()[0] == taken[0] + 1


def test_a_confined_writer_neither_takes_nor_sets_an_epoch(database: Database) -> None:
    _planted(database)
    with database.connection(["a"], role=ScopedRole.WRITER) as connection:
        mine = connection.execute("SELECT lanegraph_caller_id_prefix()").fetchone()[0] + "osprey"
        connection.execute(
            "INSERT INTO entity (id, name, kind, normalized_name, scopes) VALUES (%s, 'Osprey', 'project', 'osprey', '{a}')",
            (mine,),
        )
        # The writer's transaction is still open, and the owner's merges may still take epochs.
        with connect(database.url) as owner:
            owner.execute("SET lock_timeout = '2s'")
            owner.execute("SELECT lanegraph_graph_write_epoch()")
    with database.connection() as connection:
        assert connection.execute("SELECT changed_epoch FROM entity WHERE id = %s", (mine,)).fetchone() == (0,)
