-- The merge of the entities_and_facts step, set-based where the order of documents cannot show
-- (0110 merged every statement one document after another). Resolution still runs one document at
-- a time, in staged order: a document resolves against the entities the documents before it
-- created, aliased and merged. What a document writes from its resolved names (its mentions, the
-- facts it states, the facts it no longer states closed, the new ones inserted) touches only that
-- document's own rows (a source chunk belongs to one document, and a fact's id derives from its
-- chunk), so these are written for many documents at once, each still stamped with the clock at
-- its own turn: what was created or believed first still orders first. The graph is the one 0110
-- writes: the same entities, aliases, facts, mentions and counts. Two things do depend on order,
-- and there the documents before are written first: a project short-name merge moves the rows of
-- the loser (written documents only), and a single-valued predicate's supersession reads every
-- believed fact of its key (so the documents are written up to the first whose keys a later
-- document of the batch also states or holds facts of).
--
-- The staged and working tables are as in 0110, plus lanegraph_merged_document (ordinal,
-- document_id, scopes, retracted, stamped, the counts, written): each resolved document, its clock
-- stamp, and whether its rows are written yet.

-- Write every resolved document not yet written, in order: set-based up to the first document
-- whose supersession a later one could change, its supersession (and the others' before it, one
-- document at a time), then the next segment.
CREATE OR REPLACE FUNCTION lanegraph_write_merged_documents() RETURNS void
LANGUAGE plpgsql AS $write$
#variable_conflict use_column
DECLARE
    segment_end integer;
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

    LOOP
        -- A document's supersession reads every believed fact of its keys (a subject and a
        -- single-valued predicate), so it must run before any later document writes or closes a
        -- fact of those keys: the segment ends at the first document some later one would disturb.
        WITH unwritten AS (
            SELECT d.ordinal, d.document_id FROM pg_temp.lanegraph_merged_document d WHERE NOT d.written
        ), grp AS (
            SELECT DISTINCT p.ordinal, s.functional_side AS side,
                   CASE s.functional_side WHEN 'subject' THEN s.subject_id ELSE s.object_id END AS key_id,
                   s.predicate
            FROM unwritten p JOIN pg_temp.lanegraph_stated_fact s ON s.document_id = p.document_id
            WHERE s.functional_side = 'subject' OR (s.functional_side = 'object' AND s.object_id IS NOT NULL)
        )
        SELECT coalesce(min(g.ordinal), (SELECT max(p.ordinal) FROM unwritten p)) INTO segment_end
        FROM grp g
        WHERE EXISTS (
                SELECT 1 FROM grp later
                WHERE later.ordinal > g.ordinal AND later.side = g.side AND later.key_id = g.key_id
                  AND later.predicate = g.predicate
            )
           OR EXISTS (
                SELECT 1 FROM fact f JOIN unwritten later ON later.document_id = f.document_id
                WHERE g.side = 'subject' AND f.subject_id = g.key_id AND f.predicate = g.predicate
                  AND f.recorded_to IS NULL AND later.ordinal > g.ordinal
            )
           OR EXISTS (
                SELECT 1 FROM fact f JOIN unwritten later ON later.document_id = f.document_id
                WHERE g.side = 'object' AND f.object_id = g.key_id AND f.predicate = g.predicate
                  AND f.recorded_to IS NULL AND later.ordinal > g.ordinal
            );
        EXIT WHEN segment_end IS NULL;

        DELETE FROM entity_mention m USING pg_temp.lanegraph_merged_document d
        WHERE m.document_id = d.document_id AND NOT d.written AND d.ordinal <= segment_end;
        INSERT INTO entity_mention (entity_id, chunk_id, document_id, name, kind, mentions, scopes)
        SELECT k.entity_id, m.chunk_id, d.document_id, m.spelled, m.kind, sum(m.mentions), d.scopes
        FROM pg_temp.lanegraph_merged_document d
        JOIN pg_temp.lanegraph_staged_mention m ON m.document_id = d.document_id
        JOIN pg_temp.lanegraph_resolved_name k ON k.document_id = m.document_id AND k.name = m.name
        WHERE NOT d.written AND d.ordinal <= segment_end
        GROUP BY d.document_id, d.scopes, k.entity_id, m.chunk_id, m.spelled, m.kind;

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

-- Every staged document of the batch, in order; one row of counts per document (see 0110 for the
-- staged tables).
CREATE OR REPLACE FUNCTION lanegraph_merge_staged_extractions(similarity_threshold text)
RETURNS TABLE (
    merged_document text, mention_count bigint, created integer, merged integer, stated integer,
    inserted integer, closed integer, superseded integer, was_retracted boolean
)
LANGUAGE plpgsql AS $merge$
#variable_conflict use_column
DECLARE
    staged record;
    pair record;
    stamped timestamptz;
    sequential_scans text;
BEGIN
    PERFORM set_config('pg_trgm.similarity_threshold', similarity_threshold, true);
    FOR staged IN SELECT * FROM pg_temp.lanegraph_staged_document ORDER BY ordinal LOOP
        stamped := clock_timestamp();
        created := 0; merged := 0;
        -- A retracted document resolves nothing: the write closes its facts and drops its mentions.
        IF NOT staged.retracted THEN
            -- First match wins: the same name and kind; the same name under another kind (the small
            -- tagger often disagrees with itself); a recorded alias; the short name of a project
            -- ("Heron" for "Project Heron"); a near-identical name of the same kind (trigram
            -- similarity, codes excluded because HX-4417 and HX-4418 are different faults). Only
            -- entities of the document's own scope set are candidates: an entity is readable exactly
            -- by those who may read every document naming it. The near-name probe runs only for a
            -- name no earlier match found. It must read the trigram index (entity_name_trgm_idx,
            -- without a pending list since migration 0070), then keep the kind and scope set: pg_trgm
            -- prices a similarity like an equality, so the planner would rather compute it for every
            -- entity of the kind or of the table, and a build's resolution would grow with the square
            -- of its graph. The OFFSET 0 fence keeps the index the probe's only way in, and sequential
            -- scans are off around this one statement (the caller's own setting put back after it).
            -- Every probe runs only where the ones before it found nothing: the name under any kind
            -- is looked up first, as without it the same name and kind cannot exist either.
            sequential_scans := current_setting('enable_seqscan');
            PERFORM set_config('enable_seqscan', 'off', true);
            INSERT INTO pg_temp.lanegraph_resolved_entity (document_id, normalized, kind, spelled, new_id, entity_id, via_alias)
            SELECT s.document_id, s.normalized, s.kind, s.spelled, s.new_id,
                   coalesce(same.id, renamed.id, aliased.id, project.id, fuzzy.id),
                   coalesce(same.id, renamed.id) IS NULL AND coalesce(aliased.id, project.id, fuzzy.id) IS NOT NULL
            FROM pg_temp.lanegraph_staged_entity s
            LEFT JOIN LATERAL (
                SELECT e.id FROM entity e WHERE e.normalized_name = s.normalized AND e.scopes = staged.scopes
                ORDER BY e.degree DESC, e.created_at, e.id LIMIT 1
            ) renamed ON true
            LEFT JOIN LATERAL (
                SELECT e.id FROM entity e
                WHERE renamed.id IS NOT NULL
                  AND e.kind = s.kind AND e.normalized_name = s.normalized AND e.scopes = staged.scopes
            ) same ON true
            LEFT JOIN LATERAL (
                SELECT e.id FROM entity e
                WHERE renamed.id IS NULL AND e.aliases @> ARRAY[s.normalized] AND e.scopes = staged.scopes
                ORDER BY e.degree DESC, e.id LIMIT 1
            ) aliased ON true
            LEFT JOIN LATERAL (
                SELECT e.id FROM entity e
                WHERE renamed.id IS NULL AND aliased.id IS NULL
                  AND s.kind <> 'project' AND e.kind = 'project' AND e.normalized_name = 'project ' || s.normalized
                  AND e.scopes = staged.scopes
            ) project ON true
            LEFT JOIN LATERAL (
                SELECT near.id FROM (
                    SELECT e.id, e.name, e.kind, e.scopes FROM entity e
                    WHERE coalesce(same.id, renamed.id, aliased.id, project.id) IS NULL AND s.kind <> 'code'
                      AND lower(e.name) % s.normalized
                    OFFSET 0
                ) near
                WHERE near.kind = s.kind AND near.scopes = staged.scopes
                ORDER BY similarity(lower(near.name), s.normalized) DESC, near.id LIMIT 1
            ) fuzzy ON true
            WHERE s.document_id = staged.document_id;
            PERFORM set_config('enable_seqscan', sequential_scans, true);

            -- The names no entity answered to, created; RETURNING names each row.
            WITH made AS (
                INSERT INTO entity (id, name, kind, normalized_name, scopes, created_at)
                SELECT r.new_id, r.spelled, r.kind, r.normalized, staged.scopes, stamped
                FROM pg_temp.lanegraph_resolved_entity r
                WHERE r.document_id = staged.document_id AND r.entity_id IS NULL
                ON CONFLICT (kind, normalized_name, scopes) DO UPDATE SET name = entity.name
                RETURNING normalized_name, id
            )
            UPDATE pg_temp.lanegraph_resolved_entity r SET entity_id = made.id
            FROM made
            WHERE r.document_id = staged.document_id AND r.entity_id IS NULL AND r.normalized = made.normalized_name;
            GET DIAGNOSTICS created = ROW_COUNT;

            INSERT INTO pg_temp.lanegraph_resolved_name (document_id, name, entity_id)
            SELECT n.document_id, n.name, r.entity_id
            FROM pg_temp.lanegraph_staged_name n
            JOIN pg_temp.lanegraph_resolved_entity r ON r.document_id = n.document_id AND r.normalized = n.normalized
            WHERE n.document_id = staged.document_id;

            -- The names found through an alias or a near spelling, and the document's other names of
            -- an entity, become its aliases: sorted and distinct, and never the entity's own name.
            UPDATE entity e
            SET aliases = ARRAY(SELECT DISTINCT a FROM unnest(e.aliases || added.aliases) a ORDER BY a)
            FROM (
                SELECT a.id, array_agg(a.alias) AS aliases
                FROM (
                    SELECT r.entity_id AS id, r.normalized AS alias FROM pg_temp.lanegraph_resolved_entity r
                    WHERE r.document_id = staged.document_id AND r.via_alias
                    UNION
                    SELECT k.entity_id, k.name
                    FROM pg_temp.lanegraph_resolved_name k
                    JOIN pg_temp.lanegraph_staged_name n ON n.document_id = k.document_id AND n.name = k.name
                    WHERE k.document_id = staged.document_id AND n.name <> n.normalized
                ) a
                JOIN entity x ON x.id = a.id
                WHERE x.normalized_name <> a.alias AND NOT x.aliases @> ARRAY[a.alias]
                GROUP BY a.id
            ) added
            WHERE e.id = added.id;

            -- Entities that are a project's short name but were created before the project was seen.
            FOR pair IN
                SELECT short.id AS loser, project.id AS winner
                FROM entity project
                JOIN entity short ON short.normalized_name = substr(project.normalized_name, 9) AND short.kind <> 'project'
                    AND short.scopes = project.scopes
                WHERE project.id IN (
                    SELECT k.entity_id FROM pg_temp.lanegraph_resolved_name k WHERE k.document_id = staged.document_id
                ) AND project.kind = 'project' AND project.normalized_name LIKE 'project %'
            LOOP
                -- The merge moves the loser's facts and mentions, so the documents before this one
                -- must have written theirs (as they had in 0110 by this document's turn).
                IF merged = 0 THEN
                    PERFORM lanegraph_write_merged_documents();
                END IF;
                PERFORM lanegraph_merge_entity(pair.loser, pair.winner, stamped);
                merged := merged + 1;
                UPDATE pg_temp.lanegraph_resolved_name SET entity_id = pair.winner
                WHERE document_id = staged.document_id AND entity_id = pair.loser;
            END LOOP;
        END IF;
        INSERT INTO pg_temp.lanegraph_merged_document (ordinal, document_id, scopes, retracted, stamped, created, merged)
        VALUES (staged.ordinal, staged.document_id, staged.scopes, staged.retracted, stamped, created, merged);
    END LOOP;
    PERFORM lanegraph_write_merged_documents();
    RETURN QUERY
    SELECT d.document_id, d.mention_count, d.created, d.merged, d.stated, d.inserted, d.closed, d.superseded, d.retracted
    FROM pg_temp.lanegraph_merged_document d ORDER BY d.ordinal;
END
$merge$;
