"""A document being ingested is in no lane until it is whole: chunks are written by one step and
their embeddings by another, in batches, so between them a reader could find a chunk by BM25 or
its title that the dense ranking cannot, or half of a document's chunks. Finds must show all of a
document (every chunk embedded) or none of it."""

from __future__ import annotations

import asyncio
import threading

import pytest

from pipelines.config import LanegraphConfig
from pipelines.fusion import BM25Args
from pipelines.fusion.postgres_client import PostgresQueryClient
from pipelines.read.find import find
from pipelines.resources.database import Database
from pipelines.write.documents.document_sql import WRITE_EMBEDDING
from tests.read.planting import EMBEDDER, Planter, vector

TEXTS = (
    "The Kestrel turbine was assembled in Tampere during the winter.",
    "Kestrel turbine blades are balanced in the Tampere workshop.",
    "The Kestrel turbine passed its Tampere acceptance test in March.",
)
QUESTION = "Where was the Kestrel turbine assembled and tested in Tampere?"


@pytest.fixture()
def kestrel(database: Database) -> Database:
    """The document as the chunks step leaves it: chunks indexed for BM25, no embeddings yet."""
    with database.connection() as connection:
        with Planter(connection) as plant:
            plant.document("kestrel", "Kestrel turbine")
            for position, text in enumerate(TEXTS):
                plant.chunk("kestrel", position, text)
        connection.execute("UPDATE chunk SET embedding = NULL, embedding_model = NULL, embedded_hash = NULL")
    return database


def kestrel_chunks(database: Database, config: LanegraphConfig, scopes: list[str] | None) -> set[str]:
    result = find(database, QUESTION, config=config, embedder=EMBEDDER, scopes=scopes)
    return {c.evidence_id for c in result.candidates if c.document_id == "kestrel" or "kestrel#" in c.evidence_id}


def embed(database: Database, positions: list[int]) -> None:
    with database.connection() as connection:
        connection.cursor().executemany(WRITE_EMBEDDING, [
            {"id": f"kestrel#{p}", "embedding": vector(TEXTS[p]), "model": EMBEDDER.model_id,
             "content_hash": f"hash-kestrel#{p}"}
            for p in positions
        ])


@pytest.mark.parametrize("scopes", [None, []])
def test_a_document_is_found_only_once_every_chunk_has_its_embedding(
    kestrel: Database, config: LanegraphConfig, scopes: list[str] | None
) -> None:
    assert kestrel_chunks(kestrel, config, scopes) == set()
    embed(kestrel, [0, 1])
    assert kestrel_chunks(kestrel, config, scopes) == set()
    embed(kestrel, [2])
    assert kestrel_chunks(kestrel, config, scopes)


def test_a_document_without_chunks_is_found_by_no_lane(database: Database, config: LanegraphConfig) -> None:
    with database.connection() as connection:
        with Planter(connection) as plant:
            plant.document("kestrel", "Kestrel turbine Tampere", body=" ".join(TEXTS))
    assert kestrel_chunks(database, config, None) == set()


def test_readers_polling_during_batched_embedding_see_the_document_whole_or_not_at_all(
    kestrel: Database, config: LanegraphConfig
) -> None:
    seen: list[tuple[set[str], int]] = []
    done = threading.Event()
    polls = threading.Semaphore(0)

    def poll() -> None:
        while not done.is_set():
            found = kestrel_chunks(kestrel, config, [])
            polls.release()
            if found:
                with kestrel.connection() as connection:
                    waiting = connection.execute(
                        "SELECT count(*) FROM chunk WHERE document_id = 'kestrel' AND embedding IS NULL"
                    ).fetchone()[0]
                seen.append((found, waiting))

    reader = threading.Thread(target=poll)
    reader.start()
    try:
        for position in range(len(TEXTS)):
            embed(kestrel, [position])  # one batch a transaction, as chunk_embeddings writes them
            # Let the reader find twice in each state; the second find started after the batch.
            for _ in range(2):
                assert polls.acquire(timeout=60)
    finally:
        done.set()
        reader.join()
    # Embeddings are never removed here: a find that showed the document while a chunk still
    # waited would be caught by the count that followed it.
    assert seen and all(waiting == 0 for _, waiting in seen), seen


def test_the_bm25_primitive_finds_a_document_only_once_every_chunk_has_its_embedding(kestrel: Database) -> None:
    client = PostgresQueryClient(kestrel)

    def bm25_chunks() -> set[str]:
        return {item.entity_id for item in asyncio.run(client.bm25(BM25Args("Kestrel turbine Tampere"), "1", "words", 10))}

    assert bm25_chunks() == set()
    embed(kestrel, [0, 1])
    assert bm25_chunks() == set()
    embed(kestrel, [2])
    assert bm25_chunks() == {f"chunk:kestrel#{position}" for position in range(len(TEXTS))}


def test_a_documents_facts_are_found_only_once_every_chunk_has_its_embedding(
    kestrel: Database, config: LanegraphConfig
) -> None:
    # A changed document as its run leaves it between steps: new chunks awaiting embeddings, and
    # the facts extracted from it so far.
    with kestrel.connection() as connection, Planter(connection) as plant:
        plant.entity_kind("product", "a made thing")
        turbine = plant.entity("Kestrel turbine", "product")
        plant.mention(turbine, "kestrel#0", "Kestrel turbine", "product")
        plant.fact("f-kestrel", turbine, "assembled_in", "The Kestrel turbine was assembled in Tampere.",
                   object_value="Tampere", source_chunk_id="kestrel#0", document_id="kestrel")

    def kestrel_facts() -> set[str]:
        result = find(kestrel, QUESTION, config=config, embedder=EMBEDDER, scopes=None)
        return {candidate.evidence_id for candidate in result.candidates if candidate.fact_id}

    assert kestrel_facts() == set()
    embed(kestrel, [0, 1])
    assert kestrel_facts() == set()
    embed(kestrel, [2])
    assert kestrel_facts() == {"fact:f-kestrel"}
