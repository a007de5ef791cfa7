-- Facts lane, named entities with typos forgiven: the exact mentions, plus entities whose name is
-- trigram-similar (entity_name_trgm_idx) to a question term by at least :mention_fuzzy_similarity.
-- A fuzzy mention carries its similarity as its weight, so an exact one always weighs more. Only
-- terms of up to :mention_fuzzy_max_words words are probed: each term is one trigram index probe,
-- and the long runs (most of a question's terms) almost never come close to a name.
SELECT exact_mention.entity_id, exact_mention.similarity
FROM exact_mention
UNION ALL
SELECT entity.id, max(similarity(lower(entity.name), term.phrase))
FROM unnest(:question_terms) AS term(phrase)
JOIN entity ON lower(entity.name) % term.phrase
WHERE cardinality(string_to_array(term.phrase, ' ')) <= :mention_fuzzy_max_words
  AND similarity(lower(entity.name), term.phrase) >= :mention_fuzzy_similarity
  AND NOT EXISTS (SELECT 1 FROM exact_mention WHERE exact_mention.entity_id = entity.id)
GROUP BY entity.id
