"""A graph that can carry a hop, on sentences written for these tests and the real spaCy
model: a page's subject behind its pronouns and short references, appositions and possessives as
relations, encyclopedic verb edges between two entities, and other names of one entity folded
into it; and the facts reaching the database through the real entities_and_facts asset."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest

from pipelines.defs.write import document_assets, extraction_assets, jobs
from pipelines.orchestration.runner import ingest
from pipelines.resources.database import Database, DatabaseResource
from pipelines.resources.embedder import EmbedderResource
from pipelines.write.extraction.extraction_model import ChunkExtraction, ChunkText
from pipelines.write.extraction.extraction_model import Mention as M
from pipelines.write.extraction.extraction_store import canonical_mentions
from pipelines.write.extraction.extractor import ExtractorResource
from pipelines.write.extraction.spacy_extractor import SpacyExtractor


def extract(text: str, title: str = "", qualifier: str = "") -> ChunkExtraction:
    [extraction] = SpacyExtractor().extract([ChunkText("page#0", text, title, qualifier)])
    return extraction


def edges(extraction: ChunkExtraction) -> set[tuple[str, str, str]]:
    return {
        (f.subject.name, f.predicate, f.object.name if f.object else f"'{f.object_value}'") for f in extraction.facts
    }


def test_the_page_subjects_pronouns_and_short_references_mean_it() -> None:
    person = extract("Odile Marchetti was a French cyclist. She was born in Lyon. Her brother, Paul Marchetti, was a painter.",
                     "Odile Marchetti")
    assert {("Odile Marchetti", "born_in", "Lyon"), ("Paul Marchetti", "brother_of", "Odile Marchetti")} <= edges(person)
    alone = extract("He was born in Tulsa.", "Hank Snow")
    assert edges(alone) == {("Hank Snow", "born_in", "Tulsa")}
    assert [m.name for m in alone.mentions].count("Hank Snow") == 1
    album = extract("The album was recorded in Reykjavik. It was produced by Einar Thorsson.", "Northern Lights",
                    "Kaja Berg album")
    assert edges(album) == {("Northern Lights", "recorded_in", "Reykjavik"), ("Einar Thorsson", "produce", "Northern Lights")}


def test_a_definition_teaches_the_page_its_noun() -> None:
    text = "Saltmarsh is the third album by Teodor Vance. The album was recorded in London."
    assert ("Saltmarsh", "recorded_in", "London") in edges(extract(text, "Saltmarsh"))


@pytest.mark.parametrize(
    ("text", "title", "qualifier"),
    [
        ("It was founded in Leeds.", "Odile Marchetti", ""),               # "it" is not a person
        ("He was born in Tulsa.", "Northern Lights", "Kaja Berg album"),  # "he" is not an album
        ("Marco Rossi met her, and he was born in Tulsa.", "Odile Marchetti", ""),  # a rival person first
        ("The album was recorded in Reykjavik.", "Odile Marchetti", ""),  # no album on a person's page
        ("It was founded in Leeds.", "Company overview", ""),             # the title names no entity
        ("The second album was recorded in Reykjavik.", "Northern Lights", "Kaja Berg album"),  # not bare
    ],
)
def test_references_stay_unresolved_where_they_could_mean_something_else(text, title, qualifier) -> None:
    page_facts = [f for f in extract(text, title, qualifier).facts if title in (f.subject.name, f.object and f.object.name)]
    assert page_facts == []


def test_appositions_state_roles_and_kinds() -> None:
    found = edges(extract("Valmora, the capital of Ostrelia, hosted the games. The river Tessin runs north."))
    assert ("Valmora", "capital_of", "Ostrelia") in found
    places = edges(extract("Marta Kovac moved to Tulsa, Oklahoma, in 1990."))
    assert ("Tulsa", "located_in", "Oklahoma") in places


def test_an_apposition_of_two_people_is_no_relation() -> None:
    found = edges(extract("The prize went to Marta Kovac, Ivan Petrov and Lena Haas."))
    assert not {edge for edge in found if edge[1] in {"located_in", "is"}}


def test_possessives_make_roles_of_their_owner() -> None:
    found = edges(extract("Ostrelia's capital is Valmora. Brenna is Ostrelia's largest port."))
    assert ("Valmora", "capital_of", "Ostrelia") in found
    assert found == {("Valmora", "capital_of", "Ostrelia"), ("Brenna", "largest_port_of", "Ostrelia")}


def test_a_possessive_of_no_entity_makes_no_role() -> None:
    found = edges(extract("The town's mayor is Ada Lindqvist."))
    assert not any(predicate.endswith("_of") for _, predicate, _ in found)


@pytest.mark.parametrize(
    ("text", "edge"),
    [
        ("Ada Lindqvist was born in Uppsala.", ("Ada Lindqvist", "born_in", "Uppsala")),
        ("Kestrel Bay is located in Tasmania.", ("Kestrel Bay", "located_in", "Tasmania")),
        ("Ada Lindqvist is a member of the Royal Society.", ("Ada Lindqvist", "member_of", "Royal Society")),
        ("Ostrelia is part of the European Union.", ("Ostrelia", "part_of", "European Union")),
        ("Marta Kovac was directed by Ada Lindqvist.", ("Ada Lindqvist", "direct", "Marta Kovac")),
    ],
)
def test_encyclopedic_verbs_link_two_entities(text, edge) -> None:
    assert edge in edges(extract(text))


def test_a_verb_edge_needs_an_entity_at_both_ends() -> None:
    assert edges(extract("The song was performed by Ada Lindqvist.")) == set()
    assert edges(extract("The song was performed by Ada Lindqvist.", "Morning Tide", "song")) == {
        ("Ada Lindqvist", "perform", "Morning Tide")
    }


def test_other_names_of_one_entity_fold_into_it() -> None:
    extraction = extract("The Ostrelian Space Agency (OSA) launched a probe. The OSA is based in Valmora.")
    canonical = canonical_mentions(extraction.mentions, [], extraction.aliases)
    assert canonical["osa"].name == "Ostrelian Space Agency"
    people = canonical_mentions([M("John F. Kennedy", "person"), M("Kennedy", "organization"), M("U.S.", "place"),
                                 M("US", "place"), M("U.S.", "place"), M("The Beatles", "organization"),
                                 M("Beatles", "organization")])
    assert canonical_mentions([M("Kennedy", "person")])["kennedy"].name == "Kennedy"
    assert people["kennedy"].name == "John F. Kennedy"
    assert people["us"] == people["u.s"]
    assert people["beatles"].name == "Beatles"


def test_an_ambiguous_surname_or_an_undeclared_acronym_stays_apart() -> None:
    canonical = canonical_mentions([M("John Kennedy", "person"), M("Robert Kennedy", "person"), M("Kennedy", "person"),
                                    M("Ostrelian Space Agency", "organization"), M("OSA", "organization")])
    assert canonical["kennedy"].name == "Kennedy"
    assert canonical["osa"].name == "OSA"


def test_page_subject_facts_reach_the_database_through_the_asset(
    make_schema_url: Callable[[], str], tmp_path: Path
) -> None:
    folder = tmp_path / "pages"
    folder.mkdir()
    pages = [
        {"id": "odile", "title": "Odile Marchetti (cyclist)",
         "text": "Odile Marchetti was a French cyclist. She was born in Lyon. She is a member of the Velo Club Rhone."},
        {"id": "lyon", "title": "Lyon", "text": "Lyon, the capital of the Rhone department, lies on two rivers."},
    ]
    (folder / "pages.jsonl").write_text("".join(json.dumps(page) + "\n" for page in pages))
    definitions = dg.Definitions(
        assets=[document_assets.documents, document_assets.chunks, document_assets.chunk_embeddings,
                document_assets.bm25_index, extraction_assets.entities_and_facts],
        jobs=[jobs.ingest_documents],
        resources={"database": DatabaseResource(), "embedder": EmbedderResource(), "extractor": ExtractorResource()},
    )
    url = make_schema_url()
    ingest(folder, definitions=definitions, instance=dg.DagsterInstance.ephemeral(), database_url=url, refresh_graph=False)
    database = Database(url)
    try:
        with database.connection() as connection:
            found = set(connection.execute(
                """
                SELECT s.name, f.predicate, o.name FROM live_fact f
                JOIN entity s ON s.id = f.subject_id JOIN entity o ON o.id = f.object_id
                """
            ).fetchall())
            mentioned = connection.execute(
                """
                SELECT count(DISTINCT m.chunk_id) FROM entity_mention m JOIN entity e ON e.id = m.entity_id
                WHERE e.name = 'Odile Marchetti'
                """
            ).fetchone()[0]
    finally:
        database.close()
    assert ("Odile Marchetti", "born_in", "Lyon") in found
    assert ("Lyon", "capital_of", "Rhone department") in found
    assert mentioned >= 1
