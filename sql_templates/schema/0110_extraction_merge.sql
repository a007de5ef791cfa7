-- The merge of the entities_and_facts step. Extraction (the parse, the CPU-heavy part) holds no lock;
-- it stages each document's names, mentions and facts in temporary tables of the run's own session
-- (pg_temp.lanegraph_staged_*, made by extraction_store for one batch and dropped at its commit),
-- then one call of lanegraph_merge_staged_extractions, under the graph write lock, writes the whole
-- batch into the graph in one round trip. Documents are merged one after another in their staged
-- order, each with the statements the per-document writer ran from the client, so every document
-- resolves against the entities the documents before it created, exactly as before: the same
-- entities, aliases, facts and mentions. Each document's rows are stamped with the clock at its
-- turn (clock_timestamp), not the batch's transaction start, so what was created or believed first
-- still orders first.

-- Fold `loser` into `winner`: its facts, mentions, name (as an alias) and scopes move over. A
-- believed fact of the loser that would duplicate one of the winner's is closed first, or the
-- unique index would refuse it.
CREATE OR REPLACE FUNCTION lanegraph_merge_entity(loser text, winner text, stamped timestamptz) RETURNS void
LANGUAGE sql AS $$
    UPDATE fact f SET recorded_to = stamped
    WHERE f.recorded_to IS NULL AND (f.subject_id = loser OR f.object_id = loser)
      AND EXISTS (
        SELECT 1 FROM fact w
        WHERE w.recorded_to IS NULL AND w.id <> f.id
          AND w.perspective = f.perspective AND lower(w.statement) = lower(f.statement)
          AND w.predicate = f.predicate
          AND coalesce(w.source_chunk_id, '') = coalesce(f.source_chunk_id, '')
          AND w.subject_id = CASE WHEN f.subject_id = loser THEN winner ELSE f.subject_id END
          AND coalesce(w.object_id, '') = coalesce(CASE WHEN f.object_id = loser THEN winner ELSE f.object_id END, '')
      );
    UPDATE fact SET subject_id = winner WHERE subject_id = loser;
    UPDATE fact SET object_id = winner WHERE object_id = loser;
    INSERT INTO entity_mention (entity_id, chunk_id, document_id, name, kind, mentions, scopes)
    SELECT winner, chunk_id, document_id, name, kind, mentions, scopes
    FROM entity_mention WHERE entity_id = loser
    ON CONFLICT (entity_id, chunk_id, name, kind) DO UPDATE
    SET mentions = entity_mention.mentions + excluded.mentions;
    UPDATE entity w
    SET aliases = ARRAY(
            SELECT DISTINCT a FROM unnest(w.aliases || l.aliases || l.normalized_name) a
            WHERE a <> w.normalized_name ORDER BY a
        ),
        scopes = ARRAY(SELECT DISTINCT s FROM unnest(w.scopes || l.scopes) s ORDER BY s)
    FROM entity l
    WHERE w.id = winner AND l.id = loser;
    DELETE FROM entity WHERE id = loser;
$$;

-- Every staged document of the batch, in order; one row of counts per document. The staged tables:
--   lanegraph_staged_document (ordinal, document_id, scopes, retracted)
--   lanegraph_staged_name (document_id, name, normalized): each name of the document and the
--       normalised name of the entity it stands for in the document
--   lanegraph_staged_entity (document_id, normalized, kind, spelled, new_id): each distinct entity
--       the document names, and the id it gets if no entity answers to it
--   lanegraph_staged_mention (document_id, name, chunk_id, spelled, kind, mentions)
--   lanegraph_staged_fact (document_id, ordinal, statement, statement_key, subject_name, predicate,
--       object_name, object_value, chunk_id, valid_from, valid_to, functional_side)
-- and the working tables lanegraph_resolved_entity and lanegraph_stated_fact.
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
    superseded_ids text[];
    superseded_ends timestamptz[];
BEGIN
    PERFORM set_config('pg_trgm.similarity_threshold', similarity_threshold, true);
    FOR staged IN SELECT * FROM pg_temp.lanegraph_staged_document ORDER BY ordinal LOOP
        stamped := clock_timestamp();
        merged_document := staged.document_id;
        mention_count := 0; created := 0; merged := 0; stated := 0; inserted := 0; superseded := 0;
        was_retracted := staged.retracted;
        IF staged.retracted THEN
            UPDATE fact SET recorded_to = stamped
            WHERE document_id = staged.document_id AND recorded_to IS NULL;
            GET DIAGNOSTICS closed = ROW_COUNT;
            DELETE FROM entity_mention WHERE document_id = staged.document_id;
            RETURN NEXT;
            CONTINUE;
        END IF;

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
        sequential_scans := current_setting('enable_seqscan');
        PERFORM set_config('enable_seqscan', 'off', true);
        INSERT INTO pg_temp.lanegraph_resolved_entity (document_id, normalized, kind, spelled, new_id, entity_id, via_alias)
        SELECT s.document_id, s.normalized, s.kind, s.spelled, s.new_id,
               coalesce(same.id, renamed.id, aliased.id, project.id, fuzzy.id),
               coalesce(same.id, renamed.id) IS NULL AND coalesce(aliased.id, project.id, fuzzy.id) IS NOT NULL
        FROM pg_temp.lanegraph_staged_entity s
        LEFT JOIN LATERAL (
            SELECT e.id FROM entity e
            WHERE e.kind = s.kind AND e.normalized_name = s.normalized AND e.scopes = staged.scopes
        ) same ON true
        LEFT JOIN LATERAL (
            SELECT e.id FROM entity e WHERE e.normalized_name = s.normalized AND e.scopes = staged.scopes
            ORDER BY e.degree DESC, e.created_at, e.id LIMIT 1
        ) renamed ON true
        LEFT JOIN LATERAL (
            SELECT e.id FROM entity e WHERE e.aliases @> ARRAY[s.normalized] AND e.scopes = staged.scopes
            ORDER BY e.degree DESC, e.id LIMIT 1
        ) aliased ON true
        LEFT JOIN LATERAL (
            SELECT e.id FROM entity e
            WHERE s.kind <> 'project' AND e.kind = 'project' AND e.normalized_name = 'project ' || s.normalized
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
            PERFORM lanegraph_merge_entity(pair.loser, pair.winner, stamped);
            merged := merged + 1;
            UPDATE pg_temp.lanegraph_resolved_name SET entity_id = pair.winner
            WHERE document_id = staged.document_id AND entity_id = pair.loser;
        END LOOP;

        DELETE FROM entity_mention WHERE document_id = staged.document_id;
        INSERT INTO entity_mention (entity_id, chunk_id, document_id, name, kind, mentions, scopes)
        SELECT k.entity_id, m.chunk_id, staged.document_id, m.spelled, m.kind, sum(m.mentions), staged.scopes
        FROM pg_temp.lanegraph_staged_mention m
        JOIN pg_temp.lanegraph_resolved_name k ON k.document_id = m.document_id AND k.name = m.name
        WHERE m.document_id = staged.document_id
        GROUP BY k.entity_id, m.chunk_id, m.spelled, m.kind;
        SELECT coalesce(sum(m.mentions), 0) INTO mention_count
        FROM pg_temp.lanegraph_staged_mention m WHERE m.document_id = staged.document_id;

        -- One fact per key of the unique index (which ignores object_value, so of two values one
        -- sentence gives the same subject and predicate the first is kept); a sentence repeated by
        -- overlapping chunks counts once, from the first chunk that holds it. The id is derived from
        -- the claim (the store's fact_base_id, computed here).
        INSERT INTO pg_temp.lanegraph_stated_fact
        SELECT DISTINCT ON (f.statement_key, s.entity_id, f.predicate, coalesce(o.entity_id, ''))
               f.document_id,
               'f-' || left(encode(sha256(convert_to(concat_ws(chr(31), f.statement_key, s.entity_id, f.predicate,
                   coalesce(o.entity_id, ''), coalesce(f.object_value, ''), f.chunk_id), 'UTF8')), 'hex'), 20),
               s.entity_id, f.predicate, o.entity_id, f.object_value, f.statement, f.chunk_id, f.valid_from,
               f.valid_to, f.functional_side
        FROM pg_temp.lanegraph_staged_fact f
        JOIN pg_temp.lanegraph_resolved_name s ON s.document_id = f.document_id AND s.name = f.subject_name
        LEFT JOIN pg_temp.lanegraph_resolved_name o ON o.document_id = f.document_id AND o.name = f.object_name
        WHERE f.document_id = staged.document_id AND s.entity_id IS DISTINCT FROM o.entity_id
        ORDER BY f.statement_key, s.entity_id, f.predicate, coalesce(o.entity_id, ''), f.ordinal;
        GET DIAGNOSTICS stated = ROW_COUNT;

        -- A believed fact of the document that the new extraction no longer states stops being believed.
        UPDATE fact f SET recorded_to = stamped
        WHERE f.document_id = staged.document_id AND f.recorded_to IS NULL
          AND NOT EXISTS (
            SELECT 1 FROM pg_temp.lanegraph_stated_fact s
            WHERE s.document_id = staged.document_id AND f.perspective = '' AND lower(f.statement) = lower(s.statement)
              AND f.subject_id = s.subject_id AND f.predicate = s.predicate
              AND coalesce(f.object_id, '') = coalesce(s.object_id, '')
              AND coalesce(f.source_chunk_id, '') = s.source_chunk_id
          );
        GET DIAGNOSTICS closed = ROW_COUNT;

        -- An identical believed statement is already there: the unique index turns the insert into a no-op.
        INSERT INTO fact (id, subject_id, predicate, object_id, object_value, statement, source_chunk_id,
                          document_id, valid_from, valid_to, scopes, recorded_from)
        SELECT lanegraph_next_fact_id(s.id), s.subject_id, s.predicate, s.object_id, s.object_value,
               s.statement, s.source_chunk_id, staged.document_id, s.valid_from, s.valid_to, staged.scopes, stamped
        FROM pg_temp.lanegraph_stated_fact s
        WHERE s.document_id = staged.document_id
        ON CONFLICT (perspective, lower(statement), subject_id, predicate, coalesce(object_id, ''), coalesce(source_chunk_id, ''))
            WHERE recorded_to IS NULL
        DO NOTHING;
        GET DIAGNOSTICS inserted = ROW_COUNT;

        -- Single-valued predicates: within one key (the subject for `status`, the project for
        -- `lead`) a dated claim is superseded by the next later-dated claim with a different value.
        -- The superseded row stops being believed and is recorded again with its validity ending
        -- where the new one starts, so history stays queryable.
        WITH grp AS (
            SELECT DISTINCT s.functional_side AS side,
                   CASE s.functional_side WHEN 'subject' THEN s.subject_id ELSE s.object_id END AS key_id,
                   s.predicate
            FROM pg_temp.lanegraph_stated_fact s
            WHERE s.document_id = staged.document_id
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
            UPDATE fact SET recorded_to = stamped WHERE id = ANY(superseded_ids);
            INSERT INTO fact (id, subject_id, predicate, object_id, object_value, statement, perspective,
                              embedding, source_chunk_id, document_id, valid_from, valid_to, access_count,
                              last_accessed, scopes, recorded_from)
            SELECT lanegraph_next_fact_id(split_part(f.id, '.', 1)), f.subject_id, f.predicate, f.object_id,
                   f.object_value, f.statement, f.perspective, f.embedding, f.source_chunk_id, f.document_id,
                   f.valid_from, e.valid_to, f.access_count, f.last_accessed, f.scopes, stamped
            FROM fact f JOIN unnest(superseded_ids, superseded_ends) AS e(id, valid_to) ON e.id = f.id;
            superseded := cardinality(superseded_ids);
        END IF;
        RETURN NEXT;
    END LOOP;
END
$merge$;
