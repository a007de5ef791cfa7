-- Ingest jobs accepted by `lanegraph serve` (POST /documents), so GET /jobs/{id} answers from any
-- worker process, and a job's outcome outlives the process that ran it. Owner-only, like the tokens.
CREATE TABLE IF NOT EXISTS lanegraph_api_job (
    id            text PRIMARY KEY,
    token_id      text NOT NULL REFERENCES lanegraph_api_token (id),
    state         text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'succeeded', 'failed')),
    records       integer NOT NULL,
    source_path   text NOT NULL,
    submitted_at  timestamptz NOT NULL DEFAULT now(),
    started_at    timestamptz,
    finished_at   timestamptz,
    report        jsonb,
    error         text
);
REVOKE ALL ON lanegraph_api_job FROM PUBLIC;
