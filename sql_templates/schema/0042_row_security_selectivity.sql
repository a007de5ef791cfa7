-- Row-security policies whose selectivity the planner can estimate, so a confined caller keeps the
-- HNSW indexes: the vector indexes must still be used under row security.
--
-- 0040's read policy `scopes <@ (SELECT lanegraph_caller_scopes())` compares with a value unknown at
-- plan time, which PostgreSQL estimates at arraycontsel's default of 0.5 %. An ordered HNSW scan
-- under that filter "would read 200x LIMIT rows", so the planner seq-scanned and sorted every
-- embedded table instead (measured: find confined ~9x the owner's at 10k and 100k chunks).
--
-- Every caller with scopes reads the public rows ('{}' <@ x holds for every x), so the read policy
-- now names them first: `cardinality(scopes) = 0 OR ...` is estimated at least at the share of public
-- rows. That needs statistics the planner may use for a confined caller: it withholds a column's
-- most common values from a non-leakproof operator under row security (array `=` is not leakproof),
-- but int4 `=` is, so each scoped table gets expression statistics on cardinality(scopes), filled by
-- ANALYZE (autovacuum, or below for the rows already there).
--
-- No row a caller sees changes: an array has cardinality 0 exactly when it is empty, and '{}' <@ NULL
-- is NULL, not true, so a transaction that set no scopes must still see nothing, hence the IS NOT
-- NULL. Policies that change rows keep 0040's qual: they exclude public rows and drive no ordered scan.
--
-- This replaces 0040's lanegraph_apply_row_security(), so every later call (a migration adding a
-- table, a change of vector width recreating views) installs these policies.

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

-- Statistics for the rows already there; later changes are counted by autovacuum's ANALYZE.
DO $analyze$
DECLARE
    target regclass;
BEGIN
    FOR target IN
        SELECT s.stxrelid::regclass FROM pg_statistic_ext s
        WHERE s.stxnamespace = current_schema()::regnamespace AND s.stxname ~ '_public_rows$'
    LOOP
        EXECUTE format('ANALYZE %s', target);
    END LOOP;
END
$analyze$;
