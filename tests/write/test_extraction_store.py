"""Writing extractions: changed documents replace their facts, retracted ones close them, names merge."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from pipelines.resources.database import Database
from pipelines.write.extraction.extraction import extract_documents
from pipelines.write.extraction.extraction_model import ChunkExtraction, ChunkText, Mention
from pipelines.write.extraction.extraction_store import canonical_mentions, entity_id, merge_documents, stage_document
from pipelines.write.extraction.spacy_extractor import SpacyExtractor
from tests.write.corpus import retract_document, seed_documents

MERGE_SIMILARITY = 0.9
LANTERN = (
    "# Project Lantern\n\n"
    "Oskar Brandt leads Project Lantern. As of 2024-12-01, Project Lantern is active. "
    "Project Lantern is built in Tampere.\n"
)
LANTERN_CHANGED = (
    "# Project Lantern\n\n"
    "Oskar Brandt leads Project Lantern. Project Lantern was paused on 2025-03-14. "
    "Project Lantern is built in Tampere.\n"
)


def extract(database: Database, *document_ids: str):
    return extract_documents(database, SpacyExtractor(), document_ids, MERGE_SIMILARITY)


def believed(database: Database) -> set[str]:
    with database.connection() as connection:
        return {s for (s,) in connection.execute("SELECT statement FROM fact WHERE recorded_to IS NULL")}


def test_a_changed_document_replaces_its_facts_and_closes_the_rest(database: Database) -> None:
    seed_documents(database, {"lantern.md": LANTERN}, scopes=["team-a"])
    extract(database, "lantern.md")
    assert "As of 2024-12-01, Project Lantern is active." in believed(database)

    seed_documents(database, {"lantern.md": LANTERN_CHANGED}, scopes=["team-a"])
    report = extract(database, "lantern.md").documents["lantern.md"]

    statements = believed(database)
    assert "As of 2024-12-01, Project Lantern is active." not in statements
    assert "Project Lantern was paused on 2025-03-14." in statements
    assert "Oskar Brandt leads Project Lantern." in statements
    assert report.facts_closed >= 1 and report.facts_inserted >= 1
    with database.connection() as connection:
        [(closed_at,)] = connection.execute(
            "SELECT recorded_to FROM fact WHERE statement = 'As of 2024-12-01, Project Lantern is active.'"
        ).fetchall()
        scopes = {tuple(s) for (s,) in connection.execute("SELECT DISTINCT scopes FROM fact")}
    assert closed_at is not None
    assert scopes == {("team-a",)}


def test_a_retracted_document_closes_every_fact_it_stated(database: Database) -> None:
    seed_documents(database, {"lantern.md": LANTERN, "other.md": "# Other\n\nSaoirse Dunne leads Project Mooring.\n"})
    extract(database, "lantern.md", "other.md")
    retract_document(database, "lantern.md")
    report = extract(database, "lantern.md", "other.md")

    assert report.documents["lantern.md"].retracted
    with database.connection() as connection:
        live = connection.execute("SELECT document_id, count(*) FROM live_fact GROUP BY 1").fetchall()
        closed = connection.execute(
            "SELECT count(*) FROM fact WHERE document_id = 'lantern.md' AND recorded_to IS NOT NULL"
        ).fetchone()[0]
        mentions = connection.execute(
            "SELECT count(*) FROM entity_mention WHERE document_id = 'lantern.md'"
        ).fetchone()[0]
    assert dict(live) == {"other.md": 1}
    assert closed >= 3 and mentions == 0


def test_a_short_name_seen_before_its_project_merges_into_it(database: Database) -> None:
    seed_documents(database, {"a.md": "# Arms\n\nEach Heron arm carries one Tessel sensor head.\n"})
    extract(database, "a.md")
    seed_documents(database, {"b.md": "# Heron\n\nTomasz Wielgus leads Project Heron since 2025-04-01.\n"})
    report = extract(database, "b.md")

    assert report.documents["b.md"].entities_merged == 1
    with database.connection() as connection:
        names = {name: aliases for name, aliases in connection.execute("SELECT name, aliases FROM entity")}
        subjects = {
            name for (name,) in connection.execute(
                "SELECT e.name FROM fact f JOIN entity e ON e.id = f.subject_id WHERE f.document_id = 'a.md'"
            )
        }
    assert "Heron" not in names and "heron" in names["Project Heron"]
    assert subjects == {"Project Heron"}


def test_near_duplicate_names_of_one_kind_resolve_to_one_entity(database: Database) -> None:
    seed_documents(database, {
        "a.md": "# A\n\nKelpstone Photonics is based in Eindhoven.\n",
        "b.md": "# B\n\nKelpstone Photonics' lidar works in the cold. Kelpstone-Photonics is based in Eindhoven.\n",
    })
    extract(database, "a.md", "b.md")
    with database.connection() as connection:
        kelpstone = connection.execute("SELECT count(*) FROM entity WHERE name ILIKE 'kelpstone%%'").fetchone()[0]
    assert kelpstone == 1


class CannedExtractor:
    """Names each chunk the mentions given for the first line of its text, whatever the text says."""

    def __init__(self, mentions: dict[str, list[Mention]]) -> None:
        self.mentions = mentions

    def extract(self, chunks: Sequence[ChunkText]) -> list[ChunkExtraction]:
        return [ChunkExtraction(chunk.id, mentions=self.mentions[chunk.text.splitlines()[0]]) for chunk in chunks]


def test_a_near_name_resolves_to_the_most_similar_entity_of_its_kind_and_never_joins_codes(database: Database) -> None:
    extractor = CannedExtractor({
        "# A": [
            Mention("Kelpstone Photonic", "organization"),  # similarity 0.85 to "kelpstone photonics"
            Mention("Kelpstone Photonics Lab", "organization"),  # 0.83, and the smaller id
            Mention("Kelpstone Photonics 2", "product"),  # 0.90, but another kind
            Mention("HX-4417", "code"),  # 0.60 to "hx-4418"
        ],
        "# B": [Mention("Kelpstone Photonics", "organization"), Mention("HX-4418", "code")],
    })
    seed_documents(database, {"a.md": "# A\n\nSuppliers.\n", "b.md": "# B\n\nSuppliers again.\n"})
    extract_documents(database, extractor, ["a.md"], 0.55)
    report = extract_documents(database, extractor, ["b.md"], 0.55).documents["b.md"]

    with database.connection() as connection:
        resolved = dict(connection.execute(
            "SELECT m.name, e.name FROM entity_mention m JOIN entity e ON e.id = m.entity_id WHERE m.document_id = 'b.md'"
        ).fetchall())
    assert entity_id("organization", "kelpstone photonics lab") < entity_id("organization", "kelpstone photonic")
    assert resolved == {"Kelpstone Photonics": "Kelpstone Photonic", "HX-4418": "HX-4418"}
    assert report.entities_created == 1


def test_a_documents_other_names_become_aliases_later_documents_resolve_by(database: Database) -> None:
    seed_documents(database, {
        "a.md": (
            "# Kennedy\n\nJohn F. Kennedy met the Federal Bureau of Investigation (FBI) in Dallas. "
            "Kennedy was born in Brookline.\n"
        ),
    })
    first = extract(database, "a.md").documents["a.md"]
    seed_documents(database, {"b.md": "# Report\n\nThe FBI is based in Washington.\n"})
    second = extract(database, "b.md").documents["b.md"]

    with database.connection() as connection:
        aliases = dict(connection.execute("SELECT name, aliases FROM entity WHERE aliases <> '{}'").fetchall())
        subjects = {
            name for (name,) in connection.execute(
                "SELECT e.name FROM fact f JOIN entity e ON e.id = f.subject_id WHERE f.document_id = 'b.md'"
            )
        }
    assert aliases == {"John F. Kennedy": ["kennedy"], "Federal Bureau of Investigation": ["fbi"]}
    assert first.entities_created >= 3 and second.entities_created == 1
    assert subjects == {"Federal Bureau of Investigation"}


@pytest.mark.parametrize(
    ("mentions", "hints", "expected"),
    [
        ([Mention("Femke de Vries", "organization")] * 3, [Mention("Femke de Vries", "person")], "person"),
        ([Mention("Porto", "person"), Mention("Porto", "place"), Mention("Porto", "place")], [], "place"),
        ([Mention("Heron", "organization"), Mention("Project Heron", "project")], [], "project"),
    ],
)
def test_kind_vote_within_a_document(mentions: list[Mention], hints: list[Mention], expected: str) -> None:
    canonical = canonical_mentions(mentions, hints)
    assert canonical[mentions[0].normalized_name].kind == expected


def test_writing_an_extraction_puts_back_the_callers_own_sequential_scan_setting(database: Database) -> None:
    seed_documents(database, {"a.md": "# A\n\nSuppliers.\n"})
    mention = Mention("Kelpstone Photonics", "organization")
    extract_documents(database, CannedExtractor({"# A": [mention]}), ["a.md"], MERGE_SIMILARITY)
    with database.connection() as connection, connection.transaction():
        chunk_id, scopes = connection.execute("SELECT c.id, d.scopes FROM chunk c JOIN document d ON d.id = c.document_id").fetchone()
        connection.execute("SET LOCAL enable_seqscan = off")
        staged = stage_document("a.md", scopes, [ChunkExtraction(chunk_id, mentions=[mention])])
        merge_documents(connection, [staged], MERGE_SIMILARITY)
        assert connection.execute("SHOW enable_seqscan").fetchone() == ("off",)
