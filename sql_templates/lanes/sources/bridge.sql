-- Sources lane, bridge hop: the second hop of a multi-hop question ("the currency of the country
-- the singer of X is from"). What the best :bridge_seeds chunks of the first fusion name leads on
-- along the graph, to chunks that rarely share words with the question. A seed must score at least
-- :bridge_seed_share of the best chunk's fused score: when the question names a page, that page is
-- the first hop, and the links of chunks far behind it would crowd out its own. The seeds lead on
-- through the entities they mention (entity_mention) and the pages whose titles they name
-- (title_link, a page's title being its main entity). Names the question itself holds are its
-- first hop, which the other rankings have already. Titles and title links are looked up with
-- their accents folded (0068), as the question's terms also are.
-- Two rankings join the fusion; a chunk at rank r of one gains :bridge_weight * rrf_k / (rrf_k + r),
-- nearly the whole weight near the top, so the best linked page can rise between the seeds:
--   titled: chunks of the pages a seed names (by title, or by an entity named like the title);
--   named:  the seeds, in fusion order, then the other chunks naming a linked entity or title.
--           Ranking the seeds keeps a chunk the first fusion also found from overtaking the seed
--           that led to it, for a shared name is a looser link than a title. Names found in
--           :bridge_fanout chunks or more are hubs ("United States") that lead everywhere, and are
--           not followed this way.
-- Within each ranking, what the better seed leads to comes first, nearest the question first: the
-- best seed is the likeliest first hop. Neither ranking returns to the seeds' own documents.
WITH ranked_fuse AS (
    SELECT
        fuse.chunk_id,
        fuse.score,
        row_number() OVER (ORDER BY fuse.score DESC, fuse.chunk_id) AS rank,
        max(fuse.score) OVER () AS best_score
    FROM fuse
),
seed AS (
    SELECT ranked_fuse.chunk_id, chunk.document_id, ranked_fuse.score, ranked_fuse.rank
    FROM ranked_fuse
    JOIN chunk ON chunk.id = ranked_fuse.chunk_id
    WHERE ranked_fuse.rank <= :bridge_seeds
      AND ranked_fuse.score >= :bridge_seed_share * ranked_fuse.best_score
),
seed_entity AS (
    SELECT entity_mention.entity_id, lower(entity_mention.name) AS name, min(seed.rank) AS seed_rank
    FROM seed
    JOIN entity_mention ON entity_mention.chunk_id = seed.chunk_id
    WHERE NOT lower(entity_mention.name) = ANY(:question_terms)
    GROUP BY entity_mention.entity_id, lower(entity_mention.name)
),
seed_title AS (
    SELECT title_link.linked_document_id, title_link.name, min(seed.rank) AS seed_rank
    FROM seed
    JOIN title_link ON title_link.document_id = seed.document_id AND title_link.chunk_id = seed.chunk_id
    WHERE NOT title_link.name = ANY(:question_terms)
    GROUP BY title_link.linked_document_id, title_link.name
),
mentioning AS (
    -- At most :bridge_fanout chunks per entity or title: enough to tell a hub, never a hub's every chunk.
    SELECT linked.entity_id, linked.seed_rank, fanout.chunk_id
    FROM (
        SELECT seed_entity.entity_id, min(seed_entity.seed_rank) AS seed_rank
        FROM seed_entity
        GROUP BY seed_entity.entity_id
    ) AS linked
    CROSS JOIN LATERAL (
        SELECT DISTINCT entity_mention.chunk_id
        FROM entity_mention
        WHERE entity_mention.entity_id = linked.entity_id
        ORDER BY entity_mention.chunk_id
        LIMIT :bridge_fanout
    ) AS fanout
),
naming AS (
    SELECT linked.name, linked.seed_rank, fanout.chunk_id
    FROM (
        SELECT seed_title.name, min(seed_title.seed_rank) AS seed_rank
        FROM seed_title
        GROUP BY seed_title.name
    ) AS linked
    CROSS JOIN LATERAL (
        SELECT DISTINCT title_link.chunk_id
        FROM title_link
        WHERE title_link.name = linked.name
        ORDER BY title_link.chunk_id
        LIMIT :bridge_fanout
    ) AS fanout
),
linked_name AS (
    -- Folded here, not in the join: under row security a join condition that calls a function
    -- which is not leakproof cannot probe document's index, and a confined caller would read
    -- every document instead.
    SELECT lanegraph_fold_accents(seed_entity.name) AS title_key, min(seed_entity.seed_rank) AS seed_rank
    FROM seed_entity
    GROUP BY lanegraph_fold_accents(seed_entity.name)
),
linked AS (
    SELECT false AS named, chunk.id AS chunk_id, linked_name.seed_rank, chunk.embedding <=> :query_vector AS distance
    FROM linked_name
    JOIN document ON document.title_lower = linked_name.title_key
    JOIN chunk ON chunk.document_id = document.id
    -- The join's keys again as one array: a generic plan guesses dozens of linked names and, on a
    -- small corpus, hashes every document rather than probe the title index for the few there are
    -- (10k chunks: 0.4 of find's 6.4 ms).
    WHERE document.title_lower = ANY(ARRAY(SELECT linked_name.title_key FROM linked_name))
      AND document.id NOT IN (SELECT seed.document_id FROM seed)
    UNION ALL
    SELECT false, chunk.id, seed_title.seed_rank, chunk.embedding <=> :query_vector
    FROM seed_title
    JOIN chunk ON chunk.document_id = seed_title.linked_document_id
    WHERE seed_title.linked_document_id NOT IN (SELECT seed.document_id FROM seed)
    UNION ALL
    SELECT true, chunk.id, mentioning.seed_rank, chunk.embedding <=> :query_vector
    FROM mentioning
    JOIN chunk ON chunk.id = mentioning.chunk_id
    WHERE mentioning.entity_id IN (
        SELECT mentioning.entity_id
        FROM mentioning
        GROUP BY mentioning.entity_id
        HAVING count(*) < :bridge_fanout
    )
      AND chunk.document_id NOT IN (SELECT seed.document_id FROM seed)
    UNION ALL
    SELECT true, chunk.id, naming.seed_rank, chunk.embedding <=> :query_vector
    FROM naming
    JOIN chunk ON chunk.id = naming.chunk_id
    WHERE naming.name IN (
        SELECT naming.name
        FROM naming
        GROUP BY naming.name
        HAVING count(*) < :bridge_fanout
    )
      AND chunk.document_id NOT IN (SELECT seed.document_id FROM seed)
),
ranked AS (
    SELECT
        linked.named,
        linked.chunk_id,
        row_number() OVER (
            PARTITION BY linked.named
            ORDER BY min(linked.seed_rank), min(linked.distance), linked.chunk_id
        ) AS rank
    FROM linked
    GROUP BY linked.named, linked.chunk_id
),
hop AS (
    SELECT seed.chunk_id, seed.rank
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
