"""A small graph to summarize: four people, the sentences relating them (each a `works_with` fact)
and the chunks of the notes they are stated in, planted as the graph-wide steps' input."""

from __future__ import annotations

from collections.abc import Sequence

from tests.read.planting import EMBEDDER, Planter

MODEL = EMBEDDER.model_id
PEOPLE = ("Aino", "Mika", "Liisa", "Otto")
STATEMENTS = (
    ("Aino", "Mika", "Aino leads the firmware team with Mika."),
    ("Mika", "Liisa", "Mika reviews the battery tests Liisa writes."),
    ("Liisa", "Otto", "Liisa and Otto shipped the Heron prototype."),
    ("Otto", "Aino", "Otto reports to Aino on the airspace review."),
    ("Aino", "Liisa", "Aino hired Liisa in 2024."),
)
CHUNKS = (
    "The firmware team ships a release every month.", "Battery tests run in the cold chamber overnight.",
    "The Heron prototype flew its first route in May.", "The airspace review found two open issues.",
    "Lantern maps the coast with a fleet of drones.", "Mooring keeps the boats charged at the harbour.",
)


def plant_notes(plant: Planter, document: str, chunks: Sequence[str], scopes: Sequence[str] = ()) -> None:
    plant.document(document, "Team notes", scopes=list(scopes))
    for position, text in enumerate(chunks):
        plant.chunk(document, position, text)


def plant_people(plant: Planter, statements: Sequence[tuple[str, str, str]], document: str) -> dict[str, str]:
    """The people as entities and `statements` as facts f0, f1, ... of `document`; returns their ids."""
    plant.entity_kind("person", "a human being")
    people = {name: plant.entity(name, "person") for name in PEOPLE}
    for index, (subject, other, statement) in enumerate(statements):
        plant.fact(f"f{index}", people[subject], "works_with", statement, object_id=people[other], document_id=document)
    return people
