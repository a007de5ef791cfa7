-- Sources lane, the scores a lending part leaves: `lifted` is the scores so far (`scored`) and the
-- rows a part lends (named_facts, turns) in one union, and each chunk keeps the sum of its rows.
-- A chunk only lent to becomes a candidate with what it was lent; `direct` stays true for a chunk
-- the fusion found directly.
SELECT lifted.chunk_id, sum(lifted.score) AS score, bool_or(lifted.direct) AS direct
FROM lifted
GROUP BY lifted.chunk_id
