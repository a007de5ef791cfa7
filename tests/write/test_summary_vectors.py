"""Where the summaries' vectors come from: an extractive community or RAPTOR node gets the normalized
mean of its sources' vectors without a model call; an abstractive summary and every profile get their
text embedded. Built for real on a small graph planted in its own schema."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

from pipelines.config import CommunitySettings, RaptorSettings
from pipelines.resources.database import Database
from pipelines.write.graph.graph_store import build_communities, build_profiles, build_raptor, refresh_entity_graph
from pipelines.write.summaries.summarizer import ExtractiveSummarizer, Summarizer
from pipelines.write.summaries.summary_vectors import SummaryVectors, unit
from tests.read.planting import EMBEDDER, Planter
from tests.write.team_notes import CHUNKS, MODEL, STATEMENTS, plant_notes, plant_people

class Paraphrasing:
    """An abstractive summarizer's stand-in: its summaries are not its sources' sentences."""

    name = "paraphrase"
    max_chars = 600
    quotes_sources = False

    def summarize(self, texts: Sequence[str], topic: str = "") -> str:
        return f"A paraphrase of {len(texts)} sentences about {topic or 'the corpus'}."


class Counting:
    """The bundled embedder, remembering every text it was asked to embed."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += texts
        return EMBEDDER.embed(texts)


@pytest.fixture
def graph(make_schema_url: Callable[[], str]) -> Database:
    database = Database(make_schema_url())
    with database.connection() as connection, Planter(connection) as plant:
        plant_notes(plant, "d1", CHUNKS)
        people = plant_people(plant, STATEMENTS, "d1")
        # A second fact stated by the same sentence: one source of the summary, not two.
        plant.fact("f-again", people["Aino"], "leads", STATEMENTS[0][2], object_id=people["Mika"], document_id="d1")
    refresh_entity_graph(database, EMBEDDER.embed)
    return database


def rows(database: Database, statement: str) -> list[tuple]:
    with database.connection() as connection:
        return connection.execute(statement).fetchall()


def stored(embedding: object) -> np.ndarray:
    return np.asarray(embedding.to_numpy(), dtype=np.float64)  # type: ignore[attr-defined]


def mean_of(vectors: Sequence[np.ndarray]) -> np.ndarray:
    return unit(np.mean(np.asarray(vectors, dtype=np.float64), axis=0))


def statements_among(database: Database, members: Sequence[str]) -> list[str]:
    return sorted({
        statement for subject, other, statement in rows(database, "SELECT subject_id, object_id, statement FROM fact")
        if subject in members and (other is None or other in members)
    })


def build_graph(database: Database, summarizer: Summarizer, embed: Counting) -> None:
    build_communities(database, CommunitySettings(), summarizer, embed.embed, embedding_model=MODEL)
    build_profiles(database, 2, summarizer, embed.embed, embedding_model=MODEL)
    build_raptor(database, RaptorSettings(root_count=1), summarizer, embed.embed, embedding_model=MODEL)


def test_an_extractive_community_is_the_mean_of_its_distinct_statements(graph: Database) -> None:
    counting = Counting()
    build_graph(graph, ExtractiveSummarizer(600), counting)
    communities = rows(graph, "SELECT members, embedding FROM community")
    assert communities
    for members, embedding in communities:
        statements = statements_among(graph, members)
        assert statements
        assert np.allclose(stored(embedding), mean_of(list(EMBEDDER.embed(statements))), atol=1e-6)
    # Only the profiles' texts went to the model.
    profiles = rows(graph, "SELECT summary FROM profile")
    assert sorted(counting.texts) == sorted(summary for (summary,) in profiles)


def test_an_extractive_raptor_node_is_the_mean_of_its_childrens_vectors(graph: Database) -> None:
    build_graph(graph, ExtractiveSummarizer(600), Counting())
    vectors = {id: stored(embedding) for id, embedding in rows(graph, "SELECT id, embedding FROM chunk")}
    nodes = rows(graph, "SELECT id, children, embedding, level FROM raptor_node ORDER BY level")
    # Level 1 means chunks' vectors, the levels above means of means.
    assert max(level for *_, level in nodes) > 1
    for id, children, embedding, _ in nodes:
        vectors[id] = stored(embedding)
        assert np.allclose(vectors[id], mean_of([vectors[child] for child in children]), atol=1e-6)


def test_abstractive_summaries_and_every_profile_embed_their_text(graph: Database) -> None:
    build_graph(graph, Paraphrasing(), Counting())
    texts = [
        *(f"{label}: {summary}" for label, summary in rows(graph, "SELECT label, summary FROM community")),
        *(summary for (summary,) in rows(graph, "SELECT summary FROM profile")),
        *(summary for (summary,) in rows(graph, "SELECT summary FROM raptor_node")),
    ]
    vectors = [
        stored(embedding) for table in ("community", "profile", "raptor_node")
        for (embedding,) in rows(graph, f"SELECT embedding FROM {table}")
    ]
    assert len(texts) == len(vectors) > 3
    assert np.allclose(np.asarray(vectors), EMBEDDER.embed(texts), atol=1e-6)


def test_switching_the_summarizer_rebuilds_rather_than_mixing_vectors(graph: Database) -> None:
    build_graph(graph, ExtractiveSummarizer(600), Counting())
    counting = Counting()
    build_communities(graph, CommunitySettings(), Paraphrasing(), counting.embed, embedding_model=MODEL,
                      requested="incremental")
    assert sorted(counting.texts) == sorted(f"{label}: {summary}" for label, summary in rows(graph, "SELECT label, summary FROM community"))


def test_a_summary_whose_sources_have_no_vector_yet_is_embedded_from_its_text() -> None:
    counting = Counting()
    sources = EMBEDDER.embed(["Aino leads the firmware team.", "Mika reviews the tests."])
    vectors = SummaryVectors(from_sources=True, embed=counting.embed)(
        ["two sources", "no source yet"], [sources, np.zeros((0, sources.shape[1]))],
    )
    assert counting.texts == ["no source yet"]
    assert np.allclose(vectors, [mean_of(list(sources)), EMBEDDER.embed(["no source yet"])[0]], atol=1e-6)
