"""The merge writes the graph the per-document writer wrote before it.

`REFERENCE` is the digest of every entity, fact and mention row, and of every document's counts,
that the per-document writer (each document resolved, written and superseded in a transaction of
its own) produced on this scenario, captured from that code before the merge replaced it: the
demo corpus, the documents of the resolution tests (near names, short names seen before their
project, declared acronyms, a scoped project whose status changes), extracted in small batches,
then a second run that changes some documents, retracts one and re-extracts the rest unchanged.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pipelines.resources.database import Database, connect
from pipelines.write.extraction.extraction import ExtractionReport, extract_documents
from pipelines.write.extraction.extraction_model import ChunkExtraction, ChunkText
from pipelines.write.extraction.extraction_sql import GRAPH_WRITE_LOCK, INDEX_PENDING_ENTITY_NAMES
from pipelines.write.extraction.spacy_extractor import SpacyExtractor
from pipelines.write.graph.graph_store import refresh_entity_graph
from tests.read.planting import EMBEDDER
from tests.write.corpus import retract_document, seed_documents
from tests.write.test_parallel_extraction import GRAPH_ROWS, MERGE_SIMILARITY, graph

DEMO = Path(__file__).resolve().parents[2] / "pipelines" / "demo_corpus" / "documents"
RESOLUTION_DOCUMENTS = {
    "arms.md": "# Arms\n\nEach Osprey arm carries one Tessel sensor head.\n",
    "kelpstone-a.md": "# A\n\nKelpstone Photonics is based in Eindhoven.\n",
    "kelpstone-b.md": (
        "# B\n\nKelpstone Photonics' lidar works in the cold. Kelpstone-Photonics is based in Eindhoven.\n"
    ),
    "kennedy.md": (
        "# Kennedy\n\nJohn F. Kennedy met the Federal Bureau of Investigation (FBI) in Dallas. "
        "Kennedy was born in Brookline.\n"
    ),
    "fbi.md": "# Report\n\nThe FBI is based in Washington.\n",
    "osprey.md": "# Osprey\n\nTomasz Wielgus leads Project Osprey since 2025-04-01.\n",
}
SCOPED = {
    "lantern-team.md": (
        "# Project Lantern\n\nOskar Brandt leads Project Lantern. As of 2024-12-01, Project Lantern is active. "
        "Project Lantern is built in Tampere.\n"
    ),
}
CHANGED = {
    "lantern-team.md": (
        "# Project Lantern\n\nOskar Brandt leads Project Lantern. Project Lantern was paused on 2025-03-14. "
        "Project Lantern is built in Tampere.\n"
    ),
    "project-heron.md": (
        "# Project Heron\n\nAs of 2025-06-01, Ilse Marchetti leads Project Heron. Project Heron is based in Porto.\n"
    ),
}
RETRACTED = "fbi.md"
REFERENCE = "3769eb60c0993e60adda13c4bec2fff07164ee4538d0699626653499582df074"


def build(database: Database) -> tuple[dict[str, list[tuple]], list[ExtractionReport]]:
    extractor = SpacyExtractor()
    documents = {path.name: path.read_text() for path in sorted(DEMO.glob("*.md"))}
    seed_documents(database, documents)
    seed_documents(database, RESOLUTION_DOCUMENTS)
    seed_documents(database, SCOPED, scopes=["team-a"])
    everything = [*documents, *RESOLUTION_DOCUMENTS, *SCOPED]
    reports = [extract_documents(database, extractor, everything, MERGE_SIMILARITY, batch_size=4)]
    seed_documents(database, {"lantern-team.md": CHANGED["lantern-team.md"]}, scopes=["team-a"])
    seed_documents(database, {"project-heron.md": CHANGED["project-heron.md"]})
    retract_document(database, RETRACTED)
    reports.append(extract_documents(database, extractor, everything, MERGE_SIMILARITY, batch_size=5))
    with database.connection() as connection:
        rows = {name: connection.execute(query).fetchall() for name, query in GRAPH_ROWS.items()}
    return rows, reports


def digest(rows: dict[str, list[tuple]], reports: list[ExtractionReport]) -> str:
    counts = [
        {document_id: vars(counts) for document_id, counts in sorted(report.documents.items())}
        for report in reports
    ]
    text = json.dumps({"rows": rows, "counts": counts}, default=str, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def test_the_merge_writes_what_the_per_document_writer_wrote(database: Database) -> None:
    rows, reports = build(database)
    assert all(rows.values())
    assert any(counts.facts_superseded for counts in reports[0].documents.values())
    assert any(counts.entities_merged for counts in reports[0].documents.values())
    assert reports[1].documents[RETRACTED].retracted
    assert digest(rows, reports) == REFERENCE


def test_the_merge_plans_its_statements_once_per_batch(database: Database) -> None:
    # Migration 0115; a later CREATE OR REPLACE of the function that leaves out its SET clause would
    # plan every statement again for every document, under the graph write lock.
    with database.connection() as connection:
        (settings,) = connection.execute(
            "SELECT proconfig FROM pg_proc WHERE oid = 'lanegraph_merge_staged_extractions(text)'::regprocedure"
        ).fetchone()
    assert settings == ["plan_cache_mode=force_generic_plan"]


def names_left_pending(database: Database) -> int:
    """Moves the trigram index's pending list into the index; how many pages it held."""
    with database.connection() as connection:
        return connection.execute(INDEX_PENDING_ENTITY_NAMES).fetchone()[0]


def test_the_writers_of_entities_leave_their_names_in_the_trigram_index_not_in_its_pending_list(
    database: Database,
) -> None:
    # Migration 0116: a row written outside them waits in the pending list, which every near-name
    # probe reads in full; extraction moves its entities' names in after each merge, and the graph
    # refresh after it writes new versions of the entity rows (kinds, degrees, embeddings).
    seed_documents(database, RESOLUTION_DOCUMENTS)
    report = extract_documents(database, SpacyExtractor(), list(RESOLUTION_DOCUMENTS), MERGE_SIMILARITY)
    left_by_extraction = names_left_pending(database)
    refresh_entity_graph(database, EMBEDDER.embed)
    left_by_the_refresh = names_left_pending(database)
    with database.connection() as connection:
        connection.execute(
            "INSERT INTO entity (id, name, kind, normalized_name) VALUES ('e-outside', 'Written Outside', 'person', "
            "'written outside')"
        )
    assert report.total("entities_created") > 0
    assert (left_by_extraction, left_by_the_refresh, names_left_pending(database)) == (0, 0, 1)


class ParseTogether:
    """An extractor whose every batch waits, before it parses, until the other run's extractor is
    parsing too: a run that could not parse while the other holds the graph lock would time out."""

    def __init__(self, extractor: SpacyExtractor, together: threading.Barrier, parsed: threading.Event) -> None:
        self.extractor, self.together, self.parsed = extractor, together, parsed

    def extract(self, chunks: Sequence[ChunkText]) -> list[ChunkExtraction]:
        self.together.wait(timeout=120)
        extractions = self.extractor.extract(chunks)
        self.parsed.set()
        return extractions


def test_two_runs_of_different_partitions_parse_side_by_side_and_merge_one_after_the_other(make_database) -> None:
    documents = {path.name: path.read_text() for path in sorted(DEMO.glob("*.md"))}
    partitions = [list(documents)[::2], list(documents)[1::2]]
    together, *singles = make_database(), make_database(), make_database()
    for database in (together, *singles):
        seed_documents(database, documents)
    extractor = SpacyExtractor()
    for database, order in zip(singles, (partitions, partitions[::-1]), strict=True):
        for partition in order:
            extract_documents(database, extractor, partition, MERGE_SIMILARITY)

    barrier = threading.Barrier(len(partitions))
    parsed = [threading.Event() for _ in partitions]
    # Another writer holds the graph lock throughout both runs' parsing.
    blocker = connect(together.url)
    blocker.execute(GRAPH_WRITE_LOCK)
    runs = ThreadPoolExecutor(len(partitions))
    try:
        reports = [
            runs.submit(extract_documents, together, ParseTogether(extractor, barrier, done), partition, MERGE_SIMILARITY)
            for partition, done in zip(partitions, parsed, strict=True)
        ]
        parsed_under_the_lock = all(done.wait(timeout=180) for done in parsed)
        merged_under_the_lock = any(report.done() for report in reports)
    finally:
        blocker.commit()
        blocker.close()
        runs.shutdown()
    assert parsed_under_the_lock, "a run's parse waited on the graph lock"
    assert not merged_under_the_lock, "a run merged while another writer held the graph lock"
    merged = [report.result() for report in reports]
    assert all(report.lock_wait_seconds > 0 for report in merged)
    # Resolution depends on what was merged before; the two runs' merges went one after the other.
    assert graph(together) in (graph(singles[0]), graph(singles[1]))
