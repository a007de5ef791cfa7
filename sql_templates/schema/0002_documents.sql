-- Source documents and their chunks. Ids are text derived from the source (given id, URI or content
-- hash; chunk = document id + position) so the same corpus gets the same ids in every database,
-- which lets results from several shards fuse on one key.
CREATE TABLE IF NOT EXISTS document (
    id            text PRIMARY KEY,
    title         text NOT NULL DEFAULT '',
    uri           text,
    body          text NOT NULL,
    content_hash  text NOT NULL,
    observed_at   timestamptz,
    expires_at    timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    -- Set when the source disappears: the row stays so retraction is visible and auditable.
    retracted_at  timestamptz,
    scopes        text[] NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS document_title_lower_idx ON document (lower(title));

CREATE TABLE IF NOT EXISTS chunk (
    id              text PRIMARY KEY,
    document_id     text NOT NULL REFERENCES document (id) ON DELETE CASCADE,
    position        integer NOT NULL,
    text            text NOT NULL,
    token_count     integer NOT NULL,
    content_hash    text NOT NULL,
    embedding       vector({{embedding_dimension}}),
    -- Which model produced the embedding and from which text, so a model change is a backfill.
    embedding_model text,
    embedded_hash   text,
    scopes          text[] NOT NULL DEFAULT '{}',
    UNIQUE (document_id, position)
);
