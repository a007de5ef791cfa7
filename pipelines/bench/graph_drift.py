"""How far incremental graph refreshes drift from a full rebuild, on a dataset (the demo's by default).

The corpus but its last `held_out` passages is built in full into a fresh schema; the held-out
passages are then ingested one at a time, each a source of its own, each refreshing the graph
incrementally (as every ingest into a built graph does). What that leaves is compared with what a
full rebuild of the same tables makes (`rebuild: full`, as the weekly schedule runs it): level 0
community membership by adjusted Rand index and by pairwise agreement (the share of entity pairs
both put together or both apart; an entity in no community is alone), the share of the full
rebuild's communities, profiles and RAPTOR nodes the incremental state holds byte for byte, and
every retrieval arm's figures on the dataset's questions, evaluated on both states. The lanes that
read the summaries (profiles, communities, RAPTOR roots) are off in the default plan, so the
evaluation adds an arm `summary-lanes` with them on; the other arms read no summary and show
only that nothing else moved.

    python -m pipelines.bench.graph_drift [DATASET] [--held-out 5]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import cast

import dagster as dg
import yaml
from sklearn.metrics import adjusted_rand_score, rand_score

from pipelines.bench.loader import drop_schema, recreate_schema
from pipelines.config import default_config_path, load_config
from pipelines.definitions import defs
from pipelines.defs.write.graph_schedule import REBUILDING_ASSETS, full_rebuild_config
from pipelines.evaluation.build import build_fingerprint, store_fingerprint
from pipelines.evaluation.dataset import load_dataset, write_corpus_jsonl
from pipelines.evaluation.demo_dataset import write_demo_dataset
from pipelines.evaluation.run import EvaluationRequest, evaluate
from pipelines.orchestration.runner import ingest, materialize
from pipelines.resources.database import connect, resolve_database_url

DRIFT_DATABASE = "lanegraph_bench_drift"
LEVEL_0_MEMBERS = "SELECT id, members FROM community WHERE level = 0"
# Each table's rows as (key, digest of every column): equal digests are byte-identical rows.
ROW_DIGESTS = {
    "communities": "SELECT id, md5(c::text) FROM community c",
    "entity_profiles": "SELECT entity_id, md5(p::text) FROM profile p",
    "raptor_levels": "SELECT id, md5(r::text) FROM raptor_node r",
}


def state(url: str) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """Each entity's level 0 community, and each table's row digests."""
    with connect(url) as connection:
        community_of = {
            member: community_id
            for community_id, members in connection.execute(LEVEL_0_MEMBERS)
            for member in members
        }
        digests: dict[str, dict[str, str]] = {
            asset: dict(connection.execute(query).fetchall()) for asset, query in ROW_DIGESTS.items()
        }
    return community_of, digests


def membership_agreement(first: dict[str, str], second: dict[str, str]) -> dict[str, float]:
    """Adjusted Rand index and pairwise agreement of two partitions, over the entities either covers."""
    entities = sorted(first.keys() | second.keys())
    # An entity one side leaves out of every community is a community of its own there.
    labels = [[side.get(entity, f"alone:{entity}") for entity in entities] for side in (first, second)]
    return {
        "entities": len(entities),
        "adjusted_rand_index": round(float(adjusted_rand_score(*labels)), 4),
        "pairwise_agreement": round(float(rand_score(*labels)), 4),
    }


def summary_lanes_settings(path: Path) -> Path:
    """A copy of the settings file with every lane that reads a summary switched on."""
    settings = yaml.safe_load(default_config_path().read_text())
    settings["plan"].update(profiles=True, communities=True, raptor=True)
    path.write_text(yaml.safe_dump(settings, sort_keys=False))
    return path


def measure_drift(dataset_path: Path, held_out: int, progress: Callable[[str], None] = lambda _: None) -> dict:
    warnings.filterwarnings("ignore", module="dagster")
    dataset = load_dataset(dataset_path)
    settings = load_config().pipeline
    server_url = resolve_database_url(DRIFT_DATABASE)
    schema = f"bench_drift_{uuid.uuid4().hex[:8]}"
    url = recreate_schema(server_url, schema, settings.embedding.dimension)
    instance = dg.DagsterInstance.ephemeral()
    built, added = dataset.passages[:-held_out], dataset.passages[-held_out:]
    refreshes = []
    try:
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(scratch) / dataset.name
            folder.mkdir()
            write_corpus_jsonl(built, folder / "corpus.jsonl")
            progress(f"building {len(built)} passages of {dataset.name} in full")
            ingest(folder, definitions=defs, instance=instance, database_url=url)
            for number, passage in enumerate(added, start=1):
                write_corpus_jsonl([passage], folder / f"added-{number}.jsonl")
                progress(f"ingesting passage {passage.id} ({number}/{held_out}), graph refreshed incrementally")
                started = time.perf_counter()
                report = ingest(folder, definitions=defs, instance=instance, database_url=url)
                refreshes.append({
                    "passage": passage.id,
                    "seconds": round(time.perf_counter() - started, 2),
                    **{name: {key: report.assets[name][key] for key in ("mode", "recomputed", "kept", "removed")}
                       for name in REBUILDING_ASSETS},
                })
            # The evaluation reuses a database whose fingerprint says it holds this corpus's build.
            store_fingerprint(url, build_fingerprint(dataset, defs, settings))
            request = EvaluationRequest(
                dataset=dataset_path, definitions=defs, database_url=url,
                lanes_files=(summary_lanes_settings(Path(scratch) / "summary-lanes.yaml"),),
            )
            incremental_state = state(url)
            progress("evaluating the incrementally refreshed graph")
            incremental = evaluate(request, progress)
            progress("rebuilding communities, profiles and the RAPTOR tree in full")
            materialize(
                list(REBUILDING_ASSETS), definitions=defs, instance=instance, database_url=url,
                run_config=full_rebuild_config(),
            )
            full_state = state(url)
            progress("evaluating the fully rebuilt graph")
            full = evaluate(request, progress)
    finally:
        drop_schema(server_url, schema)
    identical = {
        asset: round(
            sum(1 for key, digest in rows.items() if incremental_state[1][asset].get(key) == digest) / max(1, len(rows)), 4
        )
        for asset, rows in full_state[1].items()
    }
    arms: dict[str, dict[str, dict[str, float]]] = {}
    incremental_arms = cast(dict[str, dict[str, float]], incremental["arms"])
    for arm, figures in cast(dict[str, dict[str, float]], full["arms"]).items():
        then = incremental_arms[arm]
        arms[arm] = {
            metric: {"incremental": then[metric], "full": value, "difference": round(then[metric] - value, 4)}
            for metric, value in figures.items() if not metric.endswith("_ms")
        }
    return {
        "dataset": dataset.name,
        "passages_built": len(built),
        "passages_added_one_by_one": held_out,
        "refreshes": refreshes,
        "level_0_membership": membership_agreement(incremental_state[0], full_state[0]),
        "rows_identical_to_full_rebuild": identical,
        "rows": {asset: {"incremental": len(incremental_state[1][asset]), "full": len(rows)}
                 for asset, rows in full_state[1].items()},
        "queries": full["queries"],
        "retrieval": arms,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", type=Path, nargs="?", help="dataset JSON (default: the demo's)")
    parser.add_argument("--held-out", type=int, default=5, help="passages added one at a time after the build")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        dataset = arguments.dataset or write_demo_dataset(Path(scratch) / "demo.json")
        result = measure_drift(dataset, arguments.held_out, progress=print)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
