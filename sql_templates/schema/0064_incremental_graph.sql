-- What the graph-wide summaries were built from, so a refresh redoes only what changed.
--
-- Each community, profile and RAPTOR node records a digest of the text it summarised: a refresh that
-- finds the same digest keeps the row as it is (id, summary and embedding), one that finds another
-- summarises and embeds it again. community_edge holds the weighted entity pairs the communities were
-- partitioned over: the pairs that differ now are where the new or changed documents touched the
-- graph, and only the communities holding their entities are partitioned again.
ALTER TABLE community ADD COLUMN IF NOT EXISTS source_digest text;
ALTER TABLE profile ADD COLUMN IF NOT EXISTS source_digest text;
ALTER TABLE raptor_node ADD COLUMN IF NOT EXISTS source_digest text;

CREATE TABLE IF NOT EXISTS community_edge (
    source  text NOT NULL,
    target  text NOT NULL,
    weight  double precision NOT NULL,
    scopes  text[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (source, target)
);

-- The new table carries scopes: it needs the policies and grants every scoped table has.
SELECT lanegraph_apply_row_security();
