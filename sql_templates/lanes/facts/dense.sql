-- Facts lane, dense seeds: the facts nearest the question.
-- The HNSW window runs over the fact table alone and is MATERIALIZED, so PostgreSQL cannot fold the
-- live_fact conditions into it and give up the index; its depth is a constant the generic plan can
-- cost (README.md, "Dense rankings"). The :fusion_depth cut, visibility and access history follow.
-- The order is a blend, not raw distance: a recently or often used fact climbs. Whatever a counter
-- holds, the blend stays finite: access times are read within the last century and never in the
-- future, at most 1,000 half-lives old (0.5^1000 is still a float), counts within 0 and the bound
-- 0090 keeps them to.
WITH candidate AS MATERIALIZED (
    SELECT fact.id, fact.embedding <=> :query_vector AS distance
    FROM fact
    ORDER BY fact.embedding <=> :query_vector
    LIMIT 100  -- @constant: the ANN window, deeper than any setting cuts it to
),
nearest AS (
    SELECT candidate.id, candidate.distance
    FROM candidate
    ORDER BY candidate.distance, candidate.id
    LIMIT :fusion_depth
),
blended AS (
    SELECT
        live_fact.id AS fact_id,
        live_fact.subject_id,
        live_fact.object_id,
        nearest.distance,
        nearest.distance
            - :recency_weight * power(
                0.5,
                least(extract(epoch FROM now() - greatest(
                    least(coalesce(live_fact.last_accessed, live_fact.recorded_from), now()),
                    now() - interval '100 years'
                )) / 86400 / :recency_half_life_days, 1000)
            )
            - :frequency_weight * ln(1 + least(greatest(live_fact.access_count, 0), 1000000000)) AS score
    FROM nearest
    JOIN live_fact ON live_fact.id = nearest.id
    WHERE nearest.distance <= :find_max_distance
)
SELECT
    blended.fact_id,
    blended.subject_id,
    blended.object_id,
    blended.distance,
    blended.score,
    row_number() OVER (ORDER BY blended.score, blended.fact_id) AS part_rank
FROM blended
