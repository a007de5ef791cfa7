-- Sources lane, the turns around a hit: in a conversation the answer to a question is often the
-- reply to the turn that shares its words ("What did you do yesterday?" is found, "We went to the
-- support group" answers), and a turn goes on from the one before it. Every turn the fusion found
-- (`scored`: the first fusion, or the bridge hop's) lends :turn_reply_weight of its score to the
-- next turn of its session and :turn_context_weight to the turn before it; a turn reached both as
-- a hit and as a neighbour adds the two (lift.sql adds the lent rows to `scored`). Documents
-- that are not turns pass through unchanged.
-- Neighbours are probed through (conversation, session, turn) (0071), a handful of rows per hit.
WITH hit AS (
    SELECT scored.score, document.conversation, document.session, document.turn
    FROM scored
    JOIN chunk ON chunk.id = scored.chunk_id
    JOIN document ON document.id = chunk.document_id
    WHERE document.conversation IS NOT NULL
),
neighbor AS (
    SELECT hit.score * :turn_reply_weight AS score, hit.conversation, hit.session, hit.turn + 1 AS turn
    FROM hit
    UNION ALL
    SELECT hit.score * :turn_context_weight, hit.conversation, hit.session, hit.turn - 1
    FROM hit
)
SELECT chunk.id AS chunk_id, neighbor.score, false AS direct
FROM neighbor
JOIN document
  ON document.conversation = neighbor.conversation
 AND document.session = neighbor.session
 AND document.turn = neighbor.turn
JOIN chunk ON chunk.document_id = document.id
WHERE neighbor.score > 0  -- @constant: a weight of 0 lends nothing, and makes no candidate
