-- Facts lane, walk seeds: entities the question names carry decisive mass. Only when it names
-- nothing do the entities nearest the question and the endpoints of the dense seeds start the walk,
-- each weighted by its similarity. The entity window has a constant depth (README.md, "Dense
-- rankings"); :graph_ppr_frontier cuts it.
WITH named AS (
    SELECT mention.entity_id, :mention_mass * mention.similarity AS mass
    FROM mention
),
candidate_entity AS MATERIALIZED (
    SELECT entity.id AS entity_id, entity.embedding <=> :query_vector AS distance
    FROM entity
    ORDER BY entity.embedding <=> :query_vector
    LIMIT 100  -- @constant: the ANN window, deeper than any setting cuts it to
),
nearest_entity AS (
    SELECT candidate_entity.entity_id, candidate_entity.distance
    FROM candidate_entity
    ORDER BY candidate_entity.distance, candidate_entity.entity_id
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
