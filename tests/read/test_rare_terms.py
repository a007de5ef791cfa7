"""A question that names a rare exact term gets the document that holds it.

Three hundred shipment records, alike in every word but their codes: the dense ranking cannot tell
one code from another, BM25 ranks the record holding the asked code first by a wide margin.
"""

from __future__ import annotations

import random

import pytest

from pipelines.config import load_config
from pipelines.read.find import find
from pipelines.resources.database import Database
from tests import ANALYZE_OWN_SCHEMA, REPOSITORY
from tests.read.planting import EMBEDDER, Planter

RECORDS = 300
ASKED = range(0, RECORDS, 15)
GOODS = ["copper wire", "glass panels", "olive oil", "wool blankets", "steel bolts", "rice sacks"]
CITIES = ["Porto", "Gdansk", "Valencia", "Tallinn", "Bari", "Rotterdam"]
STATES = ["delayed by fog", "cleared by customs", "held for inspection", "unloaded early", "rerouted north"]


def code(number: int) -> str:
    return f"zq-delta-{number:04d}"


@pytest.fixture(scope="module")
def shipments(make_database) -> Database:  # type: ignore[no-untyped-def]
    database = make_database()
    chosen = random.Random(7)
    with database.connection() as connection:
        with Planter(connection) as plant:
            for number in range(RECORDS):
                plant.document(f"record-{number}", f"Shipment record {number}")
                plant.chunk(
                    f"record-{number}", 0,
                    f"Shipment {code(number)} of {chosen.choice(GOODS)} from {chosen.choice(CITIES)} "
                    f"was {chosen.choice(STATES)} at the harbour.",
                )
        connection.execute(ANALYZE_OWN_SCHEMA)
    return database


@pytest.mark.parametrize("number", ASKED)
def test_a_question_naming_a_code_gets_the_record_that_holds_it(shipments, number):
    config = load_config(REPOSITORY / "lanes.yaml")
    result = find(shipments, f"What happened to shipment {code(number)}?", config=config, embedder=EMBEDDER)
    documents = [c.document_id for c in result.evidence if c.lane == "sources"]
    assert documents[0] == f"record-{number}"
