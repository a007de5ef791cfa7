"""Working memory: loading session items with embeddings, and promoting the old ones to documents."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest

from pipelines.orchestration.partitions import DOCUMENT_PARTITIONS
from pipelines.defs.write import document_assets, extraction_assets
from pipelines.defs.write.session_assets import hourly_session_promotion, promote_session, session_items
from pipelines.resources.database import Database, DatabaseResource
from pipelines.resources.embedder import EmbedderResource
from pipelines.errors import InputError
from pipelines.write.extraction.extractor import ExtractorResource
from pipelines.write.session.session import load_session_items, mark_promoted, read_session_items

OLD = {"id": "wm-old", "text": "Tomasz Wielgus moved the Heron review to Friday 2025-07-11.",
       "created_at": "2025-07-01T08:15:00Z", "scopes": ["team-a"]}


PROMOTION = dg.Definitions(
    assets=[
        document_assets.documents, document_assets.chunks, document_assets.chunk_embeddings,
        document_assets.bm25_index, extraction_assets.entities_and_facts, session_items,
    ],
    jobs=[promote_session],
    resources={"database": DatabaseResource(), "embedder": EmbedderResource(), "extractor": ExtractorResource()},
)


def promotion_tick(instance: dg.DagsterInstance, resources: dict) -> dg.ExecuteInProcessResult | dg.SkipReason:
    """One tick of the promotion sensor and, as the daemon would, the run it requests."""
    with dg.build_sensor_context(instance=instance, resources=resources) as context:
        tick = hourly_session_promotion(context)
    if isinstance(tick, dg.SkipReason):
        return tick
    for request in tick.dynamic_partitions_requests:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    (run,) = tick.run_requests
    return PROMOTION.resolve_job_def(promote_session.name).execute_in_process(
        instance=instance, tags=run.tags, run_config=run.run_config, resources=resources
    )


def write_items(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def test_promotion_moves_an_old_item_to_a_document_and_leaves_a_young_one(
    tmp_path: Path, make_schema_url: Callable[[], str]
) -> None:
    url = make_schema_url()
    young = {"id": "wm-young", "text": "The user prefers metric units.",
             "created_at": (datetime.now(UTC) - timedelta(minutes=5)).isoformat()}
    items = write_items(tmp_path / "items.jsonl", [OLD, young])
    embedder = EmbedderResource()
    with Database(url) as database:
        loaded = load_session_items(items, database=database, embedder=embedder.get_embedder())
        again = load_session_items(items, database=database, embedder=embedder.get_embedder())
    assert (loaded.inserted, again.inserted, again.unchanged) == (2, 0, 2)

    instance = dg.DagsterInstance.ephemeral()
    resources = {
        "database": DatabaseResource(database_url=url),
        "embedder": embedder,
        "extractor": ExtractorResource(provider="rules"),
    }
    first = promotion_tick(instance, resources)
    assert first.success
    assert isinstance(promotion_tick(instance, resources), dg.SkipReason)
    second = dg.materialize([session_items], resources=resources, instance=instance)

    with Database(url) as database, database.connection() as connection:
        state = dict(connection.execute("SELECT id, document_id FROM session_item WHERE promoted_at IS NOT NULL"))
        unpromoted = [row[0] for row in connection.execute("SELECT id FROM session_item WHERE promoted_at IS NULL")]
        document = connection.execute(
            "SELECT title, body, scopes, observed_at FROM document WHERE id = 'session:wm-old'"
        ).fetchone()
        chunks = connection.execute(
            "SELECT count(*), count(embedding) FROM chunk WHERE document_id = 'session:wm-old'"
        ).fetchone()
        facts = connection.execute("SELECT count(*) FROM fact WHERE document_id = 'session:wm-old'").fetchone()[0]
    assert state == {"wm-old": "session:wm-old"}
    assert unpromoted == ["wm-young"]
    assert document[1] == OLD["text"] and document[2] == ["team-a"]
    assert document[3] == datetime(2025, 7, 1, 8, 15, tzinfo=UTC)
    assert chunks[0] >= 1 and chunks[0] == chunks[1]
    assert facts >= 1
    [key] = instance.get_dynamic_partitions(DOCUMENT_PARTITIONS)
    assert key.startswith("session/wm-old")
    def metadata(result):  # type: ignore[no-untyped-def]
        return result.asset_materializations_for_node("session_items")[0].metadata

    assert metadata(first)["inserted"].value == 1 and metadata(second)["inserted"].value == 0
    assert instance.get_latest_materialization_event(dg.AssetKey("chunks")) is not None


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": "a", "text": ""}', r"items.jsonl:1: text: "),
        ('{"id": "a", "text": "x", "when": "now"}', r"items.jsonl:1: when: "),
        ('{"id": "a", "text": "x", "created_at": "yesterday"}', r"items.jsonl:1: created_at: "),
        ("not json", r"items.jsonl:1: "),
    ],
)
def test_a_bad_session_item_line_is_named(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(InputError, match=message):
        read_session_items(path)


def test_an_item_stays_in_working_memory_until_its_document_is_found(database: Database, embedding_dimension: int) -> None:
    """Promotion must not leave a gap: while the item's document has a chunk awaiting its embedding,
    the sources lane shows none of it, so the working_memory lane keeps the item."""
    with database.connection() as connection:
        connection.execute(
            "INSERT INTO session_item (id, text, created_at) VALUES ('wm-old', %s, now() - interval '10 days')",
            (OLD["text"],),
        )
        connection.execute(
            "INSERT INTO document (id, title, body, content_hash) VALUES ('session:wm-old', 'Noted', %s, 'h')",
            (OLD["text"],),
        )
    assert mark_promoted(database, older_than_hours=1).promoted == []
    with database.connection() as connection:
        connection.execute(
            "INSERT INTO chunk (id, document_id, position, text, token_count, content_hash) "
            "VALUES ('session:wm-old#0', 'session:wm-old', 0, %s, 9, 'h')",
            (OLD["text"],),
        )
    assert mark_promoted(database, older_than_hours=1).promoted == []
    with database.connection() as connection:
        connection.execute("UPDATE chunk SET embedding = array_fill(0.1, ARRAY[%s])::vector", (embedding_dimension,))
    assert mark_promoted(database, older_than_hours=1).promoted == ["wm-old"]
