-- The write half of the entities_and_facts merge (lanegraph_write_merged_documents, 0111), cheaper
-- per batch; it writes the graph 0111 writes: the same rows, counts and order.
--   * The segments' ends are found once per call, not once per segment, from the unwritten
--     documents' own believed facts. Finding each end had read the facts of every key again, and a
--     key of a common place holds thousands of other documents' facts.
--   * Mentions are replaced for every unwritten document at once, not a segment at a time:
--     nothing the segments do reads them.

-- Write every resolved document not yet written, in order: mentions first, then the facts
-- set-based up to the first document whose supersession a later one could change, its
-- supersession (and the others' before it, one document at a time), then the next segment.
CREATE OR REPLACE FUNCTION lanegraph_write_merged_documents() RETURNS void
LANGUAGE plpgsql AS $write$
#variable_conflict use_column
DECLARE
    segment_end integer;
    segment_ends integer[];
    first_unwritten integer;
    last_unwritten integer;
    pending record;
    superseded_ids text[];
    superseded_ends timestamptz[];
BEGIN
    -- One fact per key of the unique index (which ignores object_value, so of two values one
    -- sentence gives the same subject and predicate the first is kept); a sentence repeated by
    -- overlapping chunks counts once, from the first chunk that holds it. The id is derived from
    -- the claim (the store's fact_base_id, computed here).
    INSERT INTO pg_temp.lanegraph_stated_fact
    SELECT DISTINCT ON (f.document_id, f.statement_key, s.entity_id, f.predicate, coalesce(o.entity_id, ''))
           f.document_id,
           'f-' || left(encode(sha256(convert_to(concat_ws(chr(31), f.statement_key, s.entity_id, f.predicate,
               coalesce(o.entity_id, ''), coalesce(f.object_value, ''), f.chunk_id), 'UTF8')), 'hex'), 20),
           s.entity_id, f.predicate, o.entity_id, f.object_value, f.statement, f.chunk_id, f.valid_from,
           f.valid_to, f.functional_side
    FROM pg_temp.lanegraph_merged_document d
    JOIN pg_temp.lanegraph_staged_fact f ON f.document_id = d.document_id
    JOIN pg_temp.lanegraph_resolved_name s ON s.document_id = f.document_id AND s.name = f.subject_name
    LEFT JOIN pg_temp.lanegraph_resolved_name o ON o.document_id = f.document_id AND o.name = f.object_name
    WHERE NOT d.written AND s.entity_id IS DISTINCT FROM o.entity_id
    ORDER BY f.document_id, f.statement_key, s.entity_id, f.predicate, coalesce(o.entity_id, ''), f.ordinal;
    UPDATE pg_temp.lanegraph_merged_document d
    SET mention_count = coalesce((SELECT sum(m.mentions) FROM pg_temp.lanegraph_staged_mention m
                                  WHERE m.document_id = d.document_id), 0),
        stated = (SELECT count(*) FROM pg_temp.lanegraph_stated_fact s WHERE s.document_id = d.document_id)
    WHERE NOT d.written AND NOT d.retracted;

    -- A document's mentions are its own rows and nothing below reads them, so every unwritten
    -- document's are replaced at once rather than a segment at a time.
    DELETE FROM entity_mention m USING pg_temp.lanegraph_merged_document d
    WHERE m.document_id = d.document_id AND NOT d.written;
    INSERT INTO entity_mention (entity_id, chunk_id, document_id, name, kind, mentions, scopes)
    SELECT k.entity_id, m.chunk_id, d.document_id, m.spelled, m.kind, sum(m.mentions), d.scopes
    FROM pg_temp.lanegraph_merged_document d
    JOIN pg_temp.lanegraph_staged_mention m ON m.document_id = d.document_id
    JOIN pg_temp.lanegraph_resolved_name k ON k.document_id = m.document_id AND k.name = m.name
    WHERE NOT d.written
    GROUP BY d.document_id, d.scopes, k.entity_id, m.chunk_id, m.spelled, m.kind;

    -- A document's supersession reads every believed fact of its keys (a subject and a
    -- single-valued predicate), so it must run before any later document writes or closes a fact
    -- of those keys: a segment ends at each document some later one would disturb. Whether a later
    -- document would cannot change while the segments before are written (they write and close
    -- only their own documents' facts, and a supersession keeps a closed fact's document believing
    -- its copy), so these ends are found once for the whole call.
    WITH unwritten AS (
        SELECT d.ordinal, d.document_id FROM pg_temp.lanegraph_merged_document d WHERE NOT d.written
    ), grp AS (
        SELECT DISTINCT p.ordinal, s.functional_side AS side,
               CASE s.functional_side WHEN 'subject' THEN s.subject_id ELSE s.object_id END AS key_id,
               s.predicate
        FROM unwritten p JOIN pg_temp.lanegraph_stated_fact s ON s.document_id = p.document_id
        WHERE s.functional_side = 'subject' OR (s.functional_side = 'object' AND s.object_id IS NOT NULL)
    ), held AS MATERIALIZED (
        -- The keys of the believed facts the unwritten documents hold, read from their own facts
        -- (a key of a common place holds thousands of other documents' facts).
        SELECT later.ordinal, 'subject' AS side, f.subject_id AS key_id, f.predicate
        FROM unwritten later JOIN fact f ON f.document_id = later.document_id
        WHERE f.recorded_to IS NULL
        UNION ALL
        SELECT later.ordinal, 'object', f.object_id, f.predicate
        FROM unwritten later JOIN fact f ON f.document_id = later.document_id
        WHERE f.recorded_to IS NULL AND f.object_id IS NOT NULL
    )
    SELECT coalesce(array_agg(DISTINCT g.ordinal), '{}') INTO segment_ends
    FROM grp g
    WHERE EXISTS (
            SELECT 1 FROM grp later
            WHERE later.ordinal > g.ordinal AND later.side = g.side AND later.key_id = g.key_id
              AND later.predicate = g.predicate
        )
       OR EXISTS (
            SELECT 1 FROM held later
            WHERE later.ordinal > g.ordinal AND later.side = g.side AND later.key_id = g.key_id
              AND later.predicate = g.predicate
        );

    LOOP
        SELECT min(d.ordinal), max(d.ordinal) INTO first_unwritten, last_unwritten
        FROM pg_temp.lanegraph_merged_document d WHERE NOT d.written;
        segment_end := coalesce((SELECT min(e) FROM unnest(segment_ends) e WHERE e >= first_unwritten), last_unwritten);
        EXIT WHEN segment_end IS NULL;

        -- A believed fact of the document that the new extraction no longer states stops being
        -- believed; a retracted document states nothing, so all of its facts close.
        WITH closed_fact AS (
            UPDATE fact f SET recorded_to = d.stamped
            FROM pg_temp.lanegraph_merged_document d
            WHERE NOT d.written AND d.ordinal <= segment_end
              AND f.document_id = d.document_id AND f.recorded_to IS NULL
              AND NOT EXISTS (
                SELECT 1 FROM pg_temp.lanegraph_stated_fact s
                WHERE s.document_id = d.document_id AND f.perspective = '' AND lower(f.statement) = lower(s.statement)
                  AND f.subject_id = s.subject_id AND f.predicate = s.predicate
                  AND coalesce(f.object_id, '') = coalesce(s.object_id, '')
                  AND coalesce(f.source_chunk_id, '') = s.source_chunk_id
              )
            RETURNING f.document_id
        )
        UPDATE pg_temp.lanegraph_merged_document d SET closed = n.closed
        FROM (SELECT c.document_id, count(*) AS closed FROM closed_fact c GROUP BY c.document_id) n
        WHERE d.document_id = n.document_id;

        -- An identical believed statement is already there: the unique index turns the insert into a no-op.
        WITH inserted_fact AS (
            INSERT INTO fact (id, subject_id, predicate, object_id, object_value, statement, source_chunk_id,
                              document_id, valid_from, valid_to, scopes, recorded_from)
            SELECT lanegraph_next_fact_id(s.id), s.subject_id, s.predicate, s.object_id, s.object_value,
                   s.statement, s.source_chunk_id, d.document_id, s.valid_from, s.valid_to, d.scopes, d.stamped
            FROM pg_temp.lanegraph_merged_document d
            JOIN pg_temp.lanegraph_stated_fact s ON s.document_id = d.document_id
            WHERE NOT d.written AND d.ordinal <= segment_end
            ON CONFLICT (perspective, lower(statement), subject_id, predicate, coalesce(object_id, ''), coalesce(source_chunk_id, ''))
                WHERE recorded_to IS NULL
            DO NOTHING
            RETURNING document_id
        )
        UPDATE pg_temp.lanegraph_merged_document d SET inserted = n.inserted
        FROM (SELECT i.document_id, count(*) AS inserted FROM inserted_fact i GROUP BY i.document_id) n
        WHERE d.document_id = n.document_id;

        FOR pending IN
            SELECT d.ordinal, d.document_id, d.stamped FROM pg_temp.lanegraph_merged_document d
            WHERE NOT d.written AND d.ordinal <= segment_end AND EXISTS (
                SELECT 1 FROM pg_temp.lanegraph_stated_fact s
                WHERE s.document_id = d.document_id
                  AND (s.functional_side = 'subject' OR (s.functional_side = 'object' AND s.object_id IS NOT NULL))
            )
            ORDER BY d.ordinal
        LOOP
            -- Single-valued predicates: within one key (the subject for `status`, the project for
            -- `lead`) a dated claim is superseded by the next later-dated claim with a different value.
            -- The superseded row stops being believed and is recorded again with its validity ending
            -- where the new one starts, so history stays queryable.
            WITH grp AS (
                SELECT DISTINCT s.functional_side AS side,
                       CASE s.functional_side WHEN 'subject' THEN s.subject_id ELSE s.object_id END AS key_id,
                       s.predicate
                FROM pg_temp.lanegraph_stated_fact s
                WHERE s.document_id = pending.document_id
                  AND (s.functional_side = 'subject' OR (s.functional_side = 'object' AND s.object_id IS NOT NULL))
            ), member AS (
                SELECT f.id, f.valid_from, f.valid_to, g.side, g.key_id, g.predicate,
                       coalesce(f.object_id, 'value:' || lower(f.object_value)) AS value_key
                FROM grp g JOIN fact f ON g.side = 'subject' AND f.subject_id = g.key_id AND f.predicate = g.predicate
                WHERE f.recorded_to IS NULL
                UNION ALL
                SELECT f.id, f.valid_from, f.valid_to, g.side, g.key_id, g.predicate, f.subject_id
                FROM grp g JOIN fact f ON g.side = 'object' AND f.object_id = g.key_id AND f.predicate = g.predicate
                WHERE f.recorded_to IS NULL
            )
            SELECT array_agg(m.id), array_agg(next.superseded_at) INTO superseded_ids, superseded_ends
            FROM member m
            CROSS JOIN LATERAL (
                SELECT min(o.valid_from) AS superseded_at
                FROM member o
                WHERE o.side = m.side AND o.key_id = m.key_id AND o.predicate = m.predicate
                  AND o.value_key <> m.value_key AND o.valid_from > m.valid_from
            ) next
            WHERE m.valid_from IS NOT NULL AND next.superseded_at IS NOT NULL
              AND (m.valid_to IS NULL OR m.valid_to > next.superseded_at);
            IF superseded_ids IS NOT NULL THEN
                UPDATE fact SET recorded_to = pending.stamped WHERE id = ANY(superseded_ids);
                INSERT INTO fact (id, subject_id, predicate, object_id, object_value, statement, perspective,
                                  embedding, source_chunk_id, document_id, valid_from, valid_to, access_count,
                                  last_accessed, scopes, recorded_from)
                SELECT lanegraph_next_fact_id(split_part(f.id, '.', 1)), f.subject_id, f.predicate, f.object_id,
                       f.object_value, f.statement, f.perspective, f.embedding, f.source_chunk_id, f.document_id,
                       f.valid_from, e.valid_to, f.access_count, f.last_accessed, f.scopes, pending.stamped
                FROM fact f JOIN unnest(superseded_ids, superseded_ends) AS e(id, valid_to) ON e.id = f.id;
                UPDATE pg_temp.lanegraph_merged_document SET superseded = cardinality(superseded_ids)
                WHERE ordinal = pending.ordinal;
            END IF;
        END LOOP;
        UPDATE pg_temp.lanegraph_merged_document SET written = true WHERE NOT written AND ordinal <= segment_end;
    END LOOP;
END
$write$;
