-- Facts lane, named entities: entities the question names exactly, by name or by alias. Each
-- question term is a run of whole words in lower case, so the lookups compare stored lower-case
-- text with `=` (leakproof, hence an index condition for a confined caller too, 0044):
-- entity_name_lower_column_idx and entity_alias's primary key.
SELECT entity.id AS entity_id, 1.0 AS similarity
FROM entity
WHERE entity.name_lower = ANY(:question_terms)
UNION
SELECT entity_alias.entity_id, 1.0
FROM entity_alias
WHERE entity_alias.alias = ANY(:question_terms)
