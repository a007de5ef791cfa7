-- Which chunk names which entity, and with what kind the extractor saw it: the evidence behind an
-- entity's kind (the majority of its mentions) and its scopes, and what lets a changed or retracted
-- document take its mentions with it.
CREATE TABLE IF NOT EXISTS entity_mention (
    entity_id    text NOT NULL REFERENCES entity (id) ON DELETE CASCADE,
    chunk_id     text NOT NULL REFERENCES chunk (id) ON DELETE CASCADE,
    document_id  text NOT NULL REFERENCES document (id) ON DELETE CASCADE,
    name         text NOT NULL,
    kind         text NOT NULL REFERENCES entity_kind (name),
    -- How often the chunk names it; a stated role ("X is an engineer") counts as several.
    -- How often the chunk names it; a stated role ("X is an engineer") counts as several.
    mentions     integer NOT NULL CHECK (mentions > 0),
    scopes       text[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (entity_id, chunk_id, name, kind)
);
CREATE INDEX IF NOT EXISTS entity_mention_document_idx ON entity_mention (document_id);
CREATE INDEX IF NOT EXISTS entity_mention_chunk_idx ON entity_mention (chunk_id);

-- Aliases hold normalised (lower-case) names, so "heron" finds Project Heron through this index.
CREATE INDEX IF NOT EXISTS entity_aliases_idx ON entity USING gin (aliases);

-- Fact ids are derived from the claim; a claim believed again after it was closed, or re-recorded
-- with a new validity, gets the next version of the same id ("f-…", "f-….2", ...).
CREATE OR REPLACE FUNCTION lanegraph_next_fact_id(base text) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN NOT EXISTS (SELECT 1 FROM fact WHERE id = base) THEN base
        ELSE base || '.' || (
            SELECT count(*) + 1 FROM fact WHERE id = base OR id LIKE base || '.%'
        )::text
    END
$$;

-- On a database that already has row security (0040 ran before this file existed), put the new
-- table under it too; on a fresh one 0040 runs later and covers it.
DO $secure$
BEGIN
    IF to_regproc('lanegraph_apply_row_security') IS NOT NULL THEN
        PERFORM lanegraph_apply_row_security();
    END IF;
END
$secure$;
