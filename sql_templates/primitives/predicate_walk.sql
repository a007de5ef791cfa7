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
),
-- Cut before explaining: only the entities returned need the fact that reached them.
reached AS (
    SELECT distance.entity_id, distance.hops
    FROM distance
    WHERE distance.hops > 0  -- @constant: the seeds themselves are not evidence
    ORDER BY distance.hops, distance.entity_id
    LIMIT CAST(:predicate_walk_limit AS bigint)
),
-- The facts that brought the walk to each returned entity from the level before, found with set
-- joins (one per direction, so each reaches its own index) rather than one probe per entity.
arrival AS (
    SELECT reached.entity_id, f.id AS fact_id, f.statement
    FROM reached
    JOIN live_fact AS f ON f.subject_id = reached.entity_id
    JOIN distance AS previous ON previous.entity_id = f.object_id
    WHERE previous.hops = reached.hops - 1
      AND (cardinality(CAST(:predicates AS text[])) = 0 OR f.predicate = ANY(CAST(:predicates AS text[])))
    UNION ALL
    SELECT reached.entity_id, f.id AS fact_id, f.statement
    FROM reached
    JOIN live_fact AS f ON f.object_id = reached.entity_id
    JOIN distance AS previous ON previous.entity_id = f.subject_id
    WHERE previous.hops = reached.hops - 1
      AND (cardinality(CAST(:predicates AS text[])) = 0 OR f.predicate = ANY(CAST(:predicates AS text[])))
),
first_arrival AS (
    SELECT DISTINCT ON (arrival.entity_id) arrival.entity_id, arrival.statement
    FROM arrival
    ORDER BY arrival.entity_id, arrival.fact_id
)
SELECT
    e.id AS entity_id,
    e.name AS entity_name,
    reached.hops,
    coalesce(first_arrival.statement, '') AS via_statement
FROM reached
JOIN entity AS e ON e.id = reached.entity_id
LEFT JOIN first_arrival ON first_arrival.entity_id = reached.entity_id
ORDER BY reached.hops, e.id
