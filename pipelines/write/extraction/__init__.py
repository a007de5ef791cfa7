"""The extraction stage (entities_and_facts): the ontology, sentence grounding, the extractors and the
store that writes their entities and facts."""
