"""The synthetic corpus has the structure the benchmark relies on, and loads into a real schema."""

from __future__ import annotations

import numpy as np
import psycopg

from pipelines.bench.loader import load_corpus
from pipelines.bench.synthetic import CorpusShape, SyntheticCorpus, pseudo_word


def test_pseudo_words_are_distinct_lower_case_letters() -> None:
    words = [pseudo_word(i) for i in range(5_000)]
    assert len(set(words)) == len(words)
    assert all(word.isalpha() and word.islower() for word in words)


def test_same_seed_gives_the_same_rows() -> None:
    first = next(SyntheticCorpus(CorpusShape(200, 16)).content_blocks())
    second = next(SyntheticCorpus(CorpusShape(200, 16)).content_blocks())
    assert [row[3] for row in first.chunks] == [row[3] for row in second.chunks]
    assert np.array_equal(first.chunks[0][6], second.chunks[0][6])


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
    texts = {row[0]: row[3] for block in corpus.content_blocks() for row in block.chunks}
    for question in corpus.queries(5):
        assert question.mentions[0] in question.text
        assert question.mentions[0] in texts[question.target_chunk_id]


def test_load_fills_every_table_and_rebuilds_the_indexes(make_schema_url, embedding_dimension) -> None:
    url = make_schema_url()
    corpus = SyntheticCorpus(CorpusShape(200, embedding_dimension))
    result = load_corpus(url, corpus, raptor_max_levels=4, raptor_root_count=3)
    for table in ("document", "chunk", "fact", "entity", "bm25_posting", "bm25_term", "profile",
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
    assert chunks == 200 and hnsw >= 8 and orphans == 0
