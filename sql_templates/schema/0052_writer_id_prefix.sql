-- A writer cannot learn that another tenant's id exists.
--
-- Ids are global (a document's id is derived from its source, the same in every database), so when a
-- writer inserted a row whose id another tenant already used, the unique index answered "duplicate
-- key" where it should have refused, and a foreign key (a chunk naming another tenant's document)
-- answered by succeeding: either way the writer learnt the other tenant's id. Now every id a writer
-- writes, the row's own and every reference (text columns named `id` or `..._id`), must start with
-- its id prefix, lanegraph_caller_id_prefix(): a hash of its scope set, fixed by the signed scopes
-- (0051). Row security checks a new row before the unique index and the foreign keys look at it, so
-- an id outside the prefix is refused the same way whether or not some other row carries it, and
-- inside the prefix only writers of the same scope set write (their rows are all visible to each
-- other). A writer so inserts and updates only rows under its prefix; it may still delete any
-- non-public row within its scopes.
--
-- This replaces 0042's lanegraph_apply_row_security(); the read policies are unchanged.

-- Scopes cannot hold control characters (pipelines/resources/scopes.py), so the unit separator
-- joins them unambiguously. NULL (no signed scopes) gives no prefix, and no row passes.
CREATE OR REPLACE FUNCTION lanegraph_caller_id_prefix() RETURNS text
    LANGUAGE sql STABLE PARALLEL RESTRICTED
RETURN 'w' || left(encode(sha256(convert_to(array_to_string(lanegraph_caller_scopes(), E'\x1f'), 'UTF8')), 'hex'), 16) || ':';

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
    ids_under_caller_prefix text;
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
        SELECT coalesce(string_agg(
                   format('coalesce(starts_with(%1$I, (SELECT lanegraph_caller_id_prefix())), %1$I IS NULL)', a.attname),
                   ' AND '), 'true')
        INTO ids_under_caller_prefix
        FROM pg_attribute a
        WHERE a.attrelid = target.relation AND a.attnum > 0 AND NOT a.attisdropped
          AND a.atttypid = 'text'::regtype AND (a.attname = 'id' OR a.attname LIKE '%\_id');
        EXECUTE format('DROP POLICY IF EXISTS lanegraph_writer_insert ON %s', target.relation);
        EXECUTE format('CREATE POLICY lanegraph_writer_insert ON %s FOR INSERT TO lanegraph_writer WITH CHECK (%s AND %s)',
                       target.relation, caller_may_change_row, ids_under_caller_prefix);
        EXECUTE format('DROP POLICY IF EXISTS lanegraph_writer_update ON %s', target.relation);
        EXECUTE format('CREATE POLICY lanegraph_writer_update ON %s FOR UPDATE TO lanegraph_writer USING (%s AND %s) WITH CHECK (%s AND %s)',
                       target.relation, caller_may_change_row, ids_under_caller_prefix,
                       caller_may_change_row, ids_under_caller_prefix);
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
