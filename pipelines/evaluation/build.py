"""The evaluation's own database, built once per corpus and reused while the corpus stays the same.

A dataset gets the database `lanegraph_eval_<name>` on the embedded server, or the schema of that
name on DATABASE_URL's server (an external role may not be allowed to create databases). Its assets
are built by the write side's runner (`pipelines.orchestration.runner.ingest`) from the corpus written as
JSONL, under a throwaway Dagster instance. A fingerprint of the corpus and the `pipeline` settings is
stored with them: a later run whose fingerprint matches skips the build, so comparing retrieval
settings (lanes.yaml's retrieval sections, extra `--lanes` files) never rebuilds, while a changed
corpus, write setting or set of assets rebuilds from an empty database.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import psycopg
from psycopg import sql

from pipelines.config import PipelineSettings, data_dir, load_config
from pipelines.evaluation.dataset import Dataset, corpus_fingerprint, database_suffix, write_corpus_jsonl
from pipelines.resources.database import connect, prepare_database, resolve_database_url
from pipelines.resources.embedded_postgres import EmbeddedPostgres
from pipelines.errors import InputError
from pipelines.write.progress import ProgressListener, StepProgress, listening
from pipelines.orchestration.runner import ingest

EVAL_DATABASE_PREFIX = "lanegraph_eval_"
FINGERPRINT_KEY = "eval_corpus_fingerprint"
Progress = Callable[[str], None]
READ_FINGERPRINT = "SELECT value FROM lanegraph_setting WHERE key = %(key)s"
WRITE_FINGERPRINT = """
INSERT INTO lanegraph_setting (key, value) VALUES (%(key)s, %(value)s)
ON CONFLICT (key) DO UPDATE SET value = excluded.value
"""


def corpus_path(dataset: Dataset) -> Path:
    """Where the corpus JSONL is written for the runner; its folder names the partition
    (`<dataset>/corpus.jsonl`), so runs are told apart by dataset."""
    return data_dir() / "eval" / database_suffix(dataset.name) / "corpus.jsonl"


def eval_database_name(dataset_name: str) -> str:
    return EVAL_DATABASE_PREFIX + database_suffix(dataset_name)


def eval_database_url(dataset_name: str) -> str:
    """The dataset's own database (embedded) or schema (DATABASE_URL), created when missing."""
    name = eval_database_name(dataset_name)
    external = os.environ.get("DATABASE_URL", "").strip()
    if not external:
        return resolve_database_url(name)
    with connect(external, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(name)))
    # Extensions live in public; keep it on the path after the evaluation's schema.
    return psycopg.conninfo.make_conninfo(external, options=f"-c search_path={name},public")


def stored_fingerprint(url: str) -> str | None:
    with connect(url) as connection:
        row = connection.execute(READ_FINGERPRINT, {"key": FINGERPRINT_KEY}).fetchone()
    return row[0] if row else None


def store_fingerprint(url: str, fingerprint: str) -> None:
    with connect(url) as connection:
        connection.execute(WRITE_FINGERPRINT, {"key": FINGERPRINT_KEY, "value": fingerprint})


def reset_eval_database(dataset_name: str) -> None:
    """Drop the dataset's database (or schema) so the next build starts empty."""
    name = eval_database_name(dataset_name)
    external = os.environ.get("DATABASE_URL", "").strip()
    server = external or EmbeddedPostgres(data_dir()).start()
    with connect(server, autocommit=True) as connection:
        if external:
            connection.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))
        else:
            connection.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _forward_logged_lines(progress: Progress) -> ProgressListener:
    """The steps' paced lines (the ones their run log gets): a build runs for many minutes, and its
    progress goes to a terminal and to the retrieval_eval asset's run log alike."""
    def listener(step: StepProgress) -> None:
        if step.logged:
            progress(f"  {step.line()}")

    return listener


def _ingest(url: str, corpus: Path, definitions: dg.Definitions, progress: Progress) -> None:
    # A throwaway Dagster instance: the evaluation's partitions and runs belong to its own
    # database and must not show up in the asset history of the user's instance.
    with dg.DagsterInstance.ephemeral() as instance, listening(_forward_logged_lines(progress)):
        ingest(corpus, definitions=definitions, instance=instance, database_url=url)


def write_side(definitions: dg.Definitions, pipeline_settings: str) -> str:
    """What a build depends on besides the corpus: the write side's assets read the default settings
    file, and a release that adds an asset (a table the lanes read) needs a build as much as a
    changed setting does."""
    assets = sorted(key.to_user_string() for key in definitions.resolve_asset_graph().get_all_asset_keys())
    return pipeline_settings + "\0" + ",".join(assets)


def build_fingerprint(dataset: Dataset, definitions: dg.Definitions, pipeline: PipelineSettings) -> str:
    """What a database holding this dataset's build records, so an evaluation can reuse it."""
    return corpus_fingerprint(dataset.passages, write_side(definitions, pipeline.model_dump_json()))


def ensure_built(
    dataset: Dataset,
    definitions: dg.Definitions,
    progress: Progress,
    database_url: str | None = None,
    *,
    rebuild: bool = False,
) -> str:
    """The URL of a database holding every asset built over the dataset's corpus.

    Without `database_url` that is the dataset's own database: reused when its fingerprint matches,
    dropped and rebuilt from empty when the corpus or the write settings changed (the runner's
    incremental path follows file contents, not settings) or when `rebuild` asks for it (after an
    upgrade that changes what an existing asset writes, which the fingerprint cannot see). A given `database_url` must
    be empty or hold this very build."""
    pipeline = load_config().pipeline
    fingerprint = build_fingerprint(dataset, definitions, pipeline)
    dimension = pipeline.embedding.dimension
    url = database_url or eval_database_url(dataset.name)
    prepare_database(url, dimension)
    stored = stored_fingerprint(url)
    if stored == fingerprint and not rebuild:
        progress(f"reusing the {dataset.name} build ({len(dataset.passages)} passages, fingerprint {fingerprint[:12]})")
        return url
    if stored is not None:
        if database_url:
            raise InputError(
                f"{database_url}: already holds a build (of this or another corpus); an evaluation "
                "only builds into an empty database it is given, or into its own"
            )
        progress(
            f"rebuilding the {dataset.name} database from empty"
            + ("" if rebuild else ": the corpus, the write settings or the assets changed")
        )
        reset_eval_database(dataset.name)
        url = eval_database_url(dataset.name)
        prepare_database(url, dimension)
    progress(f"building every asset over {len(dataset.passages)} {dataset.name} passages")
    corpus = corpus_path(dataset)
    corpus.parent.mkdir(parents=True, exist_ok=True)
    write_corpus_jsonl(dataset.passages, corpus)
    _ingest(url, corpus, definitions, progress)
    store_fingerprint(url, fingerprint)
    return url
