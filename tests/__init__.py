from pathlib import Path

# The source tree the suite tests: its lanes.yaml, sql_templates/ and demo corpus.
REPOSITORY = Path(__file__).resolve().parents[1]

# ANALYZE of the test's own schema only. Every fixture migrates a schema of its own in one database,
# and a database-wide ANALYZE locks every table of every schema: past a few hundred schemas it ran
# out of lock slots ("out of shared memory") and spent its time on other tests' tables.
ANALYZE_OWN_SCHEMA = """
DO $analyze$
DECLARE
    own record;
BEGIN
    FOR own IN SELECT tablename FROM pg_tables WHERE schemaname = current_schema() LOOP
        EXECUTE 'ANALYZE ' || quote_ident(current_schema()) || '.' || quote_ident(own.tablename);
    END LOOP;
END
$analyze$
"""
