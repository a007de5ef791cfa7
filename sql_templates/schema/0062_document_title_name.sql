-- A page's name: its title without a parenthesised qualifier. Wikipedia-style corpora tell pages
-- apart by a qualifier ("Brother (Pearl Jam song)", "Brother (film)") that neither questions nor
-- other pages repeat: a question asks about "the performers of Brother", a page names "Hank Snow".
-- The sources lane's title ranking matches questions against the name as well as the full title,
-- and the title links (`title_links`) find names in chunk text. Stored by PostgreSQL, so no writer
-- changes; the lower-case copy is a plain column for the same reason as 0044's: `=` on text is
-- leakproof, so a confined caller's lookup can use the index.
CREATE OR REPLACE FUNCTION lanegraph_title_name(title text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN regexp_replace(title, '\s*\([^()]*\)\s*$', '');

ALTER TABLE document ADD COLUMN IF NOT EXISTS title_name text
    GENERATED ALWAYS AS (lanegraph_title_name(title)) STORED;
ALTER TABLE document ADD COLUMN IF NOT EXISTS title_name_lower text
    GENERATED ALWAYS AS (lower(lanegraph_title_name(title))) STORED;
CREATE INDEX IF NOT EXISTS document_title_name_lower_idx ON document (title_name_lower);

-- A one-word name that is a stopword ("In", "It", "Because") names nothing: every question and
-- text holds it. SciFact ships an abstract titled "in", which took the title bonus in half of its
-- claims. Longer names of stopwords ("All by Myself", "She's All That") are still names. The
-- stopwords are BM25's (`english`).
ALTER TABLE document ADD COLUMN IF NOT EXISTS title_name_is_distinctive boolean
    GENERATED ALWAYS AS (
        to_tsvector('english'::regconfig, lanegraph_title_name(title)) <> ''::tsvector
        OR lanegraph_title_name(title) ~ '\S\s+\S'
    ) STORED;
