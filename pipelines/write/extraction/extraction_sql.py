"""SQL of the entities_and_facts step: staging, resolution ahead of the lock, and the call of the
merge that resolves entities, consolidates facts and supersedes states (migrations 0110, 0111,
0113, 0114 and 0115), and the move of new names into the trigram index (0116).

Statements only; `extraction_store` runs them. Every value is a bind parameter.
"""
from pipelines.resources.database import schema_advisory_lock

# The ontology's kinds exist before any entity names them; a changed description drops the
# embedding that described the old one (the entity_graph step embeds kinds without one).
REGISTER_ENTITY_KINDS = """
INSERT INTO entity_kind (name, description)
SELECT * FROM unnest(%(names)s::text[], %(descriptions)s::text[])
ON CONFLICT (name) DO UPDATE SET
    description = excluded.description,
    embedding = CASE WHEN entity_kind.description = excluded.description THEN entity_kind.embedding END
WHERE entity_kind.description IS DISTINCT FROM excluded.description
"""

DOCUMENTS = """
SELECT d.id, d.scopes, d.retracted_at IS NOT NULL AS retracted
FROM document d
WHERE d.id = ANY(%(document_ids)s)
"""

# A turn's addressee is the other participant of a two-person conversation (a user and an
# assistant, or two friends); with more speakers "you" names nobody for sure. The participants
# are read once per conversation in the batch, through document_turn_idx.
DOCUMENT_CHUNKS = r"""
WITH batch AS (
    SELECT c.id, c.document_id, c.position, c.text, d.title_name,
           coalesce(substring(d.title from '\(([^()]*)\)\s*$'), '') AS title_qualifier,
           d.conversation, d.speaker, (d.observed_at AT TIME ZONE 'UTC')::date AS observed_on
    FROM chunk c JOIN document d ON d.id = c.document_id
    WHERE c.document_id = ANY(%(document_ids)s)
),
participants AS (
    SELECT d.conversation, array_agg(DISTINCT d.speaker) AS speakers
    FROM document d
    WHERE d.conversation IN (SELECT batch.conversation FROM batch)
      AND d.retracted_at IS NULL
    GROUP BY d.conversation
)
SELECT batch.id, batch.document_id, batch.text, batch.title_name, batch.title_qualifier,
       coalesce(batch.speaker, '') AS speaker,
       coalesce(CASE WHEN cardinality(participants.speakers) = 2
                     THEN (array_remove(participants.speakers, batch.speaker))[1] END, '') AS addressee,
       batch.observed_on
FROM batch LEFT JOIN participants ON participants.conversation = batch.conversation
ORDER BY batch.document_id, batch.position
"""

# Serialises writers of one schema's graph: resolution reads entities and then writes them, and two
# runs interleaving those steps would create the same entity twice under different spellings. Only
# the merge takes it; extraction, staging and resolution ahead run beside another run's merge.
GRAPH_WRITE_LOCK = schema_advisory_lock("lanegraph.entities_and_facts", "entity")

# A batch's staged extractions, in temporary tables of the run's session that its commit drops: a
# killed run leaves nothing staged behind, and two runs never see each other's. The merge functions
# (migrations 0111 and 0114) read them; the working tables hold what they resolve (ahead of the
# lock, then under it), state and have written.
CREATE_STAGING_TABLES = """
CREATE TEMPORARY TABLE lanegraph_staged_document (
    ordinal integer PRIMARY KEY, document_id text NOT NULL, scopes text[] NOT NULL, retracted boolean NOT NULL
) ON COMMIT DROP;
CREATE TEMPORARY TABLE lanegraph_staged_name (
    document_id text NOT NULL, name text NOT NULL, normalized text NOT NULL, PRIMARY KEY (document_id, name)
) ON COMMIT DROP;
CREATE TEMPORARY TABLE lanegraph_staged_entity (
    document_id text NOT NULL, normalized text NOT NULL, kind text NOT NULL, spelled text NOT NULL,
    new_id text NOT NULL, PRIMARY KEY (document_id, normalized)
) ON COMMIT DROP;
CREATE TEMPORARY TABLE lanegraph_staged_mention (
    document_id text NOT NULL, name text NOT NULL, chunk_id text NOT NULL, spelled text NOT NULL,
    kind text NOT NULL, mentions integer NOT NULL
) ON COMMIT DROP;
CREATE INDEX ON lanegraph_staged_mention (document_id);
CREATE TEMPORARY TABLE lanegraph_staged_fact (
    document_id text NOT NULL, ordinal integer NOT NULL, statement text NOT NULL, statement_key text NOT NULL,
    subject_name text NOT NULL, predicate text NOT NULL, object_name text, object_value text,
    chunk_id text NOT NULL, valid_from timestamptz, valid_to timestamptz, functional_side text,
    PRIMARY KEY (document_id, ordinal)
) ON COMMIT DROP;
CREATE TEMPORARY TABLE lanegraph_resolved_ahead (
    document_id text NOT NULL, normalized text NOT NULL, kind text NOT NULL, entity_id text,
    via_alias boolean NOT NULL, seen_epoch bigint NOT NULL, stale boolean NOT NULL DEFAULT false,
    PRIMARY KEY (document_id, normalized)
) ON COMMIT DROP;
CREATE TEMPORARY TABLE lanegraph_resolved_entity (
    document_id text NOT NULL, normalized text NOT NULL, kind text NOT NULL, spelled text NOT NULL,
    new_id text NOT NULL, entity_id text, via_alias boolean NOT NULL, PRIMARY KEY (document_id, normalized)
) ON COMMIT DROP;
CREATE TEMPORARY TABLE lanegraph_resolved_name (
    document_id text NOT NULL, name text NOT NULL, entity_id text NOT NULL, PRIMARY KEY (document_id, name)
) ON COMMIT DROP;
CREATE TEMPORARY TABLE lanegraph_stated_fact (
    document_id text NOT NULL, id text NOT NULL, subject_id text NOT NULL, predicate text NOT NULL,
    object_id text, object_value text, statement text NOT NULL, source_chunk_id text NOT NULL,
    valid_from timestamptz, valid_to timestamptz, functional_side text
) ON COMMIT DROP;
CREATE INDEX ON lanegraph_stated_fact (document_id);
CREATE TEMPORARY TABLE lanegraph_merged_document (
    ordinal integer PRIMARY KEY, document_id text NOT NULL, scopes text[] NOT NULL, retracted boolean NOT NULL,
    stamped timestamptz NOT NULL, created integer NOT NULL, merged integer NOT NULL,
    mention_count bigint NOT NULL DEFAULT 0, stated integer NOT NULL DEFAULT 0, inserted integer NOT NULL DEFAULT 0,
    closed integer NOT NULL DEFAULT 0, superseded integer NOT NULL DEFAULT 0, written boolean NOT NULL DEFAULT false
) ON COMMIT DROP;
"""

COPY_STAGED = "COPY {table} FROM STDIN"

# Row counts for the planner: a temporary table is never analysed by autovacuum, and the merge
# function's per-document statements pick their joins from these.
ANALYZE_STAGING_TABLES = """
ANALYZE lanegraph_staged_document, lanegraph_staged_name, lanegraph_staged_entity, lanegraph_staged_mention,
        lanegraph_staged_fact
"""

# The staged names resolved against the graph as committed, before the lock (migration 0114); the
# merge probes again only the names something written since may answer differently.
RESOLVE_STAGED_AHEAD = "SELECT lanegraph_resolve_staged_ahead(%(threshold)s)"
# The names written since, moved from the trigram index's pending list into the index in bulk
# (migration 0116): before a batch's names are resolved ahead, and after its merge commits, so a
# probe reads no more of the list than the entities of the batches being merged.
INDEX_PENDING_ENTITY_NAMES = "SELECT gin_clean_pending_list('entity_name_trgm_idx'::regclass)"
MERGE_STAGED = "SELECT * FROM lanegraph_merge_staged_extractions(%(threshold)s)"

LIVE_FACT_COUNT = "SELECT count(*) FROM live_fact"
FACT_PREVIEW = """
SELECT s.name, f.predicate, coalesce(o.name, f.object_value), f.valid_from::date, f.statement
FROM live_fact f JOIN entity s ON s.id = f.subject_id LEFT JOIN entity o ON o.id = f.object_id
WHERE f.document_id = ANY(%(ids)s)
ORDER BY f.recorded_from DESC, f.id LIMIT 5
"""
DANGLING_FACTS = """
SELECT f.id, f.statement FROM live_fact f
WHERE NOT EXISTS (SELECT 1 FROM entity e WHERE e.id = f.subject_id)
   OR (f.object_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM entity e WHERE e.id = f.object_id))
ORDER BY f.id LIMIT 20
"""
