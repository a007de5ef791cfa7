-- Title links: a chunk that names another document's title points at that document, as a hyperlink
-- would. A page's title is its main entity, and the small extraction model misses many titles
-- (songs, albums, lower-cased or unusual names), so the write side finds them by the titles
-- themselves (the `title_links` asset). The sources lane's bridge hop follows these links from its
-- seeds to the pages they name, and on to the other chunks naming the same title.
CREATE TABLE IF NOT EXISTS title_link (
    chunk_id            text NOT NULL REFERENCES chunk (id) ON DELETE CASCADE,
    -- The chunk's own document, so a changed or retracted document takes its links with it.
    document_id         text NOT NULL REFERENCES document (id) ON DELETE CASCADE,
    linked_document_id  text NOT NULL REFERENCES document (id) ON DELETE CASCADE,
    -- The title as the text names it, in lower case (without a parenthesised qualifier), which is
    -- how the bridge tells a link the question already names from a new one.
    name                text NOT NULL,
    -- Both ends' scopes: a caller follows a link only when it may read the chunk and the page.
    scopes              text[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (document_id, chunk_id, linked_document_id),
    CHECK (linked_document_id <> document_id)
);
CREATE INDEX IF NOT EXISTS title_link_name_idx ON title_link (name, chunk_id);
CREATE INDEX IF NOT EXISTS title_link_linked_document_idx ON title_link (linked_document_id);

SELECT lanegraph_apply_row_security();
