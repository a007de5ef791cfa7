-- Sources lane, bridge hop: the second hop of a multi-hop question ("the currency of the country
-- the singer of X is from"). The entities that the best :bridge_seeds chunks of the first fusion
-- name lead on along the graph's mention edges, to chunks that rarely share words with the
-- question. Entities the question names are its first hop, which the other rankings have already.
-- Two rankings join the fusion; a chunk at rank r of one gains :bridge_weight * rrf_k / (rrf_k + r),
-- nearly the whole weight near the top, so the best linked page can rise between the seeds:
--   titled: chunks of the pages titled with a linked name, nearest the question first;
--   named:  the seeds, in fusion order, then the other chunks naming a linked entity, nearest the
--           question first. Ranking the seeds keeps a chunk the first fusion also found from
--           overtaking the seed that led to it, for a name is a looser link than a title. Entities
--           named in :bridge_fanout chunks or more are hubs ("United States") that lead everywhere,
--           and are not followed.
-- Neither ranking returns to the seeds' own documents.
WITH seed AS (
    SELECT fuse.chunk_id, chunk.document_id, fuse.score
    FROM fuse
    JOIN chunk ON chunk.id = fuse.chunk_id
    ORDER BY fuse.score DESC, fuse.chunk_id
    LIMIT :bridge_seeds
),
seed_entity AS (
    SELECT DISTINCT entity_mention.entity_id, lower(entity_mention.name) AS name
    FROM seed
    JOIN entity_mention ON entity_mention.chunk_id = seed.chunk_id
    WHERE NOT lower(entity_mention.name) = ANY(:question_terms)
),
mentioning AS (
    -- At most :bridge_fanout chunks per entity: enough to tell a hub, never a hub's every chunk.
    SELECT linked.entity_id, fanout.chunk_id
    FROM (SELECT DISTINCT seed_entity.entity_id FROM seed_entity) AS linked
    CROSS JOIN LATERAL (
        SELECT DISTINCT entity_mention.chunk_id
        FROM entity_mention
        WHERE entity_mention.entity_id = linked.entity_id
        ORDER BY entity_mention.chunk_id
        LIMIT :bridge_fanout
    ) AS fanout
),
linked AS (
    SELECT false AS named, chunk.id AS chunk_id, chunk.embedding <=> :query_vector AS distance
    FROM (SELECT DISTINCT seed_entity.name FROM seed_entity) AS linked_name
    JOIN document ON document.title_lower = linked_name.name
    JOIN chunk ON chunk.document_id = document.id
    WHERE document.id NOT IN (SELECT seed.document_id FROM seed)
    UNION
    SELECT true, chunk.id, chunk.embedding <=> :query_vector
    FROM mentioning
    JOIN chunk ON chunk.id = mentioning.chunk_id
    WHERE mentioning.entity_id IN (
        SELECT mentioning.entity_id
        FROM mentioning
        GROUP BY mentioning.entity_id
        HAVING count(*) < :bridge_fanout
    )
      AND chunk.document_id NOT IN (SELECT seed.document_id FROM seed)
),
ranked AS (
    SELECT
        linked.named,
        linked.chunk_id,
        row_number() OVER (PARTITION BY linked.named ORDER BY linked.distance, linked.chunk_id) AS rank
    FROM linked
),
hop AS (
    SELECT seed.chunk_id, row_number() OVER (ORDER BY seed.score DESC, seed.chunk_id) AS rank
    FROM seed
    UNION ALL
    SELECT ranked.chunk_id, ranked.rank + CASE WHEN ranked.named THEN (SELECT count(*) FROM seed) ELSE 0 END
    FROM ranked
    WHERE ranked.rank <= :fusion_depth
),
bridged AS (
    SELECT hop.chunk_id, sum(:bridge_weight * :rrf_k / (:rrf_k + hop.rank)) AS score
    FROM hop
    GROUP BY hop.chunk_id
)
SELECT
    coalesce(fuse.chunk_id, bridged.chunk_id) AS chunk_id,
    coalesce(fuse.score, 0) + coalesce(bridged.score, 0) AS score,
    coalesce(fuse.direct, false) AS direct
FROM fuse
FULL JOIN bridged ON bridged.chunk_id = fuse.chunk_id
