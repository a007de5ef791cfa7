-- entity_mention keeps its document_id (the column a changed or retracted document's mentions are
-- found by, through entity_mention_document_idx) but no longer a foreign key on it. The key to
-- chunk already ties each mention to a live chunk, and a document's chunks cascade away with it,
-- taking their mentions along, so the document key checked nothing the chunk key did not; the one
-- writer of mentions, the extraction merge, takes both ids from the same chunk row. The check cost
-- an index probe and a row lock on the document for every mention written under the graph write
-- lock. The key on kind stays: row security reads the foreign keys of a table through columns other
-- than ids to decide what a confined writer may reference (migration 0090).
ALTER TABLE entity_mention DROP CONSTRAINT IF EXISTS entity_mention_document_id_fkey;
