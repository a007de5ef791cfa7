-- Where documents come from. A source is one file: a markdown or text file (one document) or a JSONL
-- file (one document per line). Its key is the Dagster partition key of the per-document assets, so
-- a new, changed or removed file is processed alone, and a JSONL corpus of thousands of passages is
-- one partition rather than thousands (Dagster records events per partition).
CREATE TABLE IF NOT EXISTS document_source (
    key                text PRIMARY KEY,
    path               text NOT NULL,
    kind               text NOT NULL CHECK (kind IN ('markdown', 'text', 'jsonl')),
    -- Size and modification time: registering a folder again re-reads only files whose signature moved.
    signature          text NOT NULL,
    -- sha256 of the file's bytes when last registered; NULL once the file has disappeared.
    registered_hash    text,
    -- sha256 of the bytes the documents asset last processed (NULL after it retracted a missing
    -- file): a source whose two hashes differ still has work to do.
    materialized_hash  text,
    registered_at      timestamptz NOT NULL DEFAULT now(),
    missing_since      timestamptz
);

ALTER TABLE document ADD COLUMN IF NOT EXISTS source_key text REFERENCES document_source (key);
-- Fingerprint of the content and chunking settings the document's chunks were cut from, so an
-- unchanged document is not chunked again and a settings change re-chunks everything.
ALTER TABLE document ADD COLUMN IF NOT EXISTS chunked_with text;
CREATE INDEX IF NOT EXISTS document_source_key_idx ON document (source_key);
