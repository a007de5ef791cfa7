"""The entity kinds the graph knows, and how an entity's name becomes its identity.

The kinds are the ontology the entity_catalog lane ranks by embedding distance, so each carries a
description written for that ranking. Identity is (kind, normalised name): the same name of the
same kind in any document, or in any database, is the same entity with the same id.
"""

from __future__ import annotations

import re
import unicodedata

ENTITY_KINDS: dict[str, str] = {
    "person": "A person: an employee, manager, founder, engineer, mentor or contact, named by first and last name.",
    "organization": "An organization: a company, customer, supplier, prospect, board or institution.",
    "team": "A team or department inside an organization that builds, reviews or operates something.",
    "place": "A place: a city, country, region, site, plant, lab, workshop, warehouse or headquarters.",
    "project": "A project or product line the company runs, with a lead, a team, a home site and a state.",
    "product": "A product, part, component, module or piece of equipment, hardware or software.",
    "code": "An identifier code: a fault code, part number, model number or version code.",
    "document": "A document, standard, policy, log, register, review, audit report or programme.",
    "event": "An event: an audit, review, incident, meeting, trial, test or decision.",
    # Last, so a name some reading also typed by a tagger keeps the tagger's kind on a tie.
    "concept": "A thing a conversation is about, named by a common noun: an activity or hobby, a pet, "
    "an object, a food, a feeling, a group or a topic (pottery, camping, dog, support group).",
}

_SPACE = re.compile(r"\s+")
_LEADING_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
_TRAILING_POSSESSIVE = re.compile(r"(?:'s|’s|')$")
_EDGE_PUNCTUATION = "\"'“”‘’()[]{}.,;:!?"


def clean_entity_name(text: str) -> str:
    """The display name: surrounding punctuation, a leading article and a possessive removed."""
    name = _SPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip().strip(_EDGE_PUNCTUATION).strip()
    name = _LEADING_ARTICLE.sub("", name)
    return _TRAILING_POSSESSIVE.sub("", name).strip()


def normalize_entity_name(text: str) -> str:
    """The matching key: the cleaned name in lower case (what `entity.name_lower` holds)."""
    return clean_entity_name(text).lower()


PROJECT_PREFIX = "project "


def project_alias_key(normalized_name: str) -> str | None:
    """"project heron" -> "heron": the short name by which text refers to a project."""
    if normalized_name.startswith(PROJECT_PREFIX) and len(normalized_name) > len(PROJECT_PREFIX):
        return normalized_name[len(PROJECT_PREFIX) :]
    return None


CODE_PATTERN = r"^[A-Z]{1,4}-[A-Z]?\d+[a-z]?$"
_CODE = re.compile(CODE_PATTERN)


def kind_from_name(name: str) -> str | None:
    """The kind a name's form decides whatever a tagger guessed: "Project Heron", "Aerial Team", "HX-4417"."""
    if name.startswith("Project ") and len(name) > len("Project "):
        return "project"
    if name.endswith(" Team"):
        return "team"
    if _CODE.match(name):
        return "code"
    return None


# "X is the account manager ..." / "X is a grocery chain ...": a stated role says what kind of
# thing X is more reliably than a small tagger's guess, so such a statement outweighs several guesses.
PERSON_ROLE_NOUNS = {
    "engineer", "manager", "officer", "mentor", "mentee", "director", "founder", "technician",
    "auditor", "contact", "employee", "developer", "designer", "scientist", "analyst", "head",
    "chair", "president", "member", "graduate", "lead", "owner", "intern", "author",
}
ORGANIZATION_ROLE_NOUNS = {
    "company", "chain", "customer", "supplier", "prospect", "firm", "manufacturer", "operator",
    "vendor", "partner", "startup", "business", "retailer", "distributor", "carrier", "maker",
}
ROLE_HINT_WEIGHT = 10


def kind_from_role(role_noun: str) -> str | None:
    if role_noun in PERSON_ROLE_NOUNS:
        return "person"
    if role_noun in ORGANIZATION_ROLE_NOUNS:
        return "organization"
    return None


# Last words that make a capitalised name a company ("Ostrel Machining", "Kelpstone Photonics").
ORGANIZATION_NAME_WORDS = {
    "robotics", "photonics", "motors", "cells", "optics", "machining", "logistics", "freight",
    "grocers", "ports", "inc", "ltd", "gmbh", "company", "corporation", "group", "university",
    "bank", "board", "hub", "labs", "systems", "industries", "partners",
}


def guess_kind(name: str) -> str:
    """The kind an untyped capitalised name most likely has, from its form alone: a company word
    at the end makes an organization, two or three words a person's name, anything else a place."""
    decided = kind_from_name(name)
    if decided:
        return decided
    words = name.split()
    if words[-1].lower() in ORGANIZATION_NAME_WORDS:
        return "organization"
    return "person" if 2 <= len(words) <= 3 else "place"
