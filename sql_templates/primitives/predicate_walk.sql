-- predicate_walk: entities reachable from the seeds within :max_hops steps over live facts, in
-- either direction, optionally only through the given predicates (an empty array means all).
--
-- Cycle protection without paths: a walk row is (entity, hops) and UNION drops a row already
-- produced, so each level holds each entity at most once and the recursion stops at :max_hops.
-- Enumerating simple paths instead would grow exponentially with hops in a dense graph.
WITH RECURSIVE walk (entity_id, hops) AS (
    SELECT seed.id, CAST(0 AS bigint)
    FROM unnest(CAST(:seeds AS text[])) AS seed (id)
    UNION
    SELECT step.neighbor_id, walk.hops + 1
    FROM walk
    CROSS JOIN LATERAL (
        SELECT f.object_id AS neighbor_id
        FROM live_fact AS f
        WHERE f.subject_id = walk.entity_id
          AND f.object_id IS NOT NULL
          AND (cardinality(CAST(:predicates AS text[])) = 0 OR f.predicate = ANY(CAST(:predicates AS text[])))
        UNION
        SELECT f.subject_id AS neighbor_id
        FROM live_fact AS f
        WHERE f.object_id = walk.entity_id
          AND (cardinality(CAST(:predicates AS text[])) = 0 OR f.predicate = ANY(CAST(:predicates AS text[])))
    ) AS step
    WHERE walk.hops < CAST(:max_hops AS bigint)
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
    LIMIT 1
) AS link ON true
WHERE distance.hops > 0
ORDER BY distance.hops, e.id
LIMIT CAST(:predicate_walk_limit AS bigint)
