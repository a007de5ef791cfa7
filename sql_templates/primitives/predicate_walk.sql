-- predicate_walk: entities reachable from the seeds within :max_hops steps over live facts, in
-- either direction, optionally only through the given predicates (an empty array means all).
--
-- Cycle protection without paths: a walk row is (entity, hops) and UNION drops a row already
-- produced, so each level holds each entity at most once and the recursion stops at :max_hops.
-- Enumerating simple paths instead would grow exponentially with hops in a dense graph.
WITH RECURSIVE walk AS (
    SELECT seed.id AS entity_id, CAST(0 AS bigint) AS hops
    FROM unnest(CAST(:seeds AS text[])) AS seed (id)
    UNION
    -- One join per step on either endpoint: PostgreSQL answers the OR with a BitmapOr of the
    -- subject and object indexes for each frontier entity.
    SELECT
        CASE WHEN f.subject_id = walk.entity_id THEN f.object_id ELSE f.subject_id END AS entity_id,
        walk.hops + 1 AS hops
    FROM walk
    JOIN live_fact AS f ON f.subject_id = walk.entity_id OR f.object_id = walk.entity_id
    WHERE walk.hops < CAST(:max_hops AS bigint)
      AND f.object_id IS NOT NULL
      AND (cardinality(CAST(:predicates AS text[])) = 0 OR f.predicate = ANY(CAST(:predicates AS text[])))
),
distance AS (
    SELECT walk.entity_id, min(walk.hops) AS hops
    FROM walk
    GROUP BY walk.entity_id
)
SELECT
    e.id AS entity_id,
    e.name AS entity_name,
    distance.hops,
    coalesce(link.statement, '') AS via_statement
FROM distance
JOIN entity AS e ON e.id = distance.entity_id
-- One fact that brought the walk here from the level before, so the evidence says why it is here.
LEFT JOIN LATERAL (
    SELECT f.statement
    FROM distance AS previous
    JOIN live_fact AS f
      ON (f.subject_id = previous.entity_id AND f.object_id = distance.entity_id)
      OR (f.object_id = previous.entity_id AND f.subject_id = distance.entity_id)
    WHERE previous.hops = distance.hops - 1
      AND (cardinality(CAST(:predicates AS text[])) = 0 OR f.predicate = ANY(CAST(:predicates AS text[])))
    ORDER BY f.id
    LIMIT 1  -- @constant: one explaining fact is enough
) AS link (statement) ON true
WHERE distance.hops > 0  -- @constant: the seeds themselves are not evidence
ORDER BY distance.hops, e.id
LIMIT CAST(:predicate_walk_limit AS bigint)
