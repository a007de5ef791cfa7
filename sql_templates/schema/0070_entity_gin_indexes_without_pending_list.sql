-- Entity resolution probes both GIN indexes on entity for every name (the trigram index for near
-- names, the aliases index for recorded aliases) while the same run inserts the entities it
-- creates. GIN's default fast update appends new rows to a pending list that every search reads in
-- full until a vacuum merges it, so during a build each probe read most of the entities written
-- since the last vacuum. Replaying 1,000 MuSiQue passages' resolution, the probes took 28 s with
-- the pending lists and 3 s without. A few names per document go into the indexes directly
-- instead, and the facts lane's fuzzy mentions stop reading a pending list too.
ALTER INDEX entity_name_trgm_idx SET (fastupdate = off);
ALTER INDEX entity_aliases_idx SET (fastupdate = off);
-- Rows already pending are merged now rather than at the next vacuum.
SELECT gin_clean_pending_list('entity_name_trgm_idx'::regclass), gin_clean_pending_list('entity_aliases_idx'::regclass);
