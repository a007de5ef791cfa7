-- Names are matched with their accents folded: a question or a page that writes "Aschenbrodel" or
-- "Tekeze River" names the pages "Aschenbrödel" and "Tekezé River". The title lookup keys (0044,
-- 0062) become lower case and folded; the question's terms carry both spellings (pipelines/accents.py
-- folds exactly as this function does), so an accented question still finds what it found before.
-- normalize() needs a UTF8 database, which every supported setup has.
CREATE OR REPLACE FUNCTION lanegraph_fold_accents(value text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN normalize(regexp_replace(normalize(value, NFKD), '[\u0300-\u036f]', '', 'g'), NFC);

-- A generated column's expression cannot change in place before PostgreSQL 17: drop and add again.
ALTER TABLE document DROP COLUMN IF EXISTS title_lower;
ALTER TABLE document ADD COLUMN title_lower text
    GENERATED ALWAYS AS (lanegraph_fold_accents(lower(title))) STORED;
CREATE INDEX IF NOT EXISTS document_title_lower_column_idx ON document (title_lower);

ALTER TABLE document DROP COLUMN IF EXISTS title_name_lower;
ALTER TABLE document ADD COLUMN title_name_lower text
    GENERATED ALWAYS AS (lanegraph_fold_accents(lower(lanegraph_title_name(title)))) STORED;
CREATE INDEX IF NOT EXISTS document_title_name_lower_idx ON document (title_name_lower);

-- The links' names are the same keys (title_links writes them folded from now on).
UPDATE title_link SET name = lanegraph_fold_accents(name) WHERE name <> lanegraph_fold_accents(name);
