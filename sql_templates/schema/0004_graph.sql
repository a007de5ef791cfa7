-- The knowledge graph: typed entities and bitemporal subject-predicate-object facts.
CREATE TABLE IF NOT EXISTS entity_kind (
    name         text PRIMARY KEY,
    description  text NOT NULL DEFAULT '',
    embedding    vector({{embedding_dimension}}),
    scopes       text[] NOT NULL DEFAULT '{}'
);

CREATE TABLE IF NOT EXISTS entity (
    id               text PRIMARY KEY,
    name             text NOT NULL,
    kind             text NOT NULL REFERENCES entity_kind (name),
    normalized_name  text NOT NULL,
    aliases          text[] NOT NULL DEFAULT '{}',
    embedding        vector({{embedding_dimension}}),
    degree           integer NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL DEFAULT now(),
    scopes           text[] NOT NULL DEFAULT '{}',
    UNIQUE (kind, normalized_name)
);
CREATE INDEX IF NOT EXISTS entity_name_trgm_idx ON entity USING gin (lower(name) gin_trgm_ops);
CREATE INDEX IF NOT EXISTS entity_name_lower_idx ON entity (lower(name));

CREATE TABLE IF NOT EXISTS fact (
    id               text PRIMARY KEY,
    subject_id       text NOT NULL REFERENCES entity (id) ON DELETE CASCADE,
    predicate        text NOT NULL,
    object_id        text REFERENCES entity (id) ON DELETE CASCADE,
    -- A state fact ("Atlas is paused") has a literal value instead of an object entity.
    object_value     text,
    statement        text NOT NULL,
    perspective      text NOT NULL DEFAULT '',
    embedding        vector({{embedding_dimension}}),
    source_chunk_id  text REFERENCES chunk (id) ON DELETE SET NULL,
    document_id      text REFERENCES document (id) ON DELETE CASCADE,
    -- When the claim holds in the world ...
    valid_from       timestamptz,
    valid_to         timestamptz,
    -- ... and when the system believed it (closed on supersession or retraction, never deleted).
    recorded_from    timestamptz NOT NULL DEFAULT now(),
    recorded_to      timestamptz,
    access_count     integer NOT NULL DEFAULT 0,
    last_accessed    timestamptz,
    scopes           text[] NOT NULL DEFAULT '{}',
    CHECK (object_id IS NOT NULL OR object_value IS NOT NULL),
    CHECK (valid_to IS NULL OR valid_from IS NULL OR valid_to >= valid_from),
    CHECK (recorded_to IS NULL OR recorded_to >= recorded_from)
);
-- Separate indexes: the neighbour lane joins subject and object through one index each.
CREATE INDEX IF NOT EXISTS fact_subject_idx ON fact (subject_id);
CREATE INDEX IF NOT EXISTS fact_object_idx ON fact (object_id);
CREATE INDEX IF NOT EXISTS fact_source_chunk_idx ON fact (source_chunk_id);
CREATE INDEX IF NOT EXISTS fact_document_idx ON fact (document_id);
-- Consolidation: one believed row per statement, perspective and source.
CREATE UNIQUE INDEX IF NOT EXISTS fact_believed_statement_idx
    ON fact (perspective, lower(statement), subject_id, predicate, coalesce(object_id, ''), coalesce(source_chunk_id, ''))
    WHERE recorded_to IS NULL;

-- Currently believed and currently valid.
CREATE OR REPLACE VIEW live_fact AS
SELECT *
FROM fact
WHERE recorded_to IS NULL
  AND (valid_from IS NULL OR valid_from <= now())
  AND (valid_to IS NULL OR valid_to > now());
