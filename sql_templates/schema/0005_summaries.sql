-- Graph-wide summaries: communities, entity profiles and the RAPTOR tree.
CREATE TABLE IF NOT EXISTS community (
    id         text PRIMARY KEY,
    level      integer NOT NULL CHECK (level >= 0),
    parent_id  text REFERENCES community (id) ON DELETE CASCADE,
    label      text NOT NULL,
    summary    text NOT NULL,
    members    text[] NOT NULL,
    embedding  vector({{embedding_dimension}}),
    scopes     text[] NOT NULL DEFAULT '{}'
);

CREATE TABLE IF NOT EXISTS profile (
    entity_id   text PRIMARY KEY REFERENCES entity (id) ON DELETE CASCADE,
    summary     text NOT NULL,
    fact_count  integer NOT NULL,
    embedding   vector({{embedding_dimension}}),
    scopes      text[] NOT NULL DEFAULT '{}'
);

CREATE TABLE IF NOT EXISTS raptor_node (
    id         text PRIMARY KEY,
    level      integer NOT NULL CHECK (level >= 1),
    summary    text NOT NULL,
    -- Level 1 children are chunk ids; higher levels' children are raptor_node ids.
    children   text[] NOT NULL,
    embedding  vector({{embedding_dimension}}),
    scopes     text[] NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS raptor_node_level_idx ON raptor_node (level);
