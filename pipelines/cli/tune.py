"""`lanegraph tune --dataset PATH`: search retrieval settings on the train split, judge them on dev.

An Optuna study (seeded TPE) over the space file's settings and plan toggles, kept in the dataset's
evaluation database, so a stopped run resumes where it stopped. Each trial reuses the dataset's
build and the prepared find statement of its plan shape. The best trial is then run on dev beside
the current lanes.yaml under the paired randomization test; `--write PATH` writes the tuned
lanes.yaml only when dev improves significantly, and says why not otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pipelines.cli import COMMAND_HELP
from pipelines.cli.options import add_dataset_options, add_lanes_option, positive
from pipelines.config import default_config_path
from pipelines.errors import InputError
from pipelines.tuning.run import DEFAULT_TRIALS, TuningOutcome, TuningRequest, default_space_path, tune
from pipelines.tuning.tables import results_paths, write_results
from pipelines.tuning.lanes_file import write_tuned_lanes


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "tune",
        help=COMMAND_HELP["tune"],
        description=(
            "Search the settings and plan toggles a space file declares with Optuna (seeded TPE) on the "
            "dataset's train questions, reusing the build `lanegraph eval` makes; the study lives in that "
            "database and resumes after a stop. The best trial is judged on dev beside the current settings."
        ),
    )
    add_dataset_options(
        parser,
        dataset_help="dataset JSON (corpus + queries, some marked train)",
        queries_help="tune on the first N train questions only",
    )
    parser.add_argument(
        "--trials", type=positive(int, "whole number"), default=DEFAULT_TRIALS, metavar="N",
        help=f"finished trials the study should reach, counting earlier runs' (default {DEFAULT_TRIALS})",
    )
    parser.add_argument("--timeout", type=positive(float, "number of seconds"), metavar="S", help="start no trial after S seconds")
    parser.add_argument("--space", type=Path, metavar="FILE", help="search space YAML (default: ./tuning.yaml, else the shipped space)")
    add_lanes_option(parser)
    parser.add_argument("--write", type=Path, metavar="PATH", help="write the tuned lanes.yaml here, if dev improves significantly")
    parser.add_argument("--results", type=Path, metavar="PATH", help="write trials and per-question results as PATH-trials/-questions (.csv or .parquet)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the summary as JSON to OUT")
    parser.set_defaults(handler=run)


def _print_summary(outcome: TuningOutcome) -> None:
    print(f"study {outcome.study} on {outcome.dataset}: objective {outcome.objective} over {outcome.train_questions} train questions")
    print(
        f"trials: {outcome.trials_run} run now ({outcome.trials_finished} finished in the study) in {outcome.seconds:.0f} s, "
        f"{outcome.trials_per_minute:.1f} trials/min"
    )
    print(
        f"statements: {outcome.compiled_statements} compiled, {outcome.prepared_statements} prepared on the server, "
        f"for {outcome.plan_shapes} plan shape(s)"
    )
    if outcome.best_number is None or outcome.comparison is None:
        print("no trial met the constraints: nothing to judge on dev")
        return
    current = f" (current settings: {outcome.current_value:.4f})" if outcome.current_value is not None else ""
    print(f"best trial {outcome.best_number}: train {outcome.objective} {outcome.best_value:.4f}{current}")
    for name, value in {**outcome.best_settings, **{f"plan.{k}": v for k, v in outcome.best_plan.items()}}.items():
        print(f"  {name}: {value}")
    print(outcome.comparison.verdict)


def run(arguments: argparse.Namespace) -> int:
    for path in (arguments.dataset, arguments.space, arguments.lanes):
        if path is not None and not path.is_file():
            raise InputError(f"{path}: no such file")
    if arguments.results is not None:
        results_paths(arguments.results)  # a wrong suffix fails before the study, not after it
    from pipelines.definitions import defs

    config_path = arguments.lanes or default_config_path()
    request = TuningRequest(
        dataset=arguments.dataset,
        definitions=defs,
        trials=arguments.trials,
        timeout_seconds=arguments.timeout,
        space_path=arguments.space or default_space_path(),
        config_path=config_path,
        queries=arguments.queries,
    )
    outcome = tune(request, progress=lambda message: print(message, file=sys.stderr, flush=True))
    _print_summary(outcome)
    if arguments.results:
        for path in write_results(arguments.results, {"trials": outcome.trials, "questions": outcome.questions}):
            print(f"results written to {path}", file=sys.stderr)
    if arguments.json:
        arguments.json.write_text(json.dumps(outcome.summary(), indent=2) + "\n")
        print(f"summary written to {arguments.json}", file=sys.stderr)
    if arguments.write:
        if outcome.comparison is None or not outcome.comparison.improved:
            reason = outcome.comparison.verdict if outcome.comparison else "no trial met the constraints"
            print(f"lanegraph tune: not writing {arguments.write}: {reason}", file=sys.stderr)
            return 1
        write_tuned_lanes(config_path, arguments.write, outcome.best_settings, outcome.best_plan)
        print(f"tuned settings written to {arguments.write} (the rest of {config_path} as it was)", file=sys.stderr)
    return 0
