-- Scopes enforced by PostgreSQL row-level security, not by WHERE clauses the application might forget.
--
-- A caller reads a row only if it holds every scope of the row: `row.scopes <@ caller scopes`. The
-- caller's scopes live in the transaction-local setting `lanegraph.scopes` (a text[] literal); with no
-- setting a caller sees no rows at all. Two non-owner roles act for callers:
--   lanegraph_reader  reads (find, fusion primitives) and may record fact access;
--   lanegraph_writer  reads like the reader; inserts, updates and deletes only rows within its
--                     scopes, never public rows (empty scopes), which every tenant shares.
-- The owner (the role that ran the migrations) keeps full access through its own policy, because
-- row security is forced: without that policy even the owner would see nothing.
--
-- Roles belong to the whole cluster while this schema belongs to one database: many schemas (the
-- test suite) and many databases share the two roles, each granting them rights on its own tables.

DO $roles$
DECLARE
    role_name text;
    grant_advice constant text :=
        'ask an administrator to run: CREATE ROLE lanegraph_reader NOLOGIN; '
        'CREATE ROLE lanegraph_writer NOLOGIN; '
        'GRANT lanegraph_reader, lanegraph_writer TO ' || quote_ident(current_user)
        || ' WITH INHERIT FALSE, SET TRUE;';
BEGIN
    FOREACH role_name IN ARRAY ARRAY['lanegraph_reader', 'lanegraph_writer'] LOOP
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = role_name) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN NOINHERIT', role_name);
            EXCEPTION
                -- Another database's migration created it between our check and our CREATE.
                WHEN duplicate_object OR unique_violation THEN NULL;
                WHEN insufficient_privilege THEN
                    RAISE EXCEPTION 'role % does not exist and % may not create roles', role_name, current_user
                        USING ERRCODE = 'insufficient_privilege', HINT = grant_advice;
            END;
        END IF;
        -- A role that bypasses row security would read every tenant's rows: refuse to use it.
        IF EXISTS (SELECT FROM pg_roles WHERE rolname = role_name AND (rolsuper OR rolbypassrls)) THEN
            RAISE EXCEPTION 'role % is a superuser or has BYPASSRLS, so row security cannot confine it', role_name
                USING ERRCODE = 'insufficient_privilege',
                      HINT = format('run ALTER ROLE %I NOSUPERUSER NOBYPASSRLS', role_name);
        END IF;
        -- A role holding the owner's rights would match the owner's allow-everything policy.
        IF pg_has_role(role_name, current_user, 'USAGE') THEN
            RAISE EXCEPTION 'role % holds the rights of %, which owns the tables', role_name, current_user
                USING ERRCODE = 'insufficient_privilege',
                      HINT = format('run REVOKE %I FROM %I', current_user, role_name);
        END IF;
        -- The application switches into the role with SET ROLE, which needs membership with SET.
        IF NOT pg_has_role(current_user, role_name, 'SET') THEN
            BEGIN
                EXECUTE format('GRANT %I TO %I WITH INHERIT FALSE, SET TRUE', role_name, current_user);
            EXCEPTION
                WHEN insufficient_privilege THEN
                    RAISE EXCEPTION '% may not switch to role % and cannot grant it to itself', current_user, role_name
                        USING ERRCODE = 'insufficient_privilege', HINT = grant_advice;
            END;
        END IF;
    END LOOP;
END
$roles$;

-- The caller's scopes; NULL (no rows pass `scopes <@ NULL`) when the transaction set none. An unset
-- placeholder reads as NULL before its first use in a session and as '' afterwards: both mean none.
CREATE OR REPLACE FUNCTION lanegraph_caller_scopes() RETURNS text[]
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN nullif(current_setting('lanegraph.scopes', true), '')::text[];

-- Puts every table that has a `scopes` column under forced row security with the policies above, and
-- grants the roles their rights; every view runs with its caller's rights so it cannot bypass the
-- policies. Idempotent: a migration that adds a table or recreates a view ends by calling it again.
CREATE OR REPLACE FUNCTION lanegraph_apply_row_security() RETURNS void
    LANGUAGE plpgsql
AS $apply$
DECLARE
    target record;
    -- A scalar subquery becomes an InitPlan: the setting is parsed once per statement, not per row.
    caller_holds_row_scopes constant text := 'scopes <@ (SELECT lanegraph_caller_scopes())';
    -- Public rows (no scopes) are shared by every tenant, so only the owner may change them.
    caller_may_change_row constant text := caller_holds_row_scopes || ' AND scopes <> ''{}''';
BEGIN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO lanegraph_reader, lanegraph_writer', current_schema());
    FOR target IN
        SELECT c.oid::regclass AS relation, pg_get_userbyid(c.relowner) AS owner
        FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace
        JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'scopes' AND NOT a.attisdropped
        WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
    LOOP
        EXECUTE format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', target.relation);
        EXECUTE format('ALTER TABLE %s FORCE ROW LEVEL SECURITY', target.relation);

        EXECUTE format('DROP POLICY IF EXISTS lanegraph_owner ON %s', target.relation);
        EXECUTE format('CREATE POLICY lanegraph_owner ON %s TO %I USING (true) WITH CHECK (true)',
                       target.relation, target.owner);

        EXECUTE format('DROP POLICY IF EXISTS lanegraph_reader_select ON %s', target.relation);
        EXECUTE format('CREATE POLICY lanegraph_reader_select ON %s FOR SELECT TO lanegraph_reader USING (%s)',
                       target.relation, caller_holds_row_scopes);
        EXECUTE format('GRANT SELECT ON %s TO lanegraph_reader', target.relation);

        EXECUTE format('DROP POLICY IF EXISTS lanegraph_writer_select ON %s', target.relation);
        EXECUTE format('CREATE POLICY lanegraph_writer_select ON %s FOR SELECT TO lanegraph_writer USING (%s)',
                       target.relation, caller_holds_row_scopes);
        EXECUTE format('DROP POLICY IF EXISTS lanegraph_writer_insert ON %s', target.relation);
        EXECUTE format('CREATE POLICY lanegraph_writer_insert ON %s FOR INSERT TO lanegraph_writer WITH CHECK (%s)',
                       target.relation, caller_may_change_row);
        EXECUTE format('DROP POLICY IF EXISTS lanegraph_writer_update ON %s', target.relation);
        EXECUTE format('CREATE POLICY lanegraph_writer_update ON %s FOR UPDATE TO lanegraph_writer USING (%s) WITH CHECK (%s)',
                       target.relation, caller_may_change_row, caller_may_change_row);
        EXECUTE format('DROP POLICY IF EXISTS lanegraph_writer_delete ON %s', target.relation);
        EXECUTE format('CREATE POLICY lanegraph_writer_delete ON %s FOR DELETE TO lanegraph_writer USING (%s)',
                       target.relation, caller_may_change_row);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %s TO lanegraph_writer', target.relation);
    END LOOP;
    FOR target IN
        SELECT c.oid::regclass AS relation
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = current_schema() AND c.relkind = 'v'
    LOOP
        -- A view runs with its owner's rights unless told otherwise, and the owner's policy allows all.
        EXECUTE format('ALTER VIEW %s SET (security_invoker = true)', target.relation);
        EXECUTE format('GRANT SELECT ON %s TO lanegraph_reader, lanegraph_writer', target.relation);
    END LOOP;
    EXECUTE format('GRANT USAGE ON ALL SEQUENCES IN SCHEMA %I TO lanegraph_writer', current_schema());
END
$apply$;

SELECT lanegraph_apply_row_security();

-- find records which facts it returned; the reader may touch only these two columns, of rows it can see.
GRANT UPDATE (access_count, last_accessed) ON fact TO lanegraph_reader;
DROP POLICY IF EXISTS lanegraph_reader_record_access ON fact;
CREATE POLICY lanegraph_reader_record_access ON fact FOR UPDATE TO lanegraph_reader
    USING (scopes <@ (SELECT lanegraph_caller_scopes()));
