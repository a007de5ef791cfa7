-- Facts lane, walk seeds: entities the question names carry decisive mass. Only when it names
-- nothing do the entities nearest the question and the endpoints of the dense seeds start the walk,
-- each weighted by its similarity.
WITH named AS (
    SELECT mention.entity_id, :mention_mass * mention.similarity AS mass
    FROM mention
),
nearest_entity AS MATERIALIZED (
    SELECT entity.id AS entity_id, entity.embedding <=> :query_vector AS distance
    FROM entity
    ORDER BY entity.embedding <=> :query_vector
    LIMIT :graph_ppr_frontier
),
fallback AS (
    SELECT nearest_entity.entity_id, :dense_entity_seed_weight * (1 - nearest_entity.distance) AS mass
    FROM nearest_entity
    WHERE nearest_entity.distance <= :find_max_distance
    UNION ALL
    SELECT dense.subject_id, :fact_endpoint_seed_weight * (1 - dense.distance)
    FROM dense
    UNION ALL
    SELECT dense.object_id, :fact_endpoint_seed_weight * (1 - dense.distance)
    FROM dense
    WHERE dense.object_id IS NOT NULL
)
SELECT named.entity_id, named.mass
FROM named
UNION ALL
SELECT fallback.entity_id, sum(fallback.mass)
FROM fallback
WHERE NOT EXISTS (SELECT 1 FROM named)
GROUP BY fallback.entity_id
