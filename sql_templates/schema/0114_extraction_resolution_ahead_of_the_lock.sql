-- Entity resolution ahead of the graph write lock. Most of a batch's resolution is probing the
-- entity table (the near-name probe through the trigram index above all), and under the lock it
-- was the largest part of the merge, the one serial step of extraction. Now each batch's names are
-- resolved against the graph as committed, before the lock, in one statement; under the lock a name
-- is probed again only where something that changed since could answer it differently:
--   * an entity written since by another run, or by the graph refresh (each such transaction
--     stamps the rows it writes with its epoch, and epochs are taken in commit order), that bears
--     the name, its project key, the name as an alias, or a near spelling of the same kind; or the
--     entity the name resolved to, changed or deleted since;
--   * an earlier document of the same batch that states the name, or a near spelling of the same
--     kind, so that it may create or alias what the name answers to (found before the lock too,
--     from the staged rows alone);
--   * every name after a document of the batch that merged a project's short name into it (rare,
--     and it moves another entity's names and scopes).
-- Every other name's answer is the one the probe would give under the lock: nothing it could read
-- has changed. The graph is the one migration 0111 writes, row for row.

ALTER TABLE entity ADD COLUMN IF NOT EXISTS changed_epoch bigint NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS entity_changed_epoch_idx ON entity (changed_epoch);

-- One row: the epoch of the last transaction that wrote what resolution reads. A writer takes the
-- next one by updating the row, which it then holds until it commits, so epochs follow commits.
-- Bookkeeping of the owner's write side: no scopes, no grant to confined logins.
CREATE TABLE IF NOT EXISTS lanegraph_graph_write_epoch (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    epoch    bigint NOT NULL
);
REVOKE ALL ON lanegraph_graph_write_epoch FROM PUBLIC;
INSERT INTO lanegraph_graph_write_epoch (epoch) VALUES (0) ON CONFLICT DO NOTHING;

-- The transaction's epoch, taken at its first call.
CREATE OR REPLACE FUNCTION lanegraph_graph_write_epoch() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    taken bigint := nullif(current_setting('lanegraph.graph_write_epoch', true), '')::bigint;
BEGIN
    IF taken IS NULL THEN
        UPDATE lanegraph_graph_write_epoch SET epoch = epoch + 1 RETURNING epoch INTO taken;
        PERFORM set_config('lanegraph.graph_write_epoch', taken::text, true);
    END IF;
    RETURN taken;
END
$$;

-- A confined writer (row security's lanegraph_writer) neither takes an epoch, which would let it
-- hold every build's merge up for as long as it keeps a transaction open, nor sets one (its column
-- grants leave changed_epoch out too). Its entity writes never took the graph write lock either,
-- so they stay as unordered against a build's merges as they were.
CREATE OR REPLACE FUNCTION lanegraph_stamp_entity_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF has_table_privilege(format('%I.lanegraph_graph_write_epoch', TG_TABLE_SCHEMA), 'UPDATE') THEN
        NEW.changed_epoch := lanegraph_graph_write_epoch();
    ELSIF TG_OP = 'INSERT' THEN
        NEW.changed_epoch := 0;
    ELSE
        NEW.changed_epoch := OLD.changed_epoch;
    END IF;
    RETURN NEW;
END
$$;
CREATE OR REPLACE TRIGGER entity_change_stamp
    BEFORE INSERT OR UPDATE OF name, kind, normalized_name, aliases, scopes, degree ON entity
    FOR EACH ROW EXECUTE FUNCTION lanegraph_stamp_entity_change();

-- One name's entity, first match wins: the same name and kind; the same name under another kind
-- (the small tagger often disagrees with itself); a recorded alias; the short name of a project
-- ("Heron" for "Project Heron"); a near-identical name of the same kind (trigram similarity, codes
-- excluded because HX-4417 and HX-4418 are different faults). Only entities of the document's own
-- scope set are candidates: an entity is readable exactly by those who may read every document
-- naming it. Every probe runs only where the ones before it found nothing: the name under any kind
-- is looked up first, as without it the same name and kind cannot exist either. The near-name
-- probe must read the trigram index (entity_name_trgm_idx, without a pending list since migration
-- 0070), then keep the kind and scope set: pg_trgm prices a similarity like an equality, so the
-- planner would rather compute it for every entity of the kind or of the table, and a build's
-- resolution would grow with the square of its graph. The OFFSET 0 fence keeps the index the
-- probe's only way in; callers turn sequential scans off around the statement that calls this.
-- No match: entity_id is null.
CREATE OR REPLACE FUNCTION lanegraph_resolve_entity_name(wanted text, wanted_kind text, wanted_scopes text[])
RETURNS TABLE (entity_id text, via_alias boolean)
LANGUAGE sql STABLE AS $$
    SELECT coalesce(same.id, renamed.id, aliased.id, project.id, fuzzy.id),
           coalesce(same.id, renamed.id) IS NULL AND coalesce(aliased.id, project.id, fuzzy.id) IS NOT NULL
    FROM (SELECT wanted AS normalized, wanted_kind AS kind, wanted_scopes AS scopes) s
    LEFT JOIN LATERAL (
        SELECT e.id FROM entity e WHERE e.normalized_name = s.normalized AND e.scopes = s.scopes
        ORDER BY e.degree DESC, e.created_at, e.id LIMIT 1
    ) renamed ON true
    LEFT JOIN LATERAL (
        SELECT e.id FROM entity e
        WHERE renamed.id IS NOT NULL
          AND e.kind = s.kind AND e.normalized_name = s.normalized AND e.scopes = s.scopes
    ) same ON true
    LEFT JOIN LATERAL (
        SELECT e.id FROM entity e
        WHERE renamed.id IS NULL AND e.aliases @> ARRAY[s.normalized] AND e.scopes = s.scopes
        ORDER BY e.degree DESC, e.id LIMIT 1
    ) aliased ON true
    LEFT JOIN LATERAL (
        SELECT e.id FROM entity e
        WHERE renamed.id IS NULL AND aliased.id IS NULL
          AND s.kind <> 'project' AND e.kind = 'project' AND e.normalized_name = 'project ' || s.normalized
          AND e.scopes = s.scopes
    ) project ON true
    LEFT JOIN LATERAL (
        SELECT near.id FROM (
            SELECT e.id, e.name, e.kind, e.scopes FROM entity e
            WHERE coalesce(same.id, renamed.id, aliased.id, project.id) IS NULL AND s.kind <> 'code'
              AND lower(e.name) % s.normalized
            OFFSET 0
        ) near
        WHERE near.kind = s.kind AND near.scopes = s.scopes
        ORDER BY similarity(lower(near.name), s.normalized) DESC, near.id LIMIT 1
    ) fuzzy ON true
$$;

-- Before the lock: every staged name of the batch resolved against the graph as committed, with the
-- epoch that graph had (read in the same statement, so from the same snapshot), and the names an
-- earlier document of the batch may answer differently marked stale.
CREATE OR REPLACE FUNCTION lanegraph_resolve_staged_ahead(similarity_threshold text) RETURNS void
LANGUAGE plpgsql AS $ahead$
#variable_conflict use_column
DECLARE
    sequential_scans text;
BEGIN
    PERFORM set_config('pg_trgm.similarity_threshold', similarity_threshold, true);
    sequential_scans := current_setting('enable_seqscan');
    PERFORM set_config('enable_seqscan', 'off', true);
    INSERT INTO pg_temp.lanegraph_resolved_ahead (document_id, normalized, kind, entity_id, via_alias, seen_epoch)
    SELECT s.document_id, s.normalized, s.kind, r.entity_id, r.via_alias, w.epoch
    FROM pg_temp.lanegraph_staged_entity s
    JOIN pg_temp.lanegraph_staged_document d ON d.document_id = s.document_id AND NOT d.retracted
    CROSS JOIN lanegraph_graph_write_epoch w
    CROSS JOIN LATERAL lanegraph_resolve_entity_name(s.normalized, s.kind, d.scopes) r;
    PERFORM set_config('enable_seqscan', sequential_scans, true);
    -- Without a pending list: marking names stale writes new row versions, and a search reads the
    -- whole pending list.
    CREATE INDEX ON pg_temp.lanegraph_resolved_ahead USING gin (normalized gin_trgm_ops) WITH (fastupdate = off);
    ANALYZE pg_temp.lanegraph_resolved_ahead;

    -- What an earlier document of the batch writes for its names: entities named as it names them,
    -- spelled as it spells them, and its other names (and its names found by alias or near
    -- spelling) as aliases. The name, or its project key, stated before:
    WITH stated AS MATERIALIZED (
        SELECT k.key, min(e.ordinal) AS first_ordinal
        FROM pg_temp.lanegraph_staged_name n
        JOIN pg_temp.lanegraph_staged_document e ON e.document_id = n.document_id AND NOT e.retracted
        CROSS JOIN LATERAL (VALUES (n.normalized), (n.name)) k(key)
        GROUP BY k.key
    ), wanted AS MATERIALIZED (
        SELECT x.document_id, x.normalized, d.ordinal, w.key
        FROM pg_temp.lanegraph_resolved_ahead x
        JOIN pg_temp.lanegraph_staged_document d ON d.document_id = x.document_id
        CROSS JOIN LATERAL (VALUES (x.normalized), ('project ' || x.normalized)) w(key)
    )
    UPDATE pg_temp.lanegraph_resolved_ahead a SET stale = true
    FROM (
        SELECT DISTINCT w.document_id, w.normalized
        FROM wanted w JOIN stated s ON s.key = w.key AND s.first_ordinal < w.ordinal
    ) hit
    WHERE a.document_id = hit.document_id AND a.normalized = hit.normalized;
    -- A near spelling of the same kind stated before:
    UPDATE pg_temp.lanegraph_resolved_ahead a SET stale = true
    FROM (
        SELECT DISTINCT x.document_id, x.normalized
        FROM pg_temp.lanegraph_staged_entity y
        JOIN pg_temp.lanegraph_staged_document e ON e.document_id = y.document_id AND NOT e.retracted
        JOIN pg_temp.lanegraph_resolved_ahead x
            ON x.normalized % lower(y.spelled) AND x.kind = y.kind AND x.kind <> 'code' AND NOT x.stale
        JOIN pg_temp.lanegraph_staged_document d ON d.document_id = x.document_id AND d.ordinal > e.ordinal
    ) hit
    WHERE a.document_id = hit.document_id AND a.normalized = hit.normalized;
END
$ahead$;

-- Under the lock, before the batch writes: the names whose answer the graph's changes since the
-- ahead snapshot may move, marked stale. The batch's own writes are stamped with the epoch taken here.
CREATE OR REPLACE FUNCTION lanegraph_mark_stale_since_ahead() RETURNS void
LANGUAGE plpgsql AS $stale$
#variable_conflict use_column
DECLARE
    seen bigint;
BEGIN
    PERFORM lanegraph_graph_write_epoch();
    SELECT min(a.seen_epoch) INTO seen FROM pg_temp.lanegraph_resolved_ahead a;
    UPDATE pg_temp.lanegraph_resolved_ahead a SET stale = true
    WHERE a.entity_id IS NOT NULL AND NOT a.stale
      AND NOT EXISTS (SELECT 1 FROM entity e WHERE e.id = a.entity_id AND e.changed_epoch <= a.seen_epoch);
    IF EXISTS (SELECT 1 FROM entity e WHERE e.changed_epoch > seen) THEN
        UPDATE pg_temp.lanegraph_resolved_ahead a SET stale = true
        FROM (
            SELECT x.document_id, x.normalized
            FROM entity e
            CROSS JOIN LATERAL (
                SELECT e.normalized_name
                UNION ALL SELECT substr(e.normalized_name, 9) WHERE e.normalized_name LIKE 'project %'
                UNION ALL SELECT unnest(e.aliases)
            ) k(key)
            JOIN pg_temp.lanegraph_resolved_ahead x ON x.normalized = k.key
            WHERE e.changed_epoch > seen
            UNION
            SELECT x.document_id, x.normalized
            FROM entity e
            JOIN pg_temp.lanegraph_resolved_ahead x
                ON x.normalized % lower(e.name) AND x.kind = e.kind AND x.kind <> 'code'
            WHERE e.changed_epoch > seen
        ) hit
        WHERE a.document_id = hit.document_id AND a.normalized = hit.normalized;
    END IF;
END
$stale$;

-- Every staged document of the batch, in order; one row of counts per document (0111's function,
-- with its names resolved ahead where they are not stale).
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
    project_merged boolean := false;
BEGIN
    PERFORM set_config('pg_trgm.similarity_threshold', similarity_threshold, true);
    PERFORM lanegraph_mark_stale_since_ahead();
    FOR staged IN SELECT * FROM pg_temp.lanegraph_staged_document ORDER BY ordinal LOOP
        stamped := clock_timestamp();
        created := 0; merged := 0;
        -- A retracted document resolves nothing: the write closes its facts and drops its mentions.
        IF NOT staged.retracted THEN
            sequential_scans := current_setting('enable_seqscan');
            PERFORM set_config('enable_seqscan', 'off', true);
            INSERT INTO pg_temp.lanegraph_resolved_entity (document_id, normalized, kind, spelled, new_id, entity_id, via_alias)
            SELECT s.document_id, s.normalized, s.kind, s.spelled, s.new_id,
                   CASE WHEN a.stale OR project_merged THEN probed.entity_id ELSE a.entity_id END,
                   CASE WHEN a.stale OR project_merged THEN probed.via_alias ELSE a.via_alias END
            FROM pg_temp.lanegraph_staged_entity s
            JOIN pg_temp.lanegraph_resolved_ahead a ON a.document_id = s.document_id AND a.normalized = s.normalized
            LEFT JOIN LATERAL (
                SELECT r.entity_id, r.via_alias FROM lanegraph_resolve_entity_name(s.normalized, s.kind, staged.scopes) r
                WHERE a.stale OR project_merged
            ) probed ON true
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
                project_merged := true;
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
