"""Plant evidence rows straight into a test schema, embedded with the bundled model.

Each lane test plants what only that lane can find, so it does not wait for the write-side assets.
Embeddings may be given as `embed_as`: a text whose vector the row gets instead of its own, which
keeps a row out of (or puts it into) the dense rankings on purpose. A Planter queues its inserts
and embeds every text in one batch when its `with` block ends; EMBEDDER remembers every vector, so
a question asked twice is embedded once (the model is the slow part of these tests).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import psycopg

from pipelines.resources.embedder import LocalMiniLMEmbedder
from pipelines.write.documents.bm25_sql import REFRESH_CORPUS
from tests import ANALYZE_OWN_SCHEMA

class MemoEmbedder:
    """The bundled embedder with a memory: each distinct text is embedded once per test session."""

    model_id = LocalMiniLMEmbedder.model_id
    dimension = LocalMiniLMEmbedder.dimension

    def __init__(self) -> None:
        self._model = LocalMiniLMEmbedder()
        self._vectors: dict[str, np.ndarray] = {}
        self._question_vectors: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return _remembered(self._vectors, self._model.embed, texts, self.dimension)

    def embed_questions(self, questions: Sequence[str]) -> np.ndarray:
        return _remembered(self._question_vectors, self._model.embed_questions, questions, self.dimension)


def _remembered(
    memory: dict[str, np.ndarray], embed: Callable[[list[str]], np.ndarray], texts: Sequence[str], dimension: int
) -> np.ndarray:
    missing = list(dict.fromkeys(t for t in texts if t not in memory))
    if missing:
        memory.update(zip(missing, embed(missing), strict=True))
    return np.stack([memory[t] for t in texts]) if texts else np.zeros((0, dimension))


EMBEDDER = MemoEmbedder()


def vector(text: str) -> np.ndarray:
    return EMBEDDER.embed([text])[0]


@dataclass(frozen=True)
class _Embedding:
    text: str


class _Queue:
    """Statements waiting for their embeddings, run in order once all are embedded together."""

    def __init__(self, connection: psycopg.Connection) -> None:
        self.connection = connection
        self.pending: list[tuple[str, tuple[object, ...]]] = []

    def execute(self, sql: str, params: tuple[object, ...] = ()) -> None:
        self.pending.append((sql, params))

    def flush(self) -> None:
        EMBEDDER.embed([p.text for _, params in self.pending for p in params if isinstance(p, _Embedding)])
        for sql, params in self.pending:
            self.connection.execute(sql, tuple(vector(p.text) if isinstance(p, _Embedding) else p for p in params))
        self.pending.clear()


def vector_of(text: str) -> _Embedding:
    return _Embedding(text)


class Planter:
    def __init__(self, connection: psycopg.Connection) -> None:
        self.connection = _Queue(connection)

    def __enter__(self) -> Planter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if exc_info[0] is None:
            self.connection.flush()

    def document(self, id: str, title: str, body: str = "", *, uri: str | None = None,
                 observed_at: datetime | None = None, expires_at: datetime | None = None,
                 retracted_at: datetime | None = None, scopes: Sequence[str] = ()) -> str:
        self.connection.execute(
            "INSERT INTO document (id, title, uri, body, content_hash, observed_at, expires_at, retracted_at, scopes)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (id, title, uri, body or title, f"hash-{id}", observed_at, expires_at, retracted_at, list(scopes)),
        )
        return id

    def chunk(self, document_id: str, position: int, text: str, *, embed_as: str | None = None) -> str:
        """A chunk, embedded (as `embed_as` when given) and indexed for BM25 the way bm25.sql reads
        it: English lexemes of to_tsvector, frequency = number of positions."""
        id = f"{document_id}#{position}"
        self.connection.execute(
            "INSERT INTO chunk (id, document_id, position, text, token_count, content_hash, embedding)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (id, document_id, position, text, len(text.split()), f"hash-{id}", vector_of(embed_as or text)),
        )
        self.connection.execute(
            "INSERT INTO bm25_posting (term, chunk_id, term_frequency, chunk_length)"
            " SELECT lexeme, %s, coalesce(array_length(positions, 1), 1),"
            " sum(coalesce(array_length(positions, 1), 1)) OVER ()"
            " FROM unnest(to_tsvector('english', %s))",
            (id, text),
        )
        self.connection.execute(
            "INSERT INTO bm25_chunk_length (chunk_id, length)"
            " SELECT %s, coalesce(sum(term_frequency), 0) FROM bm25_posting WHERE chunk_id = %s",
            (id, id),
        )
        self.connection.execute(
            "INSERT INTO bm25_term (term, scopes, document_frequency, max_term_frequency, min_chunk_length)"
            " SELECT term, scopes, 1, term_frequency, chunk_length FROM bm25_posting WHERE chunk_id = %s"
            " ON CONFLICT (term, scopes) DO UPDATE SET document_frequency = bm25_term.document_frequency + 1,"
            " max_term_frequency = greatest(bm25_term.max_term_frequency, excluded.max_term_frequency),"
            " min_chunk_length = least(bm25_term.min_chunk_length, excluded.min_chunk_length)",
            (id,),
        )
        self.connection.execute(REFRESH_CORPUS)
        return id

    def filler_postings(self, *, chunks: int, terms: int, postings: int) -> None:
        """Unembedded filler chunks with BM25 postings of made-up terms no question contains."""
        self.document("filler", "Filler")
        self.connection.execute(
            "INSERT INTO chunk (id, document_id, position, text, token_count, content_hash)"
            " SELECT 'filler#' || g, 'filler', g, 'filler', 1, 'filler' FROM generate_series(1, %s) g",
            (chunks,),
        )
        self.connection.execute(
            "INSERT INTO bm25_posting (term, chunk_id, term_frequency, chunk_length)"
            " SELECT term, chunk_id, 1, count(*) OVER (PARTITION BY chunk_id) FROM ("
            " SELECT DISTINCT 'zzfiller' || (g %% %s) AS term, 'filler#' || (g %% %s + 1) AS chunk_id"
            " FROM generate_series(1, %s) g) AS filler",
            (terms, chunks, postings),
        )
        self.connection.execute(
            "INSERT INTO bm25_chunk_length (chunk_id, length) SELECT chunk_id, count(*) FROM bm25_posting"
            " WHERE chunk_id LIKE 'filler#%%' GROUP BY chunk_id"
        )
        self.connection.execute(
            "INSERT INTO bm25_term (term, scopes, document_frequency, max_term_frequency, min_chunk_length)"
            " SELECT term, scopes, count(*), max(term_frequency), min(chunk_length)"
            " FROM bm25_posting WHERE term LIKE 'zzfiller%%' GROUP BY term, scopes"
        )
        self.connection.execute(REFRESH_CORPUS)
        self.connection.execute(ANALYZE_OWN_SCHEMA)

    def entity_kind(self, name: str, description: str) -> str:
        self.connection.execute(
            "INSERT INTO entity_kind (name, description, embedding) VALUES (%s, %s, %s)"
            " ON CONFLICT (name) DO NOTHING",
            (name, description, vector_of(description)),
        )
        return name

    def entity(self, name: str, kind: str, *, embed_as: str | None = None,
               aliases: Sequence[str] = ()) -> str:
        id = f"{kind}:{name.lower()}"
        self.connection.execute(
            "INSERT INTO entity (id, name, kind, normalized_name, aliases, embedding)"
            " VALUES (%s, %s, %s, %s, %s, %s)",
            (id, name, kind, name.lower(), list(aliases), vector_of(embed_as or name)),
        )
        return id

    def mention(self, entity_id: str, chunk_id: str, name: str, kind: str) -> None:
        """The chunk names the entity, as the extractor records it."""
        self.connection.execute(
            "INSERT INTO entity_mention (entity_id, chunk_id, document_id, name, kind, mentions)"
            " SELECT %s, id, document_id, %s, %s, 1 FROM chunk WHERE id = %s",
            (entity_id, name, kind, chunk_id),
        )

    def fact(self, id: str, subject_id: str, predicate: str, statement: str, *,
             object_id: str | None = None, object_value: str | None = None,
             embed_as: str | None = None, source_chunk_id: str | None = None,
             document_id: str | None = None, perspective: str = "",
             valid_from: datetime | None = None, recorded_to: datetime | None = None) -> str:
        self.connection.execute(
            "INSERT INTO fact (id, subject_id, predicate, object_id, object_value, statement, perspective,"
            " embedding, source_chunk_id, document_id, valid_from, recorded_to)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (id, subject_id, predicate, object_id, object_value, statement, perspective,
             vector_of(embed_as or statement), source_chunk_id, document_id, valid_from, recorded_to),
        )
        return id

    def session_item(self, id: str, text: str, *, promoted_at: datetime | None = None) -> str:
        self.connection.execute(
            "INSERT INTO session_item (id, text, embedding, promoted_at) VALUES (%s, %s, %s, %s)",
            (id, text, vector_of(text), promoted_at),
        )
        return id

    def profile(self, entity_id: str, summary: str) -> str:
        self.connection.execute(
            "INSERT INTO profile (entity_id, summary, fact_count, embedding) VALUES (%s, %s, 1, %s)",
            (entity_id, summary, vector_of(summary)),
        )
        return entity_id

    def community(self, id: str, label: str, summary: str, members: Sequence[str]) -> str:
        self.connection.execute(
            "INSERT INTO community (id, level, label, summary, members, embedding) VALUES (%s, 0, %s, %s, %s, %s)",
            (id, label, summary, list(members), vector_of(f"{label}: {summary}")),
        )
        return id

    def raptor_node(self, id: str, level: int, summary: str, children: Sequence[str]) -> str:
        self.connection.execute(
            "INSERT INTO raptor_node (id, level, summary, children, embedding) VALUES (%s, %s, %s, %s, %s)",
            (id, level, summary, list(children), vector_of(summary)),
        )
        return id


def plant_heron(plant: Planter) -> tuple[str, str, str]:
    """Project Heron, built in Porto: the project and place kinds, the document `heron` with one chunk
    saying so, and the two entities. Returns (chunk, heron, porto) for the facts a test states."""
    plant.entity_kind("project", "A project the company runs.")
    plant.entity_kind("place", "A place: a city or site.")
    plant.document("heron", "Project Heron")
    chunk = plant.chunk("heron", 0, "Project Heron is built in Porto.")
    return chunk, plant.entity("Project Heron", "project"), plant.entity("Porto", "place")
