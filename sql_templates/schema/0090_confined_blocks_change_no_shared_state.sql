-- A confined block changes nothing another tenant shares.
--
-- 0051's confined blocks all logged in as one login per caller role. PostgreSQL lets a role change
-- its own settings and password and signal its own backends, so a block that ran `SET ROLE NONE`
-- could `ALTER ROLE CURRENT_USER SET statement_timeout = '1ms'` (every later block failed) or
-- `pg_terminate_backend` every other tenant's session. The reader could also write the fact access
-- counters that every tenant's ranking reads, and the writer's table-level UPDATE and DELETE let it
-- `LOCK TABLE ... IN ACCESS EXCLUSIVE MODE`. Now:
--   * each caller role and scope set has a login of its own (lanegraph_confined_login_for), so what
--     a block does to its login reaches only later blocks of the same scopes, and the owner resets
--     the login's settings before any new connection of it logs in; no login signals another's
--     backends, and none is a member of pg_signal_backend;
--   * no caller role holds UPDATE or DELETE on a whole table: the writer updates through column
--     grants and deletes through lanegraph_delete_own_rows(), so LOCK TABLE gives it at most ROW
--     EXCLUSIVE (what its INSERT takes anyway), and the reader at most ACCESS SHARE;
--   * fact access is counted only by lanegraph_record_fact_access(), which counts the ids find
--     handed out (signed by the application, like the scopes), only of facts the caller may read,
--     and keeps the counters within bounds that the facts lane's ranking also clamps to;
--   * every key a writer writes is under its id prefix: besides `id` and `..._id` columns (0052),
--     the text columns of a unique key that holds neither `scopes` nor such a column (community_edge's
--     entity pair, entity_kind's name), and a reference through any other column must name a row the
--     writer can read. A used key and an unused one are refused alike, by row security.

-- Counters: nothing outside find's own path writes them, and they stay within what ranks.
REVOKE UPDATE (access_count, last_accessed) ON fact FROM lanegraph_reader;
DROP POLICY IF EXISTS lanegraph_reader_record_access ON fact;
UPDATE fact SET access_count = 0 WHERE access_count < 0;
UPDATE fact SET access_count = 1000000000 WHERE access_count > 1000000000;
UPDATE fact SET last_accessed = NULL WHERE NOT isfinite(last_accessed);
ALTER TABLE fact ADD CONSTRAINT fact_access_count_in_range CHECK (access_count BETWEEN 0 AND 1000000000);
ALTER TABLE fact ADD CONSTRAINT fact_last_accessed_finite CHECK (isfinite(last_accessed));

-- One login per caller role and scope set. The shared logins of 0051 go: nothing logs in as them.
-- Not named `scopes`: lanegraph_apply_row_security() would put the table of keys under row security
-- and grant the caller roles SELECT on it.
ALTER TABLE lanegraph_confined_login ADD COLUMN IF NOT EXISTS caller_scopes text[];
DO $shared$
DECLARE
    shared_login name;
BEGIN
    FOR shared_login IN SELECT login FROM lanegraph_confined_login WHERE caller_scopes IS NULL LOOP
        EXECUTE format('DROP ROLE IF EXISTS %I', shared_login);
    END LOOP;
    DELETE FROM lanegraph_confined_login WHERE caller_scopes IS NULL;
END
$shared$;
ALTER TABLE lanegraph_confined_login ALTER COLUMN caller_scopes SET NOT NULL;
ALTER TABLE lanegraph_confined_login DROP CONSTRAINT IF EXISTS lanegraph_confined_login_pkey;
ALTER TABLE lanegraph_confined_login ADD PRIMARY KEY (caller_role, caller_scopes);

-- Checks the caller roles, and creates the login roles a restore into another server lacks.
CREATE OR REPLACE FUNCTION lanegraph_ensure_confined_logins() RETURNS void
    LANGUAGE plpgsql
AS $logins$
DECLARE
    group_role name;
    missing record;
BEGIN
    FOREACH group_role IN ARRAY ARRAY['lanegraph_reader', 'lanegraph_writer']::name[] LOOP
        -- A caller role that is a member of another role could SET ROLE to it from a confined session.
        IF EXISTS (SELECT FROM pg_auth_members WHERE member = group_role::text::regrole) THEN
            RAISE EXCEPTION 'role % is a member of other roles, which a confined session could switch to', group_role
                USING ERRCODE = 'insufficient_privilege',
                      HINT = format('revoke every role granted to %I', group_role);
        END IF;
    END LOOP;
    FOR missing IN
        SELECT l.caller_role, l.login, l.password FROM lanegraph_confined_login l
        WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = l.login)
    LOOP
        PERFORM lanegraph_create_login(missing.caller_role, missing.login, missing.password);
    END LOOP;
END
$logins$;
REVOKE ALL ON FUNCTION lanegraph_ensure_confined_logins() FROM PUBLIC;

CREATE OR REPLACE FUNCTION lanegraph_create_login(group_role name, login_name name, login_password text) RETURNS void
    LANGUAGE plpgsql
AS $create$
BEGIN
    EXECUTE format(
        'CREATE ROLE %I LOGIN NOINHERIT NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE PASSWORD %L',
        login_name, login_password
    );
    EXECUTE format('GRANT %I TO %I WITH INHERIT FALSE, SET TRUE', group_role, login_name);
EXCEPTION
    -- Another connection of the owner created it between our check and our CREATE.
    WHEN duplicate_object THEN NULL;
    WHEN insufficient_privilege THEN
        RAISE EXCEPTION '% may not create the login role for %', current_user, group_role
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'ask an administrator to run: ALTER ROLE ' || quote_ident(current_user) || ' CREATEROLE; '
                      'GRANT lanegraph_reader, lanegraph_writer TO ' || quote_ident(current_user)
                      || ' WITH ADMIN TRUE, INHERIT FALSE, SET TRUE;';
END
$create$;
REVOKE ALL ON FUNCTION lanegraph_create_login(name, name, text) FROM PUBLIC;

-- The login for a caller role and scope set, made on first use; run by the owner before a new
-- connection of it logs in. Settings the login gave itself (ALTER ROLE CURRENT_USER SET, in any
-- database) are reset, and with `reset_password` its password is set again, so a block can break
-- at most its own open connections. On a hot standby only an existing login is returned: there the
-- caller falls back to the primary, which makes it.
CREATE OR REPLACE FUNCTION lanegraph_confined_login_for(wanted_role name, wanted_scopes text[], reset_password boolean)
    RETURNS TABLE (login name, password text, signing_key bytea)
    LANGUAGE plpgsql
AS $login_for$
DECLARE
    chosen lanegraph_confined_login;
    setting record;
BEGIN
    IF wanted_role NOT IN ('lanegraph_reader', 'lanegraph_writer') THEN
        RAISE EXCEPTION '% is not a caller role', wanted_role USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT * INTO chosen FROM lanegraph_confined_login l WHERE l.caller_role = wanted_role AND l.caller_scopes = wanted_scopes;
    IF NOT FOUND THEN
        IF pg_is_in_recovery() THEN
            RETURN;
        END IF;
        -- gen_random_uuid() draws 122 bits from the server's strong random source.
        INSERT INTO lanegraph_confined_login (caller_role, caller_scopes, login, password, signing_key)
        VALUES (
            wanted_role, wanted_scopes, wanted_role || '_' || left(replace(gen_random_uuid()::text, '-', ''), 12),
            replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''),
            decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex')
        )
        ON CONFLICT (caller_role, caller_scopes) DO NOTHING;
        SELECT * INTO chosen FROM lanegraph_confined_login l WHERE l.caller_role = wanted_role AND l.caller_scopes = wanted_scopes;
    END IF;
    IF NOT pg_is_in_recovery() THEN
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = chosen.login) THEN
            PERFORM lanegraph_create_login(chosen.caller_role, chosen.login, chosen.password);
        END IF;
        FOR setting IN
            SELECT d.datname FROM pg_db_role_setting s LEFT JOIN pg_database d ON d.oid = s.setdatabase
            WHERE s.setrole = (SELECT oid FROM pg_roles WHERE rolname = chosen.login)
        LOOP
            IF setting.datname IS NULL THEN
                EXECUTE format('ALTER ROLE %I RESET ALL', chosen.login);
            ELSE
                EXECUTE format('ALTER ROLE %I IN DATABASE %I RESET ALL', chosen.login, setting.datname);
            END IF;
        END LOOP;
        IF reset_password THEN
            EXECUTE format('ALTER ROLE %I PASSWORD %L', chosen.login, chosen.password);
        END IF;
    END IF;
    RETURN QUERY SELECT chosen.login, chosen.password, chosen.signing_key;
END
$login_for$;
REVOKE ALL ON FUNCTION lanegraph_confined_login_for(name, text[], boolean) FROM PUBLIC;

-- Row security and grants, replacing 0052's: the read policies are unchanged.
CREATE OR REPLACE FUNCTION lanegraph_apply_row_security() RETURNS void
    LANGUAGE plpgsql
AS $apply$
DECLARE
    target record;
    -- A scalar subquery becomes an InitPlan: the setting is parsed once per statement, not per row.
    caller_holds_row_scopes constant text := 'scopes <@ (SELECT lanegraph_caller_scopes())';
    caller_may_read_row constant text :=
        '(cardinality(scopes) = 0 AND (SELECT lanegraph_caller_scopes()) IS NOT NULL) OR ' || caller_holds_row_scopes;
    -- Public rows (no scopes) are shared by every tenant, so only the owner may change them.
    caller_may_change_row constant text := caller_holds_row_scopes || ' AND scopes <> ''{}''';
    -- Counted by lanegraph_record_fact_access alone.
    counters constant name[] := ARRAY['access_count', 'last_accessed'];
    prefixed name[];
    writer_may_write text;
    references_readable text;
    writable_columns text;
BEGIN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO lanegraph_reader, lanegraph_writer', current_schema());
    FOR target IN
        SELECT c.oid::regclass AS relation, c.relname AS name, pg_get_userbyid(c.relowner) AS owner
        FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace
        JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'scopes' AND NOT a.attisdropped
        WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
    LOOP
        EXECUTE format('CREATE STATISTICS IF NOT EXISTS %I ON (cardinality(scopes)) FROM %s',
                       target.name || '_public_rows', target.relation);
        EXECUTE format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', target.relation);
        EXECUTE format('ALTER TABLE %s FORCE ROW LEVEL SECURITY', target.relation);

        EXECUTE format('DROP POLICY IF EXISTS lanegraph_owner ON %s', target.relation);
        EXECUTE format('CREATE POLICY lanegraph_owner ON %s TO %I USING (true) WITH CHECK (true)',
                       target.relation, target.owner);

        EXECUTE format('DROP POLICY IF EXISTS lanegraph_reader_select ON %s', target.relation);
        EXECUTE format('CREATE POLICY lanegraph_reader_select ON %s FOR SELECT TO lanegraph_reader USING (%s)',
                       target.relation, caller_may_read_row);
        EXECUTE format('GRANT SELECT ON %s TO lanegraph_reader', target.relation);

        EXECUTE format('DROP POLICY IF EXISTS lanegraph_writer_select ON %s', target.relation);
        EXECUTE format('CREATE POLICY lanegraph_writer_select ON %s FOR SELECT TO lanegraph_writer USING (%s)',
                       target.relation, caller_may_read_row);

        -- The id columns (0052), then the text columns of every unique key that holds neither
        -- scopes nor an id column: a conflict on such a key would name another tenant's row.
        SELECT coalesce(array_agg(a.attname), '{}') INTO prefixed
        FROM pg_attribute a
        WHERE a.attrelid = target.relation AND a.attnum > 0 AND NOT a.attisdropped
          AND a.atttypid = 'text'::regtype AND (a.attname = 'id' OR a.attname LIKE '%\_id');
        SELECT prefixed || coalesce(array_agg(DISTINCT a.attname), '{}') INTO prefixed
        FROM pg_index i
        JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
        WHERE i.indrelid = target.relation AND i.indisunique AND a.atttypid = 'text'::regtype
          AND NOT EXISTS (
              SELECT FROM pg_attribute k
              WHERE k.attrelid = i.indrelid AND k.attnum = ANY(i.indkey) AND (k.attname = 'scopes' OR k.attname = ANY(prefixed))
          );
        SELECT coalesce(string_agg(
                   format('coalesce(starts_with(%1$I, (SELECT lanegraph_caller_id_prefix())), %1$I IS NULL)', column_name),
                   ' AND '), 'true')
        INTO writer_may_write
        FROM unnest(prefixed) AS column_name;
        -- A reference through any other column names a row the writer can read, or the foreign key's
        -- answer (a violation, or none) would tell whether a row it cannot read exists; a table
        -- without scopes (the owner's source registry) it may not reference at all.
        SELECT coalesce(string_agg(
                   CASE WHEN EXISTS (SELECT FROM pg_attribute s WHERE s.attrelid = f.confrelid AND s.attname = 'scopes')
                   THEN format('(%4$I.%1$I IS NULL OR EXISTS (SELECT FROM %2$s referenced WHERE referenced.%3$I = %4$I.%1$I))',
                               a.attname, f.confrelid::regclass, r.attname, target.name)
                   ELSE format('%2$I.%1$I IS NULL', a.attname, target.name) END,
                   ' AND '), 'true')
        INTO references_readable
        FROM pg_constraint f
        JOIN pg_attribute a ON a.attrelid = f.conrelid AND a.attnum = f.conkey[1]
        JOIN pg_attribute r ON r.attrelid = f.confrelid AND r.attnum = f.confkey[1]
        WHERE f.conrelid = target.relation AND f.contype = 'f' AND cardinality(f.conkey) = 1
          AND NOT a.attname = ANY(prefixed);
        writer_may_write := caller_may_change_row || ' AND ' || writer_may_write || ' AND ' || references_readable;
        EXECUTE format('DROP POLICY IF EXISTS lanegraph_writer_insert ON %s', target.relation);
        EXECUTE format('CREATE POLICY lanegraph_writer_insert ON %s FOR INSERT TO lanegraph_writer WITH CHECK (%s)',
                       target.relation, writer_may_write);
        EXECUTE format('DROP POLICY IF EXISTS lanegraph_writer_update ON %s', target.relation);
        EXECUTE format('CREATE POLICY lanegraph_writer_update ON %s FOR UPDATE TO lanegraph_writer USING (%s) WITH CHECK (%s)',
                       target.relation, writer_may_write, writer_may_write);
        -- Deletes go through lanegraph_delete_own_rows(): DELETE on the table would also let LOCK TABLE
        -- take any lock mode.
        EXECUTE format('DROP POLICY IF EXISTS lanegraph_writer_delete ON %s', target.relation);
        SELECT string_agg(quote_ident(a.attname), ', ') INTO writable_columns
        FROM pg_attribute a
        WHERE a.attrelid = target.relation AND a.attnum > 0 AND NOT a.attisdropped
          AND a.attgenerated = '' AND NOT a.attname = ANY(counters);
        EXECUTE format('REVOKE ALL ON %s FROM lanegraph_writer', target.relation);
        EXECUTE format('GRANT SELECT ON %s TO lanegraph_writer', target.relation);
        EXECUTE format('GRANT INSERT (%s), UPDATE (%s) ON %s TO lanegraph_writer',
                       writable_columns, writable_columns, target.relation);
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

-- True in a confined login's session; the owner's (and only the owner may run these functions
-- without being a caller role) is not confined.
CREATE OR REPLACE FUNCTION lanegraph_session_is_confined() RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER
RETURN EXISTS (SELECT FROM lanegraph_confined_login l WHERE l.login = session_user);

-- Counts the facts a find handed out, once per time it handed each out. In a confined session the
-- call must carry the application's signature over this backend and the ids (the scopes' key, see
-- 0051), which caller-written SQL cannot make, and only facts the caller may read are counted.
CREATE OR REPLACE FUNCTION lanegraph_record_fact_access(fact_ids text[], signature text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
AS $record$
DECLARE
    confined constant boolean := lanegraph_session_is_confined();
    caller_scopes constant text[] := lanegraph_caller_scopes();
    counted integer;
BEGIN
    IF confined AND (caller_scopes IS NULL OR signature IS DISTINCT FROM (
        SELECT encode(sha256(l.signing_key || sha256(l.signing_key || convert_to(
                   lanegraph_backend_identity() || ':access:' || fact_ids::text, 'UTF8'))), 'hex')
        FROM lanegraph_confined_login l WHERE l.login = session_user
    )) THEN
        RAISE EXCEPTION 'fact access is recorded only for what find handed out'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    -- Locked in id order first: concurrent finds (a server's clients asking alike questions) count
    -- overlapping facts, and an UPDATE locks rows in whatever order its join yields, so two of them
    -- deadlocked (16 of 366 requests of `lanegraph bench serve` at 16 clients).
    PERFORM 1 FROM fact
    WHERE fact.id = ANY(fact_ids)
      AND (NOT confined OR cardinality(fact.scopes) = 0 OR fact.scopes <@ caller_scopes)
    ORDER BY fact.id
    FOR UPDATE;
    UPDATE fact
    SET access_count = least(fact.access_count::bigint + accessed.times, 1000000000)::integer,
        last_accessed = now()
    FROM (SELECT id, count(*) AS times FROM unnest(fact_ids) AS id GROUP BY id) AS accessed
    WHERE fact.id = accessed.id
      AND (NOT confined OR cardinality(fact.scopes) = 0 OR fact.scopes <@ caller_scopes);
    GET DIAGNOSTICS counted = ROW_COUNT;
    RETURN counted;
END
$record$;
REVOKE ALL ON FUNCTION lanegraph_record_fact_access(text[], text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lanegraph_record_fact_access(text[], text) TO lanegraph_reader;

-- A writer's delete: the rows of `target` whose `key_column` is one of `keys`, only non-public rows
-- within its scopes (what 0052's delete policy allowed). The key column must be one row security
-- checks the id prefix of, so a delete names only keys a writer could have written.
CREATE OR REPLACE FUNCTION lanegraph_delete_own_rows(target regclass, key_column name, keys text[]) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
AS $delete$
DECLARE
    caller_scopes constant text[] := lanegraph_caller_scopes();
    deleted bigint;
BEGIN
    IF NOT EXISTS (SELECT FROM lanegraph_confined_login l WHERE l.login = session_user AND l.caller_role = 'lanegraph_writer')
       OR caller_scopes IS NULL THEN
        RAISE EXCEPTION 'only a confined writer deletes its own rows' USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NOT EXISTS (
        SELECT FROM pg_class c
        JOIN pg_attribute s ON s.attrelid = c.oid AND s.attname = 'scopes' AND NOT s.attisdropped
        JOIN pg_attribute k ON k.attrelid = c.oid AND k.attname = key_column AND NOT k.attisdropped
        WHERE c.oid = target AND c.relnamespace = current_schema()::regnamespace
          AND k.atttypid = 'text'::regtype AND (key_column = 'id' OR key_column LIKE '%\_id')
    ) THEN
        RAISE EXCEPTION '%.% is not a scoped table''s id column', target, key_column
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    EXECUTE format('DELETE FROM %s WHERE %I = ANY($1) AND scopes <@ $2 AND scopes <> ''{}''', target, key_column)
        USING keys, caller_scopes;
    GET DIAGNOSTICS deleted = ROW_COUNT;
    RETURN deleted;
END
$delete$;
REVOKE ALL ON FUNCTION lanegraph_delete_own_rows(regclass, name, text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lanegraph_delete_own_rows(regclass, name, text[]) TO lanegraph_writer;

-- PL/pgSQL resolves names when it runs, and a session's temporary schema comes first unless the
-- path names it: a caller's temporary table `fact` or `lanegraph_confined_login` would stand in for
-- ours. The definer functions search this schema's path, then pg_temp last.
DO $paths$
DECLARE
    definer regprocedure;
BEGIN
    FOREACH definer IN ARRAY ARRAY[
        'lanegraph_record_fact_access(text[], text)', 'lanegraph_delete_own_rows(regclass, name, text[])'
    ]::regprocedure[] LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path TO %s, pg_catalog, pg_temp', definer, current_setting('search_path'));
    END LOOP;
END
$paths$;
