"""A tiny two-hop benchmark in the shared dataset format: 20 passages, 6 questions (4 dev, 2 train).

Each question needs a bridge passage it names and the passage the bridge points to; the other
passages are distractors that share words with the questions. All text is made up for the tests.
"""

from __future__ import annotations

import json
from pathlib import Path

PASSAGES = [
    ("toy-01", "Velmora Observatory", "The Velmora Observatory was founded by the astronomer Ilse Karvonen in 1931 on the slopes of Mount Drenhal."),
    ("toy-02", "Ilse Karvonen", "Ilse Karvonen was an astronomer born in the lakeside town of Kesalahti. She catalogued hundreds of variable stars."),
    ("toy-03", "Brantwick Ferry", "The Brantwick Ferry links the harbour of Osterby with the island of Lunne. It is operated by Caldmoor Shipping."),
    ("toy-04", "Caldmoor Shipping", "Caldmoor Shipping is a shipping company headquartered in the port city of Harrowgate."),
    ("toy-05", "Quenby Cathedral", "Quenby Cathedral was designed by the architect Marius Tollan and completed in 1874."),
    ("toy-06", "Marius Tollan", "Marius Tollan was an architect who trained at the Academy of Fine Arts in Corvessa."),
    ("toy-07", "Pellinor Cup", "The Pellinor Cup is a rowing race won most often by the Aldmere Rowing Club."),
    ("toy-08", "Aldmere Rowing Club", "The Aldmere Rowing Club trains on the river Sable and wears green and silver colours."),
    ("toy-09", "Gorsefield Mill", "Gorsefield Mill is a textile mill owned by the Hadley family since 1902."),
    ("toy-10", "Hadley family", "The Hadley family made its fortune in wool and lives at Brackwater Hall."),
    ("toy-11", "Tarnwick Reservoir", "Tarnwick Reservoir supplies drinking water to the city of Elbury and was flooded in 1955."),
    ("toy-12", "Elbury", "Elbury is a cathedral city whose mayor is Joan Fenwright."),
    ("toy-13", "Mount Drenhal", "Mount Drenhal is an extinct volcano in the Oskari range, 2,900 metres high."),
    ("toy-14", "Osterby", "Osterby is a fishing harbour known for its smoked herring market."),
    ("toy-15", "Corvessa", "Corvessa is a university town on the river Lint with a famous botanical garden."),
    ("toy-16", "Lunne", "Lunne is a small island with a lighthouse and a colony of puffins."),
    ("toy-17", "Sable river", "The river Sable rises in the Oskari range and flows into the northern sea."),
    ("toy-18", "Brackwater Hall", "Brackwater Hall is a country house with a walled garden and a deer park."),
    ("toy-19", "Harrowgate", "Harrowgate is a port city with shipyards, a naval museum and a ferry terminal."),
    ("toy-20", "Kesalahti", "Kesalahti is a lakeside town famous for its wooden church and summer regatta."),
]

QUESTIONS = [
    ("q-observatory", "In which town was the founder of the Velmora Observatory born?", ["toy-01", "toy-02"], "Kesalahti", "dev"),
    ("q-ferry", "In which city is the company that operates the Brantwick Ferry headquartered?", ["toy-03", "toy-04"], "Harrowgate", "dev"),
    ("q-cathedral", "Where did the architect of Quenby Cathedral train?", ["toy-05", "toy-06"], "the Academy of Fine Arts in Corvessa", "dev"),
    ("q-cup", "On which river does the club that wins the Pellinor Cup most often train?", ["toy-07", "toy-08"], "Sable", "dev"),
    ("q-mill", "Where does the family that owns Gorsefield Mill live?", ["toy-09", "toy-10"], "Brackwater Hall", "train"),
    ("q-reservoir", "Who is the mayor of the city that Tarnwick Reservoir supplies?", ["toy-11", "toy-12"], "Joan Fenwright", "train"),
]

DEV_QUESTIONS = sum(1 for *_, split in QUESTIONS if split != "train")


def toy_dataset(name: str = "toy_eval") -> dict[str, object]:
    return {
        "name": name,
        "corpus": [{"id": i, "title": title, "text": text} for i, title, text in PASSAGES],
        "queries": [
            {"id": i, "text": text, "gold_ids": gold, "answers": [answer], "meta": {"split": split}}
            for i, text, gold, answer, split in QUESTIONS
        ],
    }


def write_toy_dataset(folder: Path, name: str = "toy_eval") -> Path:
    path = folder / f"{name}.json"
    path.write_text(json.dumps(toy_dataset(name)))
    return path
