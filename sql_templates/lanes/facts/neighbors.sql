-- Facts lane, one-hop neighbors: live facts that share an endpoint with a dense seed, nearest the
-- question first. Subject and object each reach the seed entities through their own index and the
-- two sides are UNIONed: an OR across both endpoints would scan every fact. Each side is a LATERAL
-- probe per seed entity, so the plan stays an index lookup however many seeds a generic plan guesses.
WITH seed_entity AS (
    SELECT dense.subject_id AS entity_id FROM dense
    UNION
    SELECT dense.object_id FROM dense WHERE dense.object_id IS NOT NULL
),
touching AS (
    SELECT as_subject.fact_id, as_subject.distance
    FROM seed_entity
    CROSS JOIN LATERAL (
        SELECT live_fact.id AS fact_id, live_fact.embedding <=> :query_vector AS distance
        FROM live_fact
        WHERE live_fact.subject_id = seed_entity.entity_id
        OFFSET 0  -- @constant: keeps the probe from being flattened into a join over every fact
    ) AS as_subject
    UNION
    SELECT as_object.fact_id, as_object.distance
    FROM seed_entity
    CROSS JOIN LATERAL (
        SELECT live_fact.id AS fact_id, live_fact.embedding <=> :query_vector AS distance
        FROM live_fact
        WHERE live_fact.object_id = seed_entity.entity_id
        OFFSET 0  -- @constant: keeps the probe from being flattened into a join over every fact
    ) AS as_object
),
nearest AS (
    SELECT touching.fact_id, touching.distance
    FROM touching
    ORDER BY touching.distance, touching.fact_id
    LIMIT :fusion_depth
)
SELECT
    nearest.fact_id,
    nearest.distance AS score,
    row_number() OVER (ORDER BY nearest.distance, nearest.fact_id) AS part_rank
FROM nearest
