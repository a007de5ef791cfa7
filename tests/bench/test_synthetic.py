"""The synthetic corpus has the structure the benchmark relies on, and loads into a real schema."""

from __future__ import annotations

import numpy as np
import psycopg

from pipelines.bench.loader import MARKER_TABLE, load_corpus, recorded_load
from pipelines.bench.synthetic import ENTITY_KINDS, CorpusShape, SyntheticCorpus, pseudo_word

MENTION_INDEXES = {"entity_mention_pkey", "entity_mention_chunk_idx", "entity_mention_document_idx"}


def test_pseudo_words_are_distinct_lower_case_letters() -> None:
    words = [pseudo_word(i) for i in range(5_000)]
    assert len(set(words)) == len(words)
    assert all(word.isalpha() and word.islower() for word in words)


def test_same_seed_gives_the_same_rows() -> None:
    first = next(SyntheticCorpus(CorpusShape(200, 16)).content_blocks())
    second = next(SyntheticCorpus(CorpusShape(200, 16)).content_blocks())
    assert [row[3] for row in first.chunks] == [row[3] for row in second.chunks]
    assert np.array_equal(first.chunks[0][6], second.chunks[0][6])
    assert first.mentions == second.mentions


def test_every_chunk_mentions_the_entities_whose_names_its_text_holds() -> None:
    corpus = SyntheticCorpus(CorpusShape(400, 16))
    entities = {row[0]: row for row in corpus.entities()}
    blocks = list(corpus.content_blocks())
    chunks = {row[0]: row for block in blocks for row in block.chunks}
    mentions = [row for block in blocks for row in block.mentions]
    assert {row[1] for row in mentions} == set(chunks), "every chunk names at least one entity"
    assert len({(entity, chunk) for entity, chunk, *_ in mentions}) == len(mentions), "one row per (entity, chunk)"
    for entity_id, chunk_id, document_id, name, kind, count, scopes in mentions:
        chunk = chunks[chunk_id]
        assert name in chunk[3] and document_id == chunk[1]
        assert (name, kind) == (entities[entity_id][1], entities[entity_id][2]) and kind in ENTITY_KINDS
        assert count == 1 and scopes == []
    # A document is titled with the entity its every chunk names: the bridge's titled links exist.
    titles = {row[0]: row[1] for block in blocks for row in block.documents}
    assert all(any(row[3] == titles[chunk[1]] for row in mentions if row[1] == chunk[0]) for chunk in chunks.values())
    # Popular entities are named across documents: the bridge's named links exist too.
    documents_per_entity = {}
    for entity_id, _, document_id, *_ in mentions:
        documents_per_entity.setdefault(entity_id, set()).add(document_id)
    assert max(len(documents) for documents in documents_per_entity.values()) > 1


def test_chunks_of_one_document_are_neighbours_and_other_topics_are_not() -> None:
    corpus = SyntheticCorpus(CorpusShape(400, 64))
    chunks = [row for block in corpus.content_blocks() for row in block.chunks]
    vectors = np.stack([row[6] for row in chunks])
    documents = np.array([row[1] for row in chunks])
    topics = np.array([corpus.document_topic[int(d[len("syn-d"):])] for d in documents])
    similarity = vectors @ vectors.T
    off_diagonal = ~np.eye(len(chunks), dtype=bool)
    same_document = similarity[(documents[:, None] == documents[None, :]) & off_diagonal].mean()
    other_topic = similarity[topics[:, None] != topics[None, :]].mean()
    assert same_document > 0.5 > 0.2 > other_topic


def test_questions_name_an_entity_their_target_chunk_mentions() -> None:
    corpus = SyntheticCorpus(CorpusShape(200, 16))
    blocks = list(corpus.content_blocks())
    texts = {row[0]: row[3] for block in blocks for row in block.chunks}
    corpus_mentions = {(row[1], row[3]) for block in blocks for row in block.mentions}
    for question in corpus.queries(5):
        assert question.mentions[0] in question.text
        assert question.mentions[0] in texts[question.target_chunk_id]
        assert (question.target_chunk_id, question.mentions[0]) in corpus_mentions


def test_load_fills_every_table_and_rebuilds_the_indexes(make_schema_url, embedding_dimension) -> None:
    url = make_schema_url()
    corpus = SyntheticCorpus(CorpusShape(200, embedding_dimension))
    result = load_corpus(url, corpus, raptor_max_levels=4, raptor_root_count=3)
    for table in ("document", "chunk", "entity_mention", "fact", "entity", "bm25_posting", "bm25_term", "profile",
                  "community", "raptor_node", "session_item"):
        assert result.table_rows[table] > 0, table
    assert {build.name for build in result.index_builds} >= {"chunk_embedding_hnsw", "fact_embedding_hnsw"}
    with psycopg.connect(url) as connection:
        (chunks,) = connection.execute("SELECT count(*) FROM chunk").fetchone()
        (hnsw,) = connection.execute(
            "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexdef LIKE '%USING hnsw%'"
        ).fetchone()
        (orphans,) = connection.execute(
            "SELECT count(*) FROM fact WHERE subject_id NOT IN (SELECT id FROM entity)"
        ).fetchone()
        mentions, unnamed, mismatched, unmentioned = connection.execute(
            """
            SELECT count(*),
                   count(*) FILTER (WHERE strpos(chunk.text, m.name) = 0),
                   count(*) FILTER (WHERE chunk.document_id <> m.document_id OR entity.kind <> m.kind
                                    OR entity.name <> m.name),
                   (SELECT count(*) FROM chunk
                    WHERE NOT EXISTS (SELECT 1 FROM entity_mention WHERE chunk_id = chunk.id))
            FROM entity_mention AS m
            JOIN chunk ON chunk.id = m.chunk_id
            JOIN entity ON entity.id = m.entity_id
            """
        ).fetchone()
        mention_indexes = {
            name for (name,) in connection.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'entity_mention'"
            )
        }
        (primary_key,) = connection.execute(
            "SELECT pg_get_indexdef('entity_mention_pkey'::regclass)"
        ).fetchone()
    assert chunks == 200 and hnsw >= 8 and orphans == 0
    assert mentions == result.table_rows["entity_mention"] and unnamed == mismatched == unmentioned == 0
    assert mention_indexes >= MENTION_INDEXES
    assert "(entity_id, chunk_id, name, kind)" in primary_key
    assert {"entity_mention_chunk_idx", "entity_mention_document_idx"} <= {build.name for build in result.index_builds}


def test_a_kept_corpus_from_an_older_generator_is_not_reused(make_schema_url, embedding_dimension) -> None:
    url = make_schema_url()
    shape = CorpusShape(120, embedding_dimension)
    load_corpus(url, SyntheticCorpus(shape), raptor_max_levels=2, raptor_root_count=3)
    assert recorded_load(url, shape.as_dict()) is not None
    # The marker as a generator without entity_mention rows wrote it: no version in the shape.
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(
            f"UPDATE {MARKER_TABLE} SET load = jsonb_set(load, '{{shape}}', (load -> 'shape') - 'generator_version')"
        )
    assert recorded_load(url, shape.as_dict()) is None
