-- Facts lane, facts the walk connects: the mass of every hop accumulates into a window of the
-- :graph_mass_window heaviest entities; a fact touching the window scores by its weaker endpoint
-- (an endpoint outside it counts :graph_dangling_factor times the other's mass), so a fact needs
-- standing at both ends rather than one popular one.
WITH mass_window AS (
    SELECT walk_mass.entity_id, sum(walk_mass.mass) AS mass
    FROM walk_mass
    GROUP BY walk_mass.entity_id
    ORDER BY sum(walk_mass.mass) DESC, walk_mass.entity_id
    LIMIT :graph_mass_window
),
touching AS (
    SELECT as_subject.fact_id, as_subject.subject_id, as_subject.object_id
    FROM mass_window
    CROSS JOIN LATERAL (
        SELECT live_fact.id AS fact_id, live_fact.subject_id, live_fact.object_id
        FROM live_fact
        WHERE live_fact.subject_id = mass_window.entity_id
        OFFSET 0  -- @constant: keeps the probe from being flattened into a join over every fact
    ) AS as_subject
    UNION
    SELECT as_object.fact_id, as_object.subject_id, as_object.object_id
    FROM mass_window
    CROSS JOIN LATERAL (
        SELECT live_fact.id AS fact_id, live_fact.subject_id, live_fact.object_id
        FROM live_fact
        WHERE live_fact.object_id = mass_window.entity_id
        OFFSET 0  -- @constant: keeps the probe from being flattened into a join over every fact
    ) AS as_object
),
scored AS (
    SELECT
        touching.fact_id,
        least(
            coalesce(subject_mass.mass, :graph_dangling_factor * object_mass.mass),
            coalesce(object_mass.mass, :graph_dangling_factor * subject_mass.mass)
        ) AS weaker_mass
    FROM touching
    LEFT JOIN mass_window AS subject_mass ON subject_mass.entity_id = touching.subject_id
    LEFT JOIN mass_window AS object_mass ON object_mass.entity_id = touching.object_id
),
strongest AS (
    SELECT scored.fact_id, scored.weaker_mass
    FROM scored
    ORDER BY scored.weaker_mass DESC, scored.fact_id
    LIMIT :fusion_depth
)
SELECT
    strongest.fact_id,
    -strongest.weaker_mass AS score,
    row_number() OVER (ORDER BY strongest.weaker_mass DESC, strongest.fact_id) AS part_rank
FROM strongest
