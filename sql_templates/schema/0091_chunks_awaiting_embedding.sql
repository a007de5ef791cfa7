-- Chunks and their embeddings are written by separate steps (chunks, then chunk_embeddings in
-- batches), so for a while a document has chunks without vectors, found by BM25 and titles but not by
-- the dense ranking. The sources lane shows a document only once none of its chunks awaits its
-- embedding (sql_templates/lanes/sources/keep.sql): every lane finds it at once, or none does. This
-- index holds only the chunks awaiting one, so that test is one probe of an index that is empty
-- between ingests.
CREATE INDEX IF NOT EXISTS chunk_awaiting_embedding_idx ON chunk (document_id) WHERE embedding IS NULL;
