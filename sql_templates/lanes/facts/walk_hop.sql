-- Facts lane, one hop of the mass walk (the compiler unrolls one copy per hop): the heaviest
-- :graph_ppr_frontier entities of the previous hop pass mass * damping / degree to each neighbour
-- along live facts, in both directions, each direction through its own index.
WITH frontier AS (
    SELECT previous_hop.entity_id, previous_hop.mass
    FROM previous_hop
    ORDER BY previous_hop.mass DESC, previous_hop.entity_id
    LIMIT :graph_ppr_frontier
),
edge AS (
    SELECT frontier.entity_id AS source_id, live_fact.object_id AS target_id, frontier.mass
    FROM frontier
    JOIN live_fact ON live_fact.subject_id = frontier.entity_id
    WHERE live_fact.object_id IS NOT NULL
    UNION ALL
    SELECT frontier.entity_id, live_fact.subject_id, frontier.mass
    FROM frontier
    JOIN live_fact ON live_fact.object_id = frontier.entity_id
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
