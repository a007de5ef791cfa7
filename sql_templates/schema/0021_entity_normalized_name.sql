-- Entity resolution looks names up without their kind (the same name under another kind, a
-- project's short name); the unique (kind, normalized_name) index cannot serve that.
CREATE INDEX IF NOT EXISTS entity_normalized_name_idx ON entity (normalized_name);
