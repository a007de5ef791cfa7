-- Facts lane, one hop of the mass walk (the compiler unrolls one copy per hop): the heaviest
-- :graph_ppr_frontier entities of the previous hop pass mass * damping / degree to each neighbour
-- along live facts, in both directions, each direction a LATERAL probe of its own index.
WITH frontier AS (
    SELECT previous_hop.entity_id, previous_hop.mass
    FROM previous_hop
    ORDER BY previous_hop.mass DESC, previous_hop.entity_id
    LIMIT :graph_ppr_frontier
),
edge AS (
    SELECT frontier.entity_id AS source_id, as_subject.target_id, frontier.mass
    FROM frontier
    CROSS JOIN LATERAL (
        SELECT live_fact.object_id AS target_id
        FROM live_fact
        WHERE live_fact.subject_id = frontier.entity_id AND live_fact.object_id IS NOT NULL
        OFFSET 0  -- @constant: keeps the probe from being flattened into a join over every fact
    ) AS as_subject
    UNION ALL
    SELECT frontier.entity_id, as_object.target_id, frontier.mass
    FROM frontier
    CROSS JOIN LATERAL (
        SELECT live_fact.subject_id AS target_id
        FROM live_fact
        WHERE live_fact.object_id = frontier.entity_id
        OFFSET 0  -- @constant: keeps the probe from being flattened into a join over every fact
    ) AS as_object
),
spread AS (
    SELECT
        edge.target_id,
        edge.mass * :graph_ppr_damping / count(*) OVER (PARTITION BY edge.source_id) AS mass
    FROM edge
)
SELECT spread.target_id AS entity_id, sum(spread.mass) AS mass
FROM spread
GROUP BY spread.target_id
