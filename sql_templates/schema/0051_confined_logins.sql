-- Confined sessions that cannot escalate: a caller's block logs in as a role that holds nothing
-- privileged, and its scopes are signed, so even a statement the caller writes stays confined.
--
-- Before, a confined transaction was the owner's connection after `SET LOCAL ROLE lanegraph_reader`
-- and `set_config('lanegraph.scopes', ...)`: `RESET ROLE` returned to the owner, and set_config
-- chose any scopes. Now each block is a connection of its own, opened as this schema's login role
-- for the caller role (lanegraph_reader or lanegraph_writer) and closed at the end of the block:
--   * the login is NOINHERIT and a member of its caller role only (SET, no INHERIT), and the session
--     starts with `role` set to that caller role, so SET ROLE reaches nothing else, RESET ROLE
--     returns to the caller role, `SET ROLE NONE` leaves a role with no rights at all, and SET
--     SESSION AUTHORIZATION needs a superuser;
--   * the scopes are published with a signature, `lanegraph.scopes_signature`, computed by the
--     application with a key only the owner can read, over the backend's pid and the scopes text.
--     lanegraph_caller_scopes() (SECURITY DEFINER) checks it against the key of session_user, which
--     the session cannot change: other scopes, a signature made for another backend, or none at
--     all mean no scopes, and no rows.
-- The logins are per schema (one row per caller role below), so each schema's key and password
-- belong to it alone; roles belong to the whole cluster and are created here, like 0040's.

CREATE TABLE IF NOT EXISTS lanegraph_confined_login (
    caller_role  name PRIMARY KEY,
    login        name NOT NULL UNIQUE,
    password     text NOT NULL,
    signing_key  bytea NOT NULL
);
-- Only the owner reads the passwords and keys: the caller roles get no rights on this table.
REVOKE ALL ON lanegraph_confined_login FROM PUBLIC;

-- Creates what is missing: the login rows, and the roles themselves, which a restore into another
-- server lacks (roles are not part of a database's dump). Run by this migration and whenever the
-- application opens the primary (pipelines/resources/migrations.py).
CREATE OR REPLACE FUNCTION lanegraph_ensure_confined_logins() RETURNS void
    LANGUAGE plpgsql
AS $logins$
DECLARE
    group_role name;
    login_name name;
    login_password text;
    grant_advice constant text :=
        'ask an administrator to run: ALTER ROLE ' || quote_ident(current_user) || ' CREATEROLE; '
        'GRANT lanegraph_reader, lanegraph_writer TO ' || quote_ident(current_user)
        || ' WITH ADMIN TRUE, INHERIT FALSE, SET TRUE;';
BEGIN
    FOREACH group_role IN ARRAY ARRAY['lanegraph_reader', 'lanegraph_writer']::name[] LOOP
        -- A caller role that is a member of another role could SET ROLE to it from a confined session.
        IF EXISTS (SELECT FROM pg_auth_members WHERE member = group_role::text::regrole) THEN
            RAISE EXCEPTION 'role % is a member of other roles, which a confined session could switch to', group_role
                USING ERRCODE = 'insufficient_privilege',
                      HINT = format('revoke every role granted to %I', group_role);
        END IF;
        IF NOT EXISTS (SELECT FROM lanegraph_confined_login WHERE caller_role = group_role) THEN
            -- gen_random_uuid() draws 122 bits from the server's strong random source.
            INSERT INTO lanegraph_confined_login (caller_role, login, password, signing_key)
            VALUES (
                group_role, group_role || '_' || left(replace(gen_random_uuid()::text, '-', ''), 12),
                replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''),
                decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex')
            );
        END IF;
        SELECT l.login, l.password INTO login_name, login_password
        FROM lanegraph_confined_login l WHERE l.caller_role = group_role;
        CONTINUE WHEN EXISTS (SELECT FROM pg_roles WHERE rolname = login_name);
        BEGIN
            EXECUTE format(
                'CREATE ROLE %I LOGIN NOINHERIT NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE PASSWORD %L',
                login_name, login_password
            );
            EXECUTE format('GRANT %I TO %I WITH INHERIT FALSE, SET TRUE', group_role, login_name);
        EXCEPTION
            WHEN insufficient_privilege THEN
                RAISE EXCEPTION '% may not create the login role for %', current_user, group_role
                    USING ERRCODE = 'insufficient_privilege', HINT = grant_advice;
        END;
    END LOOP;
END
$logins$;
REVOKE ALL ON FUNCTION lanegraph_ensure_confined_logins() FROM PUBLIC;

SELECT lanegraph_ensure_confined_logins();

-- What a scope signature is bound to: this backend's pid while the server runs. (A backend's start
-- time would also rule out a later backend reusing the pid, but pg_stat_activity hides it from the
-- caller roles, which do not hold the rights of the login.) The signature itself never appears in
-- statement text, which other sessions may see: it is sent as a bound parameter.
CREATE OR REPLACE FUNCTION lanegraph_backend_identity() RETURNS text
    LANGUAGE sql STABLE PARALLEL RESTRICTED
RETURN pg_backend_pid()::text || ':' || extract(epoch FROM pg_postmaster_start_time())::text;

-- The caller's scopes: the signed `lanegraph.scopes` of a confined login's own backend, else NULL
-- (no rows pass `scopes <@ NULL`). The body is parsed when it is created, so a caller's search_path
-- or temporary tables cannot redirect it to another key table; PARALLEL RESTRICTED because a
-- parallel worker has a pid of its own, and must receive the leader's value rather than compute one.
CREATE OR REPLACE FUNCTION lanegraph_caller_scopes() RETURNS text[]
    LANGUAGE sql STABLE SECURITY DEFINER PARALLEL RESTRICTED
RETURN (
    SELECT nullif(current_setting('lanegraph.scopes', true), '')::text[]
    FROM lanegraph_confined_login l
    WHERE l.login = session_user
      AND current_setting('lanegraph.scopes_signature', true) = encode(
          sha256(l.signing_key || sha256(l.signing_key || convert_to(
              lanegraph_backend_identity() || ':' || current_setting('lanegraph.scopes', true), 'UTF8'
          ))),
          'hex'
      )
);
