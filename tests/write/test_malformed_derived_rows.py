"""The graph-wide steps read back what they stored last time, and a writer (a tenant's confined
block) may have put rows of its own there, under its id prefix: a RAPTOR node without an embedding,
a community of entities that do not exist. An incremental refresh must neither fail on them nor
keep them: it skips and removes every row it did not make itself, and says how many."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pipelines.config import CommunitySettings, RaptorSettings
from pipelines.resources.database import Database
from pipelines.resources.scopes import ScopedRole
from pipelines.write.graph.graph_store import build_communities, build_profiles, build_raptor, refresh_entity_graph
from pipelines.write.summaries.summarizer import ExtractiveSummarizer
from tests.read.planting import EMBEDDER, Planter
from tests.write.team_notes import CHUNKS, MODEL, STATEMENTS, plant_notes, plant_people

def build_all(database: Database) -> tuple:
    summarizer = ExtractiveSummarizer(600)
    return (
        build_communities(database, CommunitySettings(), summarizer, EMBEDDER.embed, embedding_model=MODEL,
                          requested="incremental"),
        build_profiles(database, 2, summarizer, EMBEDDER.embed, embedding_model=MODEL, requested="incremental"),
        build_raptor(database, RaptorSettings(root_count=1), summarizer, EMBEDDER.embed, embedding_model=MODEL,
                     requested="incremental"),
    )


@pytest.fixture
def graph(make_schema_url: Callable[[], str]) -> Database:
    """A built graph over two scope sets: public rows, and tenant a's."""
    database = Database(make_schema_url())
    with database.connection() as connection, Planter(connection) as plant:
        for document, scopes in (("d-public", []), ("d-a", ["a"])):
            plant_notes(plant, document, CHUNKS[:4], scopes)
        plant_people(plant, STATEMENTS[:4], "d-public")
    with database.connection() as connection:
        connection.execute("UPDATE chunk SET scopes = '{a}' WHERE document_id = 'd-a'")
    refresh_entity_graph(database, EMBEDDER.embed)
    build_all(database)
    return database


def test_a_writers_malformed_rows_do_not_fail_the_owners_refresh(graph: Database) -> None:
    with graph.connection(["a"], role=ScopedRole.WRITER) as connection:
        prefix = connection.execute("SELECT lanegraph_caller_id_prefix()").fetchone()[0]
        chunk = connection.execute("SELECT id FROM chunk WHERE scopes = '{a}' ORDER BY id LIMIT 1").fetchone()[0]
        connection.execute(
            "INSERT INTO raptor_node (id, level, summary, children, embedding, scopes) "
            "VALUES (%s, 1, 'planted', ARRAY[%s], NULL, '{a}')",
            (prefix + "node", chunk),
        )
        connection.execute(
            "INSERT INTO community (id, level, label, summary, members, embedding, scopes) "
            "VALUES (%s, 0, 'planted', 'planted', ARRAY['no-such-entity'], NULL, '{a}')",
            (prefix + "community",),
        )
    communities, profiles, raptor = build_all(graph)
    assert raptor.redone.malformed == 1 and communities.redone.malformed == 1
    assert profiles.redone.malformed == 0
    with graph.connection() as connection:
        left = connection.execute(
            "SELECT id FROM raptor_node WHERE starts_with(id, %(p)s) "
            "UNION ALL SELECT id FROM community WHERE starts_with(id, %(p)s)",
            {"p": prefix},
        ).fetchall()
        assert left == []
        assert connection.execute("SELECT count(*) FROM raptor_node WHERE embedding IS NULL").fetchone()[0] == 0
        # The tenant's own tree was built again over its chunks.
        assert connection.execute("SELECT count(*) FROM raptor_node WHERE scopes = '{a}'").fetchone()[0] > 0
