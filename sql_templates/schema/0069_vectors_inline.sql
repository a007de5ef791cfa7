-- Every embedding stays in its row. pgvector's type defaults to EXTERNAL storage, so a row over
-- TOAST's ~2 kB threshold moves its vector out of line: a chunk (its text and 384 floats, 1.5 kB)
-- always did, and each distance a lane computes on a heap row (the HNSW candidates, the bridge's
-- linked chunks) fetched the vector through the TOAST table's index first. With MAIN the toaster
-- compresses or moves the text instead and keeps the vector in the row (measured at 100k chunks:
-- the dense chunk window 1.9 -> 1.35 ms, distances of 200 chunks by id 2.2 -> 1.5 ms).
--
-- The storage applies to rows written from now on: rewriting every row here would also insert
-- each into every HNSW index again. Re-embedding rewrites them, and so does `VACUUM FULL <table>`.
-- Changing the vector width retypes the columns, which resets their storage, so it calls this
-- function again (pipelines/resources/migrations.py), as does any later migration adding a vector.

CREATE OR REPLACE FUNCTION lanegraph_keep_vectors_inline() RETURNS void
    LANGUAGE plpgsql
AS $inline$
DECLARE
    target record;
BEGIN
    FOR target IN
        SELECT c.oid::regclass AS relation, a.attname AS column_name
        FROM pg_attribute a
        JOIN pg_class c ON c.oid = a.attrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = current_schema() AND c.relkind = 'r'
          AND a.atttypid = 'vector'::regtype AND a.attnum > 0 AND NOT a.attisdropped
          AND a.attstorage <> 'm'
    LOOP
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET STORAGE MAIN', target.relation, target.column_name);
    END LOOP;
END
$inline$;

SELECT lanegraph_keep_vectors_inline();
