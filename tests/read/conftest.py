"""A planted world for the read-side tests: for every lane, evidence that only that lane can find.

Rows that must stay out of the dense rankings are embedded as UNRELATED text, far from every
question asked here, so the lane that finds them is the only way to reach them.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from pipelines.resources.database import Database
from pipelines.write.graph.title_links import refresh_title_links
from tests.read.planting import Planter

UNRELATED = "Bananas ripen slowly in a paper bag on the kitchen counter."

KINDS = {
    "project": "A project or product line the company runs, with a lead, a team, a home site and a state.",
    "person": "A person: an employee, manager, founder, engineer, mentor or contact.",
    "place": "A place: a city, country, region, site, plant, lab, workshop or warehouse.",
}


@pytest.fixture(scope="module")
def world(make_database) -> Database:  # type: ignore[no-untyped-def]
    return plant_world(make_database())


def plant_world(database: Database) -> Database:
    now = datetime.now(UTC)
    with database.connection() as connection:
        with Planter(connection) as plant:
            for kind, description in KINDS.items():
                plant.entity_kind(kind, description)

            # entity_catalog: two live projects with their states.
            atlas = plant.entity("Atlas", "project", embed_as=UNRELATED)
            beacon = plant.entity("Beacon", "project", embed_as=UNRELATED)
            plant.fact("f-atlas", atlas, "status", "Atlas is active.", object_value="active", embed_as=UNRELATED)
            plant.fact("f-beacon", beacon, "status", "Beacon is waiting.", object_value="waiting", embed_as=UNRELATED)

            # facts, walk only: Zorblax is named; the facts two hops out are embedded far from everything.
            zorblax = plant.entity("Zorblax", "person", embed_as=UNRELATED)
            quentin = plant.entity("Quentin", "person", embed_as=UNRELATED)
            marlo = plant.entity("Marlo", "person", embed_as=UNRELATED)
            plant.fact("f-walk-1", zorblax, "mentors", "Zorblax mentors Quentin.", object_id=quentin, embed_as=UNRELATED)
            plant.fact("f-walk-2", quentin, "trains_with", "Quentin trains with Marlo.", object_id=marlo, embed_as=UNRELATED)

            # sources, BM25 only: a rare code, in a chunk embedded far away, under an unnamed title.
            plant.document("maintenance", "Maintenance Notes")
            plant.chunk("maintenance", 0, "Gimbal part QX-7781 was replaced after torque drift.", embed_as=UNRELATED)

            # sources, title only: the question names the title; the chunk shares no word with it.
            plant.document("corvane", "Corvane Cold Chain Audit", uri="file://corvane.md")
            plant.chunk("corvane", 0, "Trucks were inspected on Tuesday and every seal was intact.", embed_as=UNRELATED)

            # sources, bridge hop only: the titled page names Ondrea Vask; her own page shares no word
            # with the question and is embedded far from it.
            plant.document("lighthouse", "Lighthouse Hymn")
            song = plant.chunk("lighthouse", 0, "Lighthouse Hymn is a ballad first sung by Ondrea Vask.", embed_as=UNRELATED)
            vask = plant.entity("Ondrea Vask", "person", embed_as=UNRELATED)
            plant.mention(vask, song, "Ondrea Vask", "person")
            plant.document("vask", "Ondrea Vask")
            plant.chunk("vask", 0, "She married the cartographer Tamsin Oyelaran in 2004.", embed_as=UNRELATED)

            # sources, bridge hop by a shared name only: the titled page names the Ostrava Guild, which
            # no page is titled with; another page names it too, and shares no word with the question.
            plant.document("mural", "Harbor Quay Mural")
            mural = plant.chunk("mural", 0, "Harbor Quay Mural was painted by the Ostrava Guild.", embed_as=UNRELATED)
            guild = plant.entity("Ostrava Guild", "project", embed_as=UNRELATED)
            plant.mention(guild, mural, "Ostrava Guild", "project")
            plant.document("ledger", "Civic Ledger")
            ledger = plant.chunk("ledger", 0, "In 1931 the Ostrava Guild disbanded.", embed_as=UNRELATED)
            plant.mention(guild, ledger, "Ostrava Guild", "project")

            # sources, bridge hop by a title link only: the titled page names another page's title,
            # which no entity mention records (the small model misses song and album names); that
            # page shares no word with the question and is embedded far from it.
            plant.document("parade", "Paper Lantern Parade")
            plant.chunk("parade", 0, "Paper Lantern Parade closes the album Velmont Ashgrove Sessions.", embed_as=UNRELATED)
            plant.document("velmont", "Velmont Ashgrove Sessions (album)")
            plant.chunk("velmont", 0, "Tracked in a barn near Tarragona under Ines Quarry.", embed_as=UNRELATED)

            # sources, bridge seeds: the question names the tower's page, the first hop by far; the
            # foundry notes share one word with it and link to a page of their own, which a seed that
            # weak must not bring in.
            plant.document("tower", "Quarry Bell Tower")
            plant.chunk("tower", 0, "Quarry Bell Tower was cast by Odile Marchetti.", embed_as=UNRELATED)
            plant.document("foundry", "Foundry Notes")
            plant.chunk("foundry", 0, "Every bell of the district came from Pellam Works.", embed_as=UNRELATED)
            plant.document("pellam", "Pellam Works")
            plant.chunk("pellam", 0, "Founded in 1870 near Leeds by two brothers.", embed_as=UNRELATED)

            # sources, title ranking by a page's name: the question names the title without its
            # qualifier; the chunk shares no word with the question, while a manifest shares one.
            plant.document("kestrel", "Kestrel Moorhen (steamship)")
            plant.chunk("kestrel", 0, "Launched at Gdynia in 1911, she carried grain to Riga.", embed_as=UNRELATED)
            plant.document("manifest", "Harbour Manifest")
            plant.chunk("manifest", 0, "Every cargo was weighed twice.", embed_as=UNRELATED)

            # sources, title ranking with accents folded: the question writes the title without them.
            plant.document("zoltan", "Zoltán Várkonyi Lighthouse")
            plant.chunk("zoltan", 0, "Its lamp was first lit in 1893.", embed_as=UNRELATED)

            # sources, page diversity: two documents of one page, both titled in the question, and
            # a third page only BM25 finds; the second document of the page yields it one place.
            plant.document("ferrow-a", "Ferrow Glassworks")
            plant.chunk("ferrow-a", 0, "The works opened beside the canal in 1822.", embed_as=UNRELATED)
            plant.document("ferrow-b", "Ferrow Glassworks")
            plant.chunk("ferrow-b", 0, "Its furnaces were rebuilt after the flood.", embed_as=UNRELATED)
            plant.document("barge", "Canal Barge Ledger")
            plant.chunk("barge", 0, "Crates of zandolite left by barge every spring.", embed_as=UNRELATED)

            # sources, title weight by commonness: the question names a mill's page and a country's,
            # which five other passages name; a ledger only BM25 finds shares three words with it.
            plant.document("brannock", "Brannock Mill")
            plant.chunk("brannock", 0, "Oats have been ground here since 1790.", embed_as=UNRELATED)
            plant.document("velsia", "Velsia")
            plant.chunk("velsia", 0, "A small inland country of lakes.", embed_as=UNRELATED)
            for number, place in enumerate(("Korvo", "Ardal", "Tessin", "Morrow", "Halby")):
                plant.document(f"velsia-naming-{number}", f"{place} Gazette")
                plant.chunk(f"velsia-naming-{number}", 0, f"{place} sold its grain to Velsia.", embed_as=UNRELATED)
            plant.document("wheel", "Wheel Ledger")
            plant.chunk("wheel", 0, "The river turns the wheel each spring.", embed_as=UNRELATED)

            # sources, a name inside a longer named title: "Gate" in "Orsolan Gate" is no name of its own.
            plant.document("orsolan", "Orsolan Gate")
            plant.chunk("orsolan", 0, "Built of basalt by the river guild.", embed_as=UNRELATED)
            plant.document("gate", "Gate")
            plant.chunk("gate", 0, "A hinged barrier closing an opening in a wall.", embed_as=UNRELATED)

            # sources, no title ranking: a title of one stopword names nothing, though questions hold it.
            plant.document("stopword", "in")
            plant.chunk("stopword", 0, "A page whose title is a stopword.", embed_as=UNRELATED)

            # overview: a RAPTOR tree whose root is the only level find reads.
            plant.raptor_node("raptor-leaf", 1, "Heron arms pick mixed cases in the Porto warehouse.", ["maintenance#0"])
            plant.raptor_node("raptor-root", 2, "Quillfern Robotics builds warehouse robots across four sites.", ["raptor-leaf"])

            # communities and profiles.
            plant.community("community-cold", "Cold chain", "Reefer trucks, temperature logging and seal audits.", [atlas])
            saoirse = plant.entity("Saoirse Dunne", "person", embed_as=UNRELATED)
            plant.profile(saoirse, "Saoirse Dunne leads Project Mooring and mentors Lucia Ferraro.")

            # working memory: one unpromoted item, and a promoted one that must not come back.
            plant.session_item("wm-open", "The user prefers metric units and ISO 8601 dates in every answer.")
            plant.session_item("wm-promoted", "The user prefers imperial units in every answer.", promoted_at=now - timedelta(hours=1))

            # BM25 statistics in the proportions of a real corpus, so the planner reads postings by
            # term (as it does at scale) rather than from the chunk side (right for two chunks).
            plant.filler_postings(chunks=200, terms=500, postings=3000)
    refresh_title_links(database)
    return database
