-- API tokens of `lanegraph serve`: each maps a bearer secret to the scopes its requests run under.
--
-- Only the SHA-256 of the secret is stored, so a copy of the table (a backup, a replica) opens
-- nothing. `grant_scopes` NULL marks an owner token (every row, and token administration); a list,
-- possibly empty (public rows only), is the confined caller's scopes. The column is deliberately not
-- named `scopes`: lanegraph_apply_row_security() gives the caller roles read access to every table
-- with that column, and no caller may read another's token row, hashed or not. Like the confined
-- logins' table, only the owner reads it.
CREATE TABLE IF NOT EXISTS lanegraph_api_token (
    id             text PRIMARY KEY,
    name           text NOT NULL,
    secret_sha256  bytea NOT NULL UNIQUE,
    grant_scopes   text[],
    created_at     timestamptz NOT NULL DEFAULT now(),
    revoked_at     timestamptz,
    last_used_at   timestamptz
);
REVOKE ALL ON lanegraph_api_token FROM PUBLIC;
