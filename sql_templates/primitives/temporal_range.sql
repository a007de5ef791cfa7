-- temporal_range: entities taking part in believed facts whose validity overlaps the half-open
-- window [:window_start, :window_end), optionally only facts about :topic.
--
-- Believed, not live: a past window asks about facts that have since ended, so validity is checked
-- against the window rather than now; facts the system no longer believes (recorded_to set) never
-- count. A fact with neither valid_from nor valid_to says nothing about any window and is left out.
-- The topic is PostgreSQL full-text search over the statement (English stemming, every word of the
-- topic must occur): facts have no BM25 statistics of their own, and ILIKE would miss inflections.
WITH matching AS (
    SELECT f.id AS fact_id, f.subject_id, f.object_id, f.statement, f.valid_from
    FROM fact AS f
    WHERE f.recorded_to IS NULL
      AND (f.valid_from IS NOT NULL OR f.valid_to IS NOT NULL)
      -- A missing bound is open-ended; written as a range overlap so a GiST index on this
      -- expression can serve it.
      AND tstzrange(f.valid_from, f.valid_to, '[)')
          && tstzrange(CAST(:window_start AS timestamptz), CAST(:window_end AS timestamptz), '[)')
      AND (
          CAST(:topic AS text) = ''
          OR to_tsvector(CAST(:text_search_config AS regconfig), f.statement)
             @@ plainto_tsquery(CAST(:text_search_config AS regconfig), CAST(:topic AS text))
      )
),
involved AS (
    SELECT matching.subject_id AS entity_id, matching.fact_id, matching.statement, matching.valid_from
    FROM matching
    UNION
    SELECT matching.object_id AS entity_id, matching.fact_id, matching.statement, matching.valid_from
    FROM matching
    WHERE matching.object_id IS NOT NULL
)
SELECT
    e.id AS entity_id,
    e.name AS entity_name,
    count(*) AS fact_count,
    string_agg(involved.statement, '; ' ORDER BY involved.valid_from NULLS FIRST, involved.fact_id) AS statements
FROM involved
JOIN entity AS e ON e.id = involved.entity_id
GROUP BY e.id, e.name
ORDER BY count(*) DESC, e.id
LIMIT CAST(:temporal_range_limit AS bigint)
