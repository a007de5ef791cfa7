-- Working memory: short-lived items found by the working_memory lane until promoted to documents.
CREATE TABLE IF NOT EXISTS session_item (
    id           text PRIMARY KEY,
    text         text NOT NULL,
    embedding    vector({{embedding_dimension}}),
    created_at   timestamptz NOT NULL DEFAULT now(),
    promoted_at  timestamptz,
    document_id  text REFERENCES document (id) ON DELETE SET NULL,
    scopes       text[] NOT NULL DEFAULT '{}'
);
