"""`lanegraph demo`: the main job on the shipped demo corpus, end to end on the embedded database.

Ingest the corpus (every per-document and graph-wide asset, as Dagster runs that show in the UI),
load the working-memory items, materialize the session, read-side and evaluation assets, then
answer the demo questions with the find statement.
"""

from __future__ import annotations

import argparse

import yaml

from pipelines.cli import COMMAND_HELP
from pipelines.cli.find import render, terminal_width
from pipelines.cli.ingest import print_report, progress_on_stderr, quiet_dagster
from pipelines.demo_corpus import demo_corpus_path
from pipelines.read.find import find, quoting_invalid_facts
from pipelines.resources.database import open_database
from pipelines.resources.embedder import EmbedderResource

DEMO_LAST_ASSETS = ("session_items", "find_statement", "retrieval_eval")
# Assets the demo leaves to the user: tuning needs labelled train questions, which the demo's
# generated benchmark (dev questions only) does not have.
NEEDS_YOUR_QUESTIONS = ("retrieval_tuning",)
# The demo's working-memory items are dated 2025, older than any promotion age: promoted, they would
# leave the working_memory lane the demo shows.
KEEP_WORKING_MEMORY = {"ops": {"session_items": {"config": {"promote_after_hours": 1_000_000.0}}}}


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("demo", help=COMMAND_HELP["demo"])
    parser.add_argument("--questions", type=int, default=4, metavar="N", help="how many demo questions to answer")
    parser.add_argument("--lines", type=int, default=3, metavar="N", help="evidence lines to show per lane and answer")
    parser.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    quiet_dagster()
    from pipelines.config import load_config
    from pipelines.definitions import LOCATION, defs
    from pipelines.orchestration.runner import ingest, materialize
    from pipelines.write.session.session import load_session_items

    corpus = demo_corpus_path()
    print(f"Ingesting the demo corpus ({corpus / 'documents'}) ...")
    with progress_on_stderr():
        report = ingest(corpus / "documents", definitions=defs, location=LOCATION)
    status = print_report(report, as_json=False)
    if not report.assets:
        print("every asset is up to date with the corpus")

    config = load_config()
    embedder = EmbedderResource.from_settings(config.pipeline.embedding).get_embedder()
    questions = yaml.safe_load((corpus / "questions.yaml").read_text())[: arguments.questions]
    with open_database() as database:
        loaded = load_session_items(corpus / "session_items.jsonl", database=database, embedder=embedder)
        print(f"working memory: {loaded.inserted} new, {loaded.updated} updated, {loaded.unchanged} unchanged items")
    # The assets no document run reaches, so that the UI shows every asset materialized.
    print("Materializing the session, the find statement and its evaluation ...")
    with progress_on_stderr():
        status = max(status, print_report(materialize(DEMO_LAST_ASSETS, definitions=defs, location=LOCATION, run_config=KEEP_WORKING_MEMORY), as_json=False))
    with open_database() as database:
        for entry in questions:
            result = find(database, entry["question"], config=config, embedder=embedder)
            print(f"\nQ: {entry['question']}")
            invalid = quoting_invalid_facts(database, result.evidence)
            print(render(result, per_lane=arguments.lines, invalid=invalid, width=terminal_width()))
    print(f"\nNot materialized: {', '.join(NEEDS_YOUR_QUESTIONS)} (it tunes lanes.yaml on your own labelled questions: `lanegraph tune --dataset PATH`).")
    print("Next: `lanegraph find \"your question\"`, or `lanegraph ui` to browse the assets in Dagster.")
    return status
