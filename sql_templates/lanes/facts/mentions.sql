-- Facts lane, named entities: entities the question names exactly, by name or by alias. Each
-- question term is a run of whole words in lower case, so `lower(name) = ANY(...)` reads
-- entity_name_lower_idx and the alias overlap reads entity_aliases_idx.
SELECT entity.id AS entity_id, 1.0 AS similarity
FROM entity
WHERE lower(entity.name) = ANY(:question_terms)
UNION
SELECT entity.id, 1.0
FROM entity
WHERE entity.aliases && :question_terms
