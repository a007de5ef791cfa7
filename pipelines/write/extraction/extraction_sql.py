"""SQL of the entities_and_facts step: entity resolution, fact consolidation, supersession.

Statements only; `extraction_store` runs them. Every value is a bind parameter; a document's
names and facts come as arrays, one per column.
"""

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

# Serialises writers of the graph: resolution reads entities and then writes them, and two runs
# interleaving those steps would create the same entity twice under different spellings.
GRAPH_WRITE_LOCK = "SELECT pg_advisory_xact_lock(hashtext('lanegraph.entities_and_facts'))"

SET_SIMILARITY_THRESHOLD = "SELECT set_config('pg_trgm.similarity_threshold', %(threshold)s, true)"

# First match wins: the same name and kind; the same name under another kind (the small tagger
# often disagrees with itself); a recorded alias; the short name of a project ("Heron" for
# "Project Heron"); a near-identical name of the same kind (trigram similarity, codes excluded
# because HX-4417 and HX-4418 are different faults). Only entities of the document's own scope set
# are candidates: an entity is readable exactly by those who may read every document naming it.
# The document's distinct names come as arrays, one statement per document rather than a staged table.
# The near-name probe runs only for a name no earlier match found. It must read the trigram index
# (entity_name_trgm_idx, without a pending list since migration 0070), then keep the kind and
# scope set: pg_trgm prices a similarity like an equality, so the planner would rather compute it
# for every entity of the kind (reached by the unique index) or of the table (a sequential scan,
# which the OFFSET 0 fence alone leaves open): 1,500 to 4,000 entities per name at 1,000
# passages, so a build's resolution grew with the square of its graph. The fence keeps the index
# the probe's only way in, and the caller turns sequential scans off around this one statement.
RESOLVE_MENTIONS = """
SELECT s.normalized,
       coalesce(same.id, renamed.id, aliased.id, project.id, fuzzy.id) AS entity_id,
       coalesce(same.id, renamed.id) IS NULL AND coalesce(aliased.id, project.id, fuzzy.id) IS NOT NULL
           AS via_alias
FROM unnest(%(normalized)s::text[], %(kinds)s::text[]) AS s(normalized, kind)
LEFT JOIN LATERAL (
    SELECT e.id FROM entity e
    WHERE e.kind = s.kind AND e.normalized_name = s.normalized AND e.scopes = %(scopes)s::text[]
) same ON true
LEFT JOIN LATERAL (
    SELECT e.id FROM entity e WHERE e.normalized_name = s.normalized AND e.scopes = %(scopes)s::text[]
    ORDER BY e.degree DESC, e.created_at, e.id LIMIT 1
) renamed ON true
LEFT JOIN LATERAL (
    SELECT e.id FROM entity e WHERE e.aliases @> ARRAY[s.normalized] AND e.scopes = %(scopes)s::text[]
    ORDER BY e.degree DESC, e.id LIMIT 1
) aliased ON true
LEFT JOIN LATERAL (
    SELECT e.id FROM entity e
    WHERE s.kind <> 'project' AND e.kind = 'project' AND e.normalized_name = 'project ' || s.normalized
      AND e.scopes = %(scopes)s::text[]
) project ON true
LEFT JOIN LATERAL (
    SELECT near.id FROM (
        SELECT e.id, e.name, e.kind, e.scopes FROM entity e
        WHERE coalesce(same.id, renamed.id, aliased.id, project.id) IS NULL AND s.kind <> 'code'
          AND lower(e.name) %% s.normalized
        OFFSET 0
    ) near
    WHERE near.kind = s.kind AND near.scopes = %(scopes)s::text[]
    ORDER BY similarity(lower(near.name), s.normalized) DESC, near.id LIMIT 1
) fuzzy ON true
"""

SEQUENTIAL_SCANS = "SELECT current_setting('enable_seqscan')"
# For the rest of the transaction, like SET LOCAL, but to a bound value: the caller's own setting
# (a role's or a session's `off`) is put back after the probe.
SET_SEQUENTIAL_SCANS = "SELECT set_config('enable_seqscan', %(setting)s, true)"

# The names no entity answered to, created in one statement; RETURNING names each row, as it
# comes back in no particular order.
INSERT_ENTITIES = """
INSERT INTO entity (id, name, kind, normalized_name, scopes)
SELECT n.id, n.name, n.kind, n.normalized, %(scopes)s::text[]
FROM unnest(%(ids)s::text[], %(names)s::text[], %(kinds)s::text[], %(normalized)s::text[])
    AS n(id, name, kind, normalized)
ON CONFLICT (kind, normalized_name, scopes) DO UPDATE SET name = entity.name
RETURNING normalized_name, id
"""

# Every alias the document declares, per entity in one statement: the set stays sorted and
# distinct whatever order the aliases come in, and a name is never its own alias.
ADD_ALIASES = """
UPDATE entity e
SET aliases = ARRAY(SELECT DISTINCT a FROM unnest(e.aliases || added.aliases) a ORDER BY a)
FROM (
    SELECT a.id, array_agg(a.alias) AS aliases
    FROM unnest(%(ids)s::text[], %(aliases)s::text[]) AS a(id, alias)
    JOIN entity x ON x.id = a.id
    WHERE x.normalized_name <> a.alias AND NOT x.aliases @> ARRAY[a.alias]
    GROUP BY a.id
) added
WHERE e.id = added.id
"""

# Entities that are a project's short name but were created before the project was seen.
PROJECT_SHORT_NAMES = """
SELECT short.id AS loser, project.id AS winner
FROM entity project
JOIN entity short ON short.normalized_name = substr(project.normalized_name, 9) AND short.kind <> 'project'
    AND short.scopes = project.scopes
WHERE project.id = ANY(%(ids)s) AND project.kind = 'project' AND project.normalized_name LIKE 'project %%'
"""

# Merging re-points every fact and mention of `loser` at `winner`. A believed fact of the loser
# that would duplicate one of the winner's is closed first, or the unique index would refuse it.
MERGE_CLOSE_DUPLICATES = """
UPDATE fact f SET recorded_to = now()
WHERE f.recorded_to IS NULL AND (f.subject_id = %(loser)s OR f.object_id = %(loser)s)
  AND EXISTS (
    SELECT 1 FROM fact w
    WHERE w.recorded_to IS NULL AND w.id <> f.id
      AND w.perspective = f.perspective AND lower(w.statement) = lower(f.statement)
      AND w.predicate = f.predicate
      AND coalesce(w.source_chunk_id, '') = coalesce(f.source_chunk_id, '')
      AND w.subject_id = CASE WHEN f.subject_id = %(loser)s THEN %(winner)s ELSE f.subject_id END
      AND coalesce(w.object_id, '') = coalesce(CASE WHEN f.object_id = %(loser)s THEN %(winner)s ELSE f.object_id END, '')
  )
"""
MERGE_FACT_SUBJECTS = "UPDATE fact SET subject_id = %(winner)s WHERE subject_id = %(loser)s"
MERGE_FACT_OBJECTS = "UPDATE fact SET object_id = %(winner)s WHERE object_id = %(loser)s"
MERGE_MENTIONS = """
INSERT INTO entity_mention (entity_id, chunk_id, document_id, name, kind, mentions, scopes)
SELECT %(winner)s, chunk_id, document_id, name, kind, mentions, scopes
FROM entity_mention WHERE entity_id = %(loser)s
ON CONFLICT (entity_id, chunk_id, name, kind) DO UPDATE
SET mentions = entity_mention.mentions + excluded.mentions
"""
MERGE_ENTITY = """
UPDATE entity w
SET aliases = ARRAY(
        SELECT DISTINCT a FROM unnest(w.aliases || l.aliases || l.normalized_name) a
        WHERE a <> w.normalized_name ORDER BY a
    ),
    scopes = ARRAY(SELECT DISTINCT s FROM unnest(w.scopes || l.scopes) s ORDER BY s)
FROM entity l
WHERE w.id = %(winner)s AND l.id = %(loser)s
"""
DELETE_ENTITY = "DELETE FROM entity WHERE id = %(loser)s"

REPLACE_DOCUMENT_MENTIONS = "DELETE FROM entity_mention WHERE document_id = %(document_id)s"

# The document's facts as arrays, one per column (the store's FACT_COLUMNS), read by the two
# statements below: a statement per step rather than a staged table created and dropped per document.
STATED_FACTS = """
unnest(%(ids)s::text[], %(subject_ids)s::text[], %(predicates)s::text[], %(object_ids)s::text[],
       %(object_values)s::text[], %(statements)s::text[], %(source_chunk_ids)s::text[],
       %(valid_froms)s::timestamptz[], %(valid_tos)s::timestamptz[])
    AS s(id, subject_id, predicate, object_id, object_value, statement, source_chunk_id, valid_from, valid_to)
"""

# A believed fact of the document that the new extraction no longer states stops being believed.
CLOSE_UNSTATED_FACTS = f"""
UPDATE fact f SET recorded_to = now()
WHERE f.document_id = %(document_id)s AND f.recorded_to IS NULL
  AND NOT EXISTS (
    SELECT 1 FROM {STATED_FACTS}
    WHERE f.perspective = '' AND lower(f.statement) = lower(s.statement)
      AND f.subject_id = s.subject_id AND f.predicate = s.predicate
      AND coalesce(f.object_id, '') = coalesce(s.object_id, '')
      AND coalesce(f.source_chunk_id, '') = s.source_chunk_id
  )
"""

# An identical believed statement is already there: the unique index turns the insert into a no-op.
INSERT_STATED_FACTS = f"""
INSERT INTO fact (id, subject_id, predicate, object_id, object_value, statement, source_chunk_id,
                  document_id, valid_from, valid_to, scopes)
SELECT lanegraph_next_fact_id(s.id), s.subject_id, s.predicate, s.object_id, s.object_value,
       s.statement, s.source_chunk_id, %(document_id)s, s.valid_from, s.valid_to, %(scopes)s
FROM {STATED_FACTS}
ON CONFLICT (perspective, lower(statement), subject_id, predicate, coalesce(object_id, ''), coalesce(source_chunk_id, ''))
    WHERE recorded_to IS NULL
DO NOTHING
"""

CLOSE_DOCUMENT_FACTS = """
UPDATE fact SET recorded_to = now()
WHERE document_id = %(document_id)s AND recorded_to IS NULL
"""

# Single-valued predicates: within one key (the subject for `status`, the project for `lead`) a
# dated claim is superseded by the next later-dated claim with a different value. The superseded
# row stops being believed and is recorded again with its validity ending where the new one
# starts, so history stays queryable: what held when, and what we believed when.
SUPERSEDED_FACTS = """
WITH grp AS (
    SELECT * FROM unnest(%(sides)s::text[], %(keys)s::text[], %(predicates)s::text[]) AS g(side, key_id, predicate)
), member AS (
    SELECT f.id, f.valid_from, f.valid_to, g.side, g.key_id, g.predicate,
           coalesce(f.object_id, 'value:' || lower(f.object_value)) AS value_key
    FROM grp g JOIN fact f ON g.side = 'subject' AND f.subject_id = g.key_id AND f.predicate = g.predicate
    WHERE f.recorded_to IS NULL
    UNION ALL
    SELECT f.id, f.valid_from, f.valid_to, g.side, g.key_id, g.predicate, f.subject_id
    FROM grp g JOIN fact f ON g.side = 'object' AND f.object_id = g.key_id AND f.predicate = g.predicate
    WHERE f.recorded_to IS NULL
)
SELECT m.id, next.superseded_at
FROM member m
CROSS JOIN LATERAL (
    SELECT min(o.valid_from) AS superseded_at
    FROM member o
    WHERE o.side = m.side AND o.key_id = m.key_id AND o.predicate = m.predicate
      AND o.value_key <> m.value_key AND o.valid_from > m.valid_from
) next
WHERE m.valid_from IS NOT NULL AND next.superseded_at IS NOT NULL
  AND (m.valid_to IS NULL OR m.valid_to > next.superseded_at)
"""

CLOSE_FACTS = "UPDATE fact SET recorded_to = now() WHERE id = ANY(%(ids)s)"

RERECORD_WITH_END = """
INSERT INTO fact (id, subject_id, predicate, object_id, object_value, statement, perspective,
                  embedding, source_chunk_id, document_id, valid_from, valid_to, access_count,
                  last_accessed, scopes)
SELECT lanegraph_next_fact_id(split_part(f.id, '.', 1)), f.subject_id, f.predicate, f.object_id,
       f.object_value, f.statement, f.perspective, f.embedding, f.source_chunk_id, f.document_id,
       f.valid_from, e.valid_to, f.access_count, f.last_accessed, f.scopes
FROM fact f JOIN unnest(%(ids)s::text[], %(ends)s::timestamptz[]) AS e(id, valid_to) ON e.id = f.id
"""

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
