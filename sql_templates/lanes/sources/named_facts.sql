-- Sources lane, what the graph knows of what the question names: an aggregate question about a
-- person ("What activities does Melanie partake in?") is answered by turns spread over many
-- sessions, each saying one thing about her, often without her name ("I" is the speaker) and
-- without the question's words. The facts whose subject or object the question names exactly
-- (by name or alias, as the facts lane finds them) are ranked by how near their statement is to
-- the question, and each fact's source chunk is lent :named_fact_weight times its scaled similarity
-- (min-max over the :fusion_depth nearest, as the dense ranking is scaled); lift.sql adds it on top
-- of what the fusion gave the chunk. The named entities' facts are read through fact_subject_idx and
-- fact_object_idx; their distances are computed for those facts alone.
WITH named AS (
    SELECT entity.id
    FROM entity
    WHERE entity.name_lower = ANY(:question_terms)
    UNION
    SELECT entity_alias.entity_id
    FROM entity_alias
    WHERE entity_alias.alias = ANY(:question_terms)
),
about AS (
    SELECT live_fact.source_chunk_id AS chunk_id, live_fact.embedding <=> :query_vector AS distance
    FROM named
    JOIN live_fact ON live_fact.subject_id = named.id
    WHERE live_fact.source_chunk_id IS NOT NULL
    UNION ALL
    SELECT live_fact.source_chunk_id, live_fact.embedding <=> :query_vector
    FROM named
    JOIN live_fact ON live_fact.object_id = named.id
    WHERE live_fact.source_chunk_id IS NOT NULL
),
nearest AS (
    SELECT about.chunk_id, min(about.distance) AS distance
    FROM about
    GROUP BY about.chunk_id
    ORDER BY min(about.distance), about.chunk_id
    LIMIT :fusion_depth
)
SELECT
    nearest.chunk_id,
    :named_fact_weight * coalesce(
        (max(nearest.distance) OVER () - nearest.distance)
            / nullif(max(nearest.distance) OVER () - min(nearest.distance) OVER (), 0),
        1
    ) AS score,
    false AS direct
FROM nearest
WHERE nearest.distance <= :find_max_distance
