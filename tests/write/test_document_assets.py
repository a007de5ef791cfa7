"""The per-document assets materialized for real (in-process, real PostgreSQL, real MiniLM) through
the runner: counts, idempotence, replacement, retraction, and bad input skipped with reasons."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest

from tests import REPOSITORY
from pipelines.defs.write import document_assets, jobs
from pipelines.resources.database import DatabaseResource, connect
from pipelines.resources.embedder import EmbedderResource
from pipelines.orchestration.runner import WriteReport, ingest, materialize

DEMO = REPOSITORY / "pipelines" / "demo_corpus" / "documents"
DEFINITIONS = dg.Definitions(
    assets=[document_assets.documents, document_assets.chunks, document_assets.chunk_embeddings, document_assets.bm25_index],
    asset_checks=[document_assets.every_chunk_embedded, document_assets.bm25_statistics_match_chunks],
    jobs=[jobs.ingest_documents],
    resources={"database": DatabaseResource(), "embedder": EmbedderResource()},
)
RECORDS = [
    {"id": "note-1", "title": "Dock scheduling", "text": "The Rotterdam yard lab schedules dock slots weekly.", "scopes": ["team-a"]},
    {"id": "note-2", "title": "Battery recall", "text": "Batteries from lot 7 were recalled in March 2025."},
]


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name in ("project-heron.md", "project-lantern.md", "supplier-register.md"):
        shutil.copy(DEMO / name, folder / name)
    write_jsonl(folder / "notes.jsonl", RECORDS)
    return folder


@pytest.fixture()
def run(make_schema_url: Callable[[], str]) -> Callable[[Path], WriteReport]:
    """`run(folder)` ingests into a fresh schema with a fresh Dagster instance; `run.url`, `run.instance`."""
    url = make_schema_url()
    instance = dg.DagsterInstance.ephemeral()

    def ingest_folder(folder: Path) -> WriteReport:
        return ingest(folder, definitions=DEFINITIONS, instance=instance, database_url=url)

    ingest_folder.url = url  # type: ignore[attr-defined]
    ingest_folder.instance = instance  # type: ignore[attr-defined]
    return ingest_folder


def write_jsonl(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))


def query(url: str, statement: str, parameters: object = None) -> list[tuple]:
    with connect(url) as connection:
        return connection.execute(statement, parameters).fetchall()


def scalar(url: str, statement: str, parameters: object = None) -> object:
    return query(url, statement, parameters)[0][0]


def test_ingest_materializes_every_asset_and_running_again_changes_nothing(corpus: Path, run) -> None:
    first = run(corpus)

    chunks = scalar(run.url, "SELECT count(*) FROM chunk")
    assert first.partitions == [
        "corpus/notes.jsonl", "corpus/project-heron.md", "corpus/project-lantern.md", "corpus/supplier-register.md"
    ]
    assert first.counts("documents") == {"inserted": 5, "updated": 0, "deleted": 0, "unchanged": 0, "skipped": 0, "rows": 5}
    assert chunks > 5
    assert first.counts("chunks")["inserted"] == first.counts("chunks")["rows"] == chunks
    assert first.counts("chunk_embeddings")["inserted"] == chunks
    # The chunks step indexed every chunk it wrote; bm25_index finds none left to index.
    assert (first.counts("bm25_index")["inserted"], first.counts("bm25_index")["unchanged"]) == (0, chunks)
    assert first.checks == {"every_chunk_embedded": True, "bm25_statistics_match_chunks": True}
    # The scoped record's chunks and postings carry its scopes; the others are public.
    assert query(run.url, "SELECT DISTINCT scopes FROM chunk WHERE document_id = 'note-1'") == [(["team-a"],)]
    assert query(run.url, "SELECT DISTINCT p.scopes FROM bm25_posting p JOIN chunk c ON c.id = p.chunk_id WHERE c.document_id = 'note-1'") == [(["team-a"],)]
    assert scalar(run.url, "SELECT count(*) FROM chunk WHERE id <> document_id || '#' || position") == 0

    again = run(corpus)
    assert again.partitions == [] and again.assets == {}

    forced = materialize(definitions=DEFINITIONS, instance=run.instance, database_url=run.url)
    assert forced.counts("documents") == {"inserted": 0, "updated": 0, "deleted": 0, "unchanged": 5, "skipped": 0, "rows": 5}
    for asset in ("chunks", "chunk_embeddings", "bm25_index"):
        assert forced.counts(asset) | {"rows": chunks} == {"inserted": 0, "updated": 0, "deleted": 0, "unchanged": chunks, "skipped": 0, "rows": chunks}
    assert scalar(run.url, "SELECT count(*) FROM chunk") == chunks
    assert forced.checks == {"every_chunk_embedded": True, "bm25_statistics_match_chunks": True}


def test_a_changed_document_is_replaced_and_reindexed(corpus: Path, run) -> None:
    run(corpus)
    heron = corpus / "project-heron.md"
    heron.write_text(heron.read_text().replace("in Wakefield", "in Zyxquorum"))
    write_jsonl(corpus / "notes.jsonl", [RECORDS[0] | {"text": "Dock slots are now booked daily."}, RECORDS[1]])

    report = run(corpus)

    assert sorted(report.partitions) == ["corpus/notes.jsonl", "corpus/project-heron.md"]
    assert report.counts("documents") | {"rows": 0} == {"inserted": 0, "updated": 2, "deleted": 0, "unchanged": 1, "skipped": 0, "rows": 0}
    assert report.counts("chunks")["updated"] >= 2
    assert report.checks == {"every_chunk_embedded": True, "bm25_statistics_match_chunks": True}
    assert query(run.url, "SELECT document_id FROM bm25_posting p JOIN chunk c ON c.id = p.chunk_id WHERE term = 'zyxquorum'") != []
    assert query(run.url, "SELECT 1 FROM bm25_posting p JOIN chunk c ON c.id = p.chunk_id WHERE term = 'wakefield' AND c.document_id = 'corpus/project-heron.md'") == []
    assert query(run.url, "SELECT text FROM chunk WHERE document_id = 'note-1'") == [("Dock slots are now booked daily.",)]


def test_a_removed_document_is_retracted_its_chunks_deleted_and_its_facts_closed(corpus: Path, run) -> None:
    run(corpus)
    with connect(run.url) as connection:
        connection.execute("INSERT INTO entity_kind (name) VALUES ('project')")
        connection.execute(
            "INSERT INTO entity (id, name, kind, normalized_name) VALUES ('e-heron', 'Project Heron', 'project', 'project heron')"
        )
        connection.execute(
            "INSERT INTO fact (id, subject_id, predicate, object_value, statement, document_id) "
            "VALUES ('f-1', 'e-heron', 'status', 'active', 'Project Heron is active.', 'corpus/project-heron.md')"
        )
    (corpus / "project-heron.md").unlink()
    write_jsonl(corpus / "notes.jsonl", [RECORDS[1]])

    report = run(corpus)

    assert report.counts("documents")["deleted"] == 2
    retracted = query(run.url, "SELECT id FROM document WHERE retracted_at IS NOT NULL ORDER BY id")
    assert retracted == [("corpus/project-heron.md",), ("note-1",)]
    assert scalar(run.url, "SELECT count(*) FROM chunk WHERE document_id IN ('corpus/project-heron.md', 'note-1')") == 0
    assert scalar(run.url, "SELECT recorded_to IS NOT NULL FROM fact WHERE id = 'f-1'") is True
    assert report.checks["bm25_statistics_match_chunks"] is True

    shutil.copy(DEMO / "project-heron.md", corpus / "project-heron.md")
    restored = run(corpus)
    assert restored.counts("documents")["updated"] == 1
    assert scalar(run.url, "SELECT retracted_at FROM document WHERE id = 'corpus/project-heron.md'") is None
    assert scalar(run.url, "SELECT count(*) FROM chunk WHERE document_id = 'corpus/project-heron.md'") > 0


def test_bad_input_is_skipped_with_reasons_and_the_rest_lands(tmp_path: Path, run) -> None:
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nThis document is fine. It has two sentences.\n")
    (folder / "image.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (folder / "empty.txt").write_text("")
    (folder / "latin1.txt").write_bytes("Café in Zürich".encode("latin-1"))
    with (folder / "huge.md").open("wb") as handle:
        handle.write(b"All work and no play. " * 2_400_000)
    (folder / "records.jsonl").write_text('{"id": "ok", "text": "A fine record."}\n{"id": "broken", "text": \n')
    (folder / "slides.pdf").write_bytes(b"%PDF-1.7")

    report = run(folder)

    reasons = "\n".join(report.skipped)
    assert "image.md: binary file" in reasons
    assert "empty.txt: empty file" in reasons
    assert "latin1.txt: invalid UTF-8 at byte 3" in reasons
    assert "huge.md: 52,800,000 bytes is over pipeline.documents.max_bytes" in reasons
    assert "records.jsonl:2: invalid JSON" in reasons
    assert "slides.pdf: unsupported file type" in reasons
    assert query(run.url, "SELECT id FROM document ORDER BY id") == [("inbox/good.md",), ("ok",)]
    assert report.checks == {"every_chunk_embedded": True, "bm25_statistics_match_chunks": True}
    # A file nothing can be read of is refused before it becomes a partition.
    assert sorted(report.partitions) == ["inbox/good.md", "inbox/records.jsonl"]
    assert sorted(run.instance.get_dynamic_partitions("documents")) == ["inbox/good.md", "inbox/records.jsonl"]


def test_a_new_unreadable_file_starts_no_run(tmp_path: Path, run) -> None:
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nThis document is fine. It has two sentences.\n")
    assert run(folder).run_ids
    (folder / "empty.md").write_text("")
    (folder / "binary.md").write_bytes(b"\x00\x01")
    again = run(folder)
    assert again.run_ids == [] and again.partitions == []
    assert [line.rsplit("/", 1)[-1] for line in again.skipped] == ["binary.md: binary file (contains NUL bytes)", "empty.md: empty file"]


def test_a_failing_document_is_skipped_while_the_rest_of_its_batch_lands(corpus: Path, run) -> None:
    # A check constraint the second note violates stands in for any value PostgreSQL refuses.
    with connect(run.url) as connection:
        connection.execute("ALTER TABLE document ADD CONSTRAINT no_recalls CHECK (body NOT LIKE '%recalled%')")

    report = run(corpus)

    assert any("note-2" in line and "no_recalls" in line for line in report.skipped)
    assert report.counts("documents")["inserted"] == 4
    assert scalar(run.url, "SELECT count(*) FROM document") == 4


def test_each_partition_materialization_carries_its_own_source_figures(tmp_path: Path, run) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    shutil.copy(DEMO / "company-overview.md", folder / "company-overview.md")
    (folder / "tiny.md").write_text("# Tiny\n\nOne short sentence.\n")
    write_jsonl(folder / "notes.jsonl", RECORDS)

    report = run(folder)

    (ingest_run,) = report.run_ids
    assert len(report.partitions) == 3
    documents_of = {"mixed/company-overview.md": 1, "mixed/notes.jsonl": 2, "mixed/tiny.md": 1}
    for key, documents in documents_of.items():
        chunks = scalar(
            run.url,
            "SELECT count(*) FROM chunk JOIN document ON document.id = chunk.document_id WHERE source_key = %s",
            (key,),
        )
        figures = {asset: latest_partition_metadata(run.instance, asset, key, ingest_run) for asset in PER_DOCUMENT_ASSETS}
        assert {name: figures["documents"][name] for name in SOURCE_COUNTS} == {
            "inserted": documents, "updated": 0, "deleted": 0, "unchanged": 0, "skipped": 0,
        }
        assert (figures["chunks"]["inserted"], figures["chunk_embeddings"]["inserted"]) == (chunks, chunks)
        assert (figures["bm25_index"]["inserted"], figures["bm25_index"]["unchanged"]) == (0, chunks)
        # The run's totals stay on every partition's page, labelled as the run's, and only so.
        assert figures["documents"]["run_inserted"] == 4
        assert figures["chunks"]["run_inserted"] == report.counts("chunks")["inserted"] > chunks
        for values in figures.values():
            assert not RUN_ONLY & set(values) and {f"run_{name}" for name in RUN_ONLY} <= set(values)
    assert report.counts("documents") == {"inserted": 4, "updated": 0, "deleted": 0, "unchanged": 0, "skipped": 0, "rows": 4}


PER_DOCUMENT_ASSETS = ("documents", "chunks", "chunk_embeddings", "bm25_index")
# Figures of the whole run, never of one partition.
RUN_ONLY = {"rows", "seconds", "preview"}
SOURCE_COUNTS = ("inserted", "updated", "deleted", "unchanged", "skipped")


def latest_partition_metadata(instance: dg.DagsterInstance, asset: str, partition: str, run_id: str) -> dict[str, object]:
    """The metadata of the partition's latest materialization, which must be the given run's only one."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition]), limit=5
    ).records
    assert [record.run_id for record in records] == [run_id]
    return {name: getattr(value, "value", value) for name, value in records[0].asset_materialization.metadata.items()}
