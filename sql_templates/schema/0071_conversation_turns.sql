-- A memory of conversations: each turn is a document of its own (a passage to find, with its own
-- time), and keeps who said it, in which conversation and session, and where it stands in that
-- session. The sources lane reads `speaker` to treat a turn as a page of its own (the turns of one
-- session share a title), and (conversation, session, turn) to reach the turns around a hit: a
-- reply answers the turn before it. Documents that are not turns leave all four NULL.
ALTER TABLE document ADD COLUMN IF NOT EXISTS conversation text;
ALTER TABLE document ADD COLUMN IF NOT EXISTS session text;
ALTER TABLE document ADD COLUMN IF NOT EXISTS speaker text;
ALTER TABLE document ADD COLUMN IF NOT EXISTS turn integer;

DO $turns$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'document_turn_complete') THEN
        ALTER TABLE document ADD CONSTRAINT document_turn_complete CHECK (
            (conversation IS NULL AND session IS NULL AND speaker IS NULL AND turn IS NULL)
            OR (conversation IS NOT NULL AND session IS NOT NULL AND speaker IS NOT NULL AND turn IS NOT NULL)
        );
    END IF;
END
$turns$;

CREATE INDEX IF NOT EXISTS document_turn_idx ON document (conversation, session, turn)
    WHERE conversation IS NOT NULL;
