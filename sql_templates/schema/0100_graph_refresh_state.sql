-- What each graph-wide refresh consumed: a digest of the documents (ids and content hashes) as the
-- step read them when it started. A step records it after its last write, so a step killed before
-- that still shows the old digest, and the next ingest (or an asset check) sees the graph out of step
-- with its sources and runs the refresh again, even when no document is new.
-- Bookkeeping of the owner's write side: no scopes, no grant to confined logins.
CREATE TABLE IF NOT EXISTS lanegraph_graph_refresh (
    step          text PRIMARY KEY,
    sources_state text NOT NULL,
    refreshed_at  timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON lanegraph_graph_refresh FROM PUBLIC;
