-- temporal_range asks which believed facts' validity overlaps a window. A GiST index over the very
-- expression it compares (`tstzrange(valid_from, valid_to, '[)') && window`) serves that overlap,
-- partial on what the primitive reads: believed facts that carry at least one bound.
CREATE INDEX IF NOT EXISTS fact_validity_idx ON fact USING gist (tstzrange(valid_from, valid_to, '[)'))
    WHERE recorded_to IS NULL AND (valid_from IS NOT NULL OR valid_to IS NOT NULL);
