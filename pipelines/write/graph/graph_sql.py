"""SQL of the graph-wide assets: entity graph statistics, communities, profiles, RAPTOR, embeddings.

Statements only; `graph_store` runs them. Every value is a bind parameter.
"""

from psycopg import sql

# The extraction merge resolves a batch's names ahead of its graph write lock and probes again only
# those whose entities changed since, known by the epoch stamped on every changed entity row
# (migration 0114). Kinds and degrees change here, so this transaction takes an epoch too, before
# it locks any entity row, as the merge does.
TAKE_GRAPH_WRITE_EPOCH = "SELECT lanegraph_graph_write_epoch()"

# An entity's kind is what most mentions of its own name call it (spelled-out project names, team
# names and codes already carry their kind); the small tagger's odd guess in one document is
# outvoted by the others. The embedding named the old kind, so it is cleared for re-embedding.
RECONCILE_KINDS = """
WITH vote AS (
    SELECT m.entity_id, m.kind, sum(m.mentions) AS mentions
    FROM entity_mention m JOIN entity e ON e.id = m.entity_id
    WHERE lower(m.name) = e.normalized_name
    GROUP BY m.entity_id, m.kind
), winner AS (
    SELECT DISTINCT ON (entity_id) entity_id, kind
    FROM vote
    ORDER BY entity_id, mentions DESC, array_position(%(kind_priority)s::text[], kind)
)
UPDATE entity e SET kind = w.kind, embedding = NULL
FROM winner w
WHERE w.entity_id = e.id AND e.kind <> w.kind
  AND NOT EXISTS (
    SELECT 1 FROM entity o WHERE o.kind = w.kind AND o.normalized_name = e.normalized_name AND o.scopes = e.scopes
  )
"""

# An entity no document mentions and no fact (believed or not) names is gone from the corpus.
DELETE_ORPHAN_ENTITIES = """
DELETE FROM entity e
WHERE NOT EXISTS (SELECT 1 FROM entity_mention m WHERE m.entity_id = e.id)
  AND NOT EXISTS (SELECT 1 FROM fact f WHERE f.subject_id = e.id)
  AND NOT EXISTS (SELECT 1 FROM fact f WHERE f.object_id = e.id)
"""

# Degree: live facts that name the entity as subject or object (states included).
UPDATE_DEGREES = """
WITH touching AS (
    SELECT subject_id AS id FROM live_fact
    UNION ALL
    SELECT object_id FROM live_fact WHERE object_id IS NOT NULL
), counted AS (
    SELECT id, count(*)::integer AS degree FROM touching GROUP BY id
)
UPDATE entity e SET degree = coalesce(c.degree, 0)
FROM entity base LEFT JOIN counted c ON c.id = base.id
WHERE base.id = e.id AND e.degree <> coalesce(c.degree, 0)
"""

GRAPH_STATISTICS = """
SELECT
    (SELECT count(*) FROM entity) AS entities,
    (SELECT count(*) FROM entity WHERE degree > 0) AS connected_entities,
    (SELECT count(*) FROM live_fact) AS live_facts,
    (SELECT count(*) FROM fact) AS fact_rows,
    (SELECT count(*) FROM live_fact WHERE object_id IS NOT NULL) AS relation_facts,
    (SELECT count(*) FROM live_fact WHERE object_id IS NULL) AS value_facts,
    (SELECT count(DISTINCT (least(subject_id, object_id), greatest(subject_id, object_id)))
       FROM live_fact WHERE object_id IS NOT NULL) AS entity_pairs,
    (SELECT count(DISTINCT predicate) FROM live_fact) AS predicates,
    coverage.entities_per_chunk,
    coverage.single_chunk_entity_share,
    (SELECT round(count(DISTINCT (least(subject_id, object_id), greatest(subject_id, object_id)))::numeric
                  / greatest((SELECT count(*) FROM entity), 1), 3)::float8
       FROM live_fact WHERE object_id IS NOT NULL AND subject_id <> object_id) AS entity_edges_per_entity
FROM (
    -- Whether the graph can carry a hop from chunk to chunk: entities a chunk names, and how many
    -- entities no second chunk names (a hop cannot pass through those).
    SELECT round(coalesce(sum(chunks), 0)::numeric / greatest((SELECT count(*) FROM chunk), 1), 3)::float8
               AS entities_per_chunk,
           round(count(*) FILTER (WHERE chunks = 1)::numeric / greatest(count(*), 1), 3)::float8
               AS single_chunk_entity_share
    FROM (SELECT entity_id, count(DISTINCT chunk_id) AS chunks FROM entity_mention GROUP BY entity_id) per_entity
) coverage
"""

TOP_ENTITIES = """
SELECT name, kind, degree, array_length(aliases, 1) FROM entity
ORDER BY degree DESC, name LIMIT %(limit)s
"""

ENTITIES_PER_KIND = "SELECT kind, count(*) FROM entity GROUP BY kind ORDER BY count(*) DESC, kind"

# One embedding per distinct statement (a sentence stating several facts is embedded once),
# written back by primary key.
FACT_STATEMENTS_WITHOUT_EMBEDDING = """
SELECT statement, array_agg(id ORDER BY id) FROM fact
WHERE embedding IS NULL AND recorded_to IS NULL
GROUP BY statement ORDER BY statement
"""
EMBEDDED_ROWS = sql.SQL("SELECT count(*) FROM {} WHERE embedding IS NOT NULL")
SET_FACT_EMBEDDING = "UPDATE fact SET embedding = %(embedding)s WHERE id = ANY(%(ids)s)"

KINDS_WITHOUT_EMBEDDING = "SELECT name, description FROM entity_kind WHERE embedding IS NULL ORDER BY name"
SET_KIND_EMBEDDING = "UPDATE entity_kind SET embedding = %(embedding)s WHERE name = %(name)s"

# Only entities in live facts: the fact lane's dense seeds must lead somewhere, and the catalog
# lane ranks kinds, not entities. (On MuSiQue, 300 passages name 1,807 entities, most of them in
# no fact: embedding them all cost more than embedding the passages.)
ENTITIES_WITHOUT_EMBEDDING = "SELECT id, name, kind FROM entity WHERE embedding IS NULL AND degree > 0 ORDER BY id"
SET_ENTITY_EMBEDDING = "UPDATE entity SET embedding = %(embedding)s WHERE id = %(id)s"

# The graph communities partition: entities with live facts, and live entity-to-entity facts as
# edges weighted by how many facts join the pair.
CONNECTED_ENTITIES = "SELECT id FROM entity WHERE degree > 0 ORDER BY id"
ENTITY_EDGES = """
SELECT least(subject_id, object_id), greatest(subject_id, object_id), count(*)::float8
FROM live_fact WHERE object_id IS NOT NULL AND object_id <> subject_id
GROUP BY 1, 2 ORDER BY 1, 2
"""

ENTITY_NAMES = "SELECT id, name, kind, degree, scopes FROM entity WHERE id = ANY(%(ids)s)"

# Live facts inside each community (community i's members are the ids paired with i; states and
# literals of a member count too), most connected subjects first so a summary's budget goes to the
# centre of the community.
FACTS_AMONG = """
WITH member AS MATERIALIZED (
    SELECT * FROM unnest(%(ordinals)s::int[], %(ids)s::text[]) AS member(ordinal, entity_id)
)
SELECT member.ordinal, f.statement, f.scopes, f.embedding
FROM member
JOIN live_fact f ON f.subject_id = member.entity_id
JOIN entity s ON s.id = f.subject_id
LEFT JOIN member target ON target.ordinal = member.ordinal AND target.entity_id = f.object_id
WHERE f.object_id IS NULL OR target.entity_id IS NOT NULL
ORDER BY member.ordinal, s.degree DESC, f.statement
"""

# A refresh writes the rows it summarised anew, then deletes every row it did not keep, in one
# transaction. It takes an EXCLUSIVE lock first: two refreshes at once would otherwise each delete
# the other's new rows. Readers (find) are not blocked. A row kept as it was is not written at all.
LOCK_COMMUNITIES = "LOCK TABLE community IN EXCLUSIVE MODE"
UPSERT_COMMUNITY = """
INSERT INTO community (id, level, parent_id, label, summary, members, embedding, scopes, source_digest)
VALUES (%(id)s, %(level)s, %(parent_id)s, %(label)s, %(summary)s, %(members)s, %(embedding)s, %(scopes)s,
        %(source_digest)s)
ON CONFLICT (id) DO UPDATE SET
    level = excluded.level, parent_id = excluded.parent_id, label = excluded.label, summary = excluded.summary,
    members = excluded.members, embedding = excluded.embedding, scopes = excluded.scopes,
    source_digest = excluded.source_digest
"""
# Children go with a deleted parent (ON DELETE CASCADE): a kept community is never the child of
# one that is not kept, because a kept level 0 community keeps its whole subtree.
DELETE_COMMUNITIES_EXCEPT = "DELETE FROM community WHERE id <> ALL(%(ids)s)"
PREVIOUS_COMMUNITIES = """
SELECT id, level, parent_id, label, summary, members, scopes, source_digest FROM community ORDER BY level, id
"""
# The entity pairs the stored communities were partitioned over, replaced with them.
PREVIOUS_COMMUNITY_EDGES = "SELECT source, target, weight FROM community_edge"
REPLACE_COMMUNITY_EDGES = "LOCK TABLE community_edge IN EXCLUSIVE MODE; DELETE FROM community_edge"
INSERT_COMMUNITY_EDGE = """
INSERT INTO community_edge (source, target, weight, scopes) VALUES (%(source)s, %(target)s, %(weight)s, %(scopes)s)
"""

PROFILE_CANDIDATES = """
SELECT id, name, kind, scopes FROM entity WHERE degree >= %(min_degree)s ORDER BY degree DESC, id
"""
# Each entity's live facts, as subject or object (entity i is the id paired with i).
ENTITY_FACTS = """
SELECT candidate.ordinal, facts.statement, facts.scopes
FROM unnest(%(ordinals)s::int[], %(ids)s::text[]) AS candidate(ordinal, id)
CROSS JOIN LATERAL (
    SELECT statement, scopes FROM live_fact WHERE subject_id = candidate.id
    UNION
    SELECT statement, scopes FROM live_fact WHERE object_id = candidate.id
) facts
ORDER BY candidate.ordinal, facts.statement
"""
LOCK_PROFILES = "LOCK TABLE profile IN EXCLUSIVE MODE"
UPSERT_PROFILE = """
INSERT INTO profile (entity_id, summary, fact_count, embedding, scopes, source_digest)
VALUES (%(entity_id)s, %(summary)s, %(fact_count)s, %(embedding)s, %(scopes)s, %(source_digest)s)
ON CONFLICT (entity_id) DO UPDATE SET
    summary = excluded.summary, fact_count = excluded.fact_count, embedding = excluded.embedding,
    scopes = excluded.scopes, source_digest = excluded.source_digest
"""
DELETE_PROFILES_EXCEPT = "DELETE FROM profile WHERE entity_id <> ALL(%(ids)s)"
PREVIOUS_PROFILE_DIGESTS = "SELECT entity_id, source_digest FROM profile"

# Leaves of the RAPTOR tree: embedded chunks of documents that are not retracted.
RAPTOR_LEAVES = """
SELECT c.id, c.text, c.embedding, c.scopes
FROM chunk c JOIN document d ON d.id = c.document_id
WHERE c.embedding IS NOT NULL AND d.retracted_at IS NULL
ORDER BY c.id
"""
LOCK_RAPTOR = "LOCK TABLE raptor_node IN EXCLUSIVE MODE"
UPSERT_RAPTOR_NODE = """
INSERT INTO raptor_node (id, level, summary, children, embedding, scopes, source_digest)
VALUES (%(id)s, %(level)s, %(summary)s, %(children)s, %(embedding)s, %(scopes)s, %(source_digest)s)
ON CONFLICT (id) DO UPDATE SET
    level = excluded.level, summary = excluded.summary, children = excluded.children,
    embedding = excluded.embedding, scopes = excluded.scopes, source_digest = excluded.source_digest
"""
DELETE_RAPTOR_NODES_EXCEPT = "DELETE FROM raptor_node WHERE id <> ALL(%(ids)s)"
PREVIOUS_RAPTOR_NODES = """
SELECT id, level, children, summary, embedding, scopes, source_digest FROM raptor_node ORDER BY level, id
"""

# The settings each graph-wide asset last built with (its digest), so a refresh under other
# settings rebuilds in full rather than mixing rows of both.
BUILT_WITH = "SELECT value FROM lanegraph_setting WHERE key = %(key)s"
RECORD_BUILT_WITH = """
INSERT INTO lanegraph_setting (key, value) VALUES (%(key)s, %(value)s)
ON CONFLICT (key) DO UPDATE SET value = excluded.value
"""
RAPTOR_LEVEL_COUNTS = "SELECT level, count(*) FROM raptor_node GROUP BY level ORDER BY level"
COMMUNITY_LEVEL_SIZES = "SELECT level, cardinality(members) FROM community ORDER BY level, cardinality(members) DESC"

COMMUNITY_COUNT = "SELECT count(*) FROM community"
PROFILE_COUNT = "SELECT count(*) FROM profile"
RAPTOR_NODE_COUNT = "SELECT count(*) FROM raptor_node"

EMBEDDINGS_OF_OTHER_WIDTH = """
SELECT
    (SELECT count(*) FROM fact WHERE recorded_to IS NULL
        AND (embedding IS NULL OR vector_dims(embedding) <> %(dimension)s)),
    (SELECT count(*) FROM entity
        WHERE degree > 0 AND (embedding IS NULL OR vector_dims(embedding) <> %(dimension)s))
"""

# Coverage over the entities a community can hold: those joined to another entity by a live fact
# (an entity whose facts are all literals has no edge, and a lone vertex is no community).
COMMUNITY_COVERAGE = """
WITH related AS (
    SELECT subject_id AS id FROM live_fact WHERE object_id IS NOT NULL AND object_id <> subject_id
    UNION
    SELECT object_id FROM live_fact WHERE object_id IS NOT NULL AND object_id <> subject_id
)
SELECT
    (SELECT count(*) FROM related),
    (SELECT count(*) FROM related WHERE id IN (SELECT unnest(members) FROM community))
"""

# Each scope set has a tree of its own: the most roots any one of them has.
RAPTOR_ROOTS = """
SELECT
    (SELECT count(*) FROM chunk c JOIN document d ON d.id = c.document_id
     WHERE c.embedding IS NOT NULL AND d.retracted_at IS NULL),
    (SELECT coalesce(max(roots), 0) FROM (
        SELECT count(*) AS roots FROM raptor_node r
        WHERE r.level = (SELECT max(o.level) FROM raptor_node o WHERE o.scopes = r.scopes)
        GROUP BY r.scopes
    ) per_scope_set)
"""
