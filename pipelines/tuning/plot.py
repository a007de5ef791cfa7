"""A study's plots as PNG, embeddable in Dagster's markdown metadata: the objective per trial with
the best so far, and each searched value's importance (Optuna's fANOVA estimate)."""

from __future__ import annotations

import optuna

from pipelines.charts import figure_png, subplots
from pipelines.tuning.study import FINISHED, feasible


def history_png(study: optuna.Study, objective: str) -> bytes:
    trials = study.get_trials(deepcopy=False, states=FINISHED)
    numbers = [trial.number for trial in trials]
    values = [float(trial.value or 0.0) for trial in trials]
    best: list[float] = []
    running: float | None = None
    for trial, value in zip(trials, values, strict=True):
        if feasible(trial):
            running = value if running is None else max(running, value)
        best.append(float("nan") if running is None else running)
    figure, axes = subplots(figsize=(7.0, 4.0), dpi=100)
    axes.scatter(numbers, values, s=14, alpha=0.6, label="trial")
    axes.step(numbers, best, where="post", color="tab:red", label="best so far")
    axes.set_xlabel("trial")
    axes.set_ylabel(objective)
    axes.set_title(f"{study.study_name}: {objective} on train per trial")
    axes.grid(alpha=0.3)
    axes.legend(fontsize="small", loc="lower right")
    return figure_png(figure)


def importance_png(study: optuna.Study) -> bytes | None:
    """None while the study cannot estimate importances (fewer than two finished trials, or
    nothing varied)."""
    try:
        importances = optuna.importance.get_param_importances(study)
    except (RuntimeError, ValueError):
        return None
    if not importances:
        return None
    names = list(importances)[::-1]
    figure, axes = subplots(figsize=(7.0, 0.35 * len(names) + 1.2), dpi=100)
    axes.barh(names, [importances[name] for name in names])
    axes.set_xlabel("importance (fANOVA)")
    axes.set_title("How much each searched value moved the objective")
    axes.grid(axis="x", alpha=0.3)
    return figure_png(figure)
