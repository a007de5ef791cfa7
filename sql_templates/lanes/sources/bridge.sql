-- Sources lane, bridge hop: the second hop of a multi-hop question ("the spouse of the singer of
-- X"). The entities that the best :bridge_seeds chunks of the first fusion name lead to the
-- documents titled with those names, the pages about the bridging entity, which rarely share words
-- with the question. Their chunks, nearest the question first, join the fusion as one more
-- reciprocal-rank ranking. Neither the seeds' own documents nor titles the question names (the
-- title ranking has those already) are hops.
WITH seed AS (
    SELECT fuse.chunk_id, chunk.document_id
    FROM fuse
    JOIN chunk ON chunk.id = fuse.chunk_id
    ORDER BY fuse.score DESC, fuse.chunk_id
    LIMIT :bridge_seeds
),
linked_title AS (
    SELECT DISTINCT lower(entity_mention.name) AS title
    FROM seed
    JOIN entity_mention ON entity_mention.chunk_id = seed.chunk_id
    WHERE NOT lower(entity_mention.name) = ANY(:question_terms)
),
linked_chunk AS (
    SELECT chunk.id AS chunk_id, chunk.embedding <=> :query_vector AS distance
    FROM linked_title
    JOIN document ON document.title_lower = linked_title.title
    JOIN chunk ON chunk.document_id = document.id
    WHERE document.id NOT IN (SELECT seed.document_id FROM seed)
),
hop AS (
    SELECT
        linked_chunk.chunk_id,
        row_number() OVER (ORDER BY linked_chunk.distance, linked_chunk.chunk_id) AS rank
    FROM linked_chunk
    ORDER BY rank
    LIMIT :fusion_depth
)
SELECT
    coalesce(fuse.chunk_id, hop.chunk_id) AS chunk_id,
    coalesce(fuse.score, 0) + coalesce(:bridge_weight / (:rrf_k + hop.rank), 0) AS score,
    coalesce(fuse.direct, false) AS direct
FROM fuse
FULL JOIN hop ON hop.chunk_id = fuse.chunk_id
