"""Retrieval metrics and the paired significance test, computed by ranx over passage-id rankings."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np
from ranx import Qrels, Run, evaluate
from scipy.stats import permutation_test

from pipelines.evaluation.dataset import Question

NDCG_CUTOFF = 10
PERMUTATIONS = 10_000
RANDOM_SEED = 42

# ranx's recall kernel casts its counters with a harmless uint64 → int64 warning on every call.
warnings.filterwarnings("ignore", message=".*unsafe cast from uint64 to int64.*")


def metric_names(cutoffs: Sequence[int]) -> list[str]:
    """Report keys, which are also ranx metric names: recall@k per cutoff, nDCG@10 and MRR."""
    return [f"recall@{k}" for k in cutoffs] + [f"ndcg@{NDCG_CUTOFF}", "mrr"]


def ranking_depth(cutoffs: Sequence[int]) -> int:
    """How many passages every arm must rank for every metric to be computed in full."""
    return max(*cutoffs, NDCG_CUTOFF)


def _qrels(questions: Sequence[Question]) -> Qrels:
    return Qrels({question.id: {gold: 1 for gold in question.gold_ids} for question in questions})


def _scored(ranking: Sequence[str]) -> dict[str, float]:
    """Strictly decreasing scores in rank order, because ranx orders a run by score."""
    if len(set(ranking)) != len(ranking):
        raise ValueError("a passage ranking lists a passage twice; rank each passage once")
    return {passage: float(len(ranking) - position) for position, passage in enumerate(ranking)}


def _run(rankings: Mapping[str, Sequence[str]], questions: Sequence[Question]) -> Run:
    return Run({question.id: _scored(rankings.get(question.id, ())) for question in questions})


def per_question_scores(
    questions: Sequence[Question], rankings: Mapping[str, Sequence[str]], metrics: Sequence[str]
) -> dict[str, np.ndarray]:
    """Each metric's score per question, in the order of `questions` (a missing ranking scores 0)."""
    if not any(rankings.get(question.id) for question in questions):
        # ranx cannot hold a run without a single passage; such an arm scores 0 everywhere.
        return {metric: np.zeros(len(questions)) for metric in metrics}
    run = _run(rankings, questions)
    evaluate(_qrels(questions), run, list(metrics), return_mean=False, save_results_in_run=True)
    return {metric: np.array([float(run.scores[metric][q.id]) for q in questions]) for metric in metrics}


def _mean_difference(treatment: np.ndarray, control: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(treatment - control, axis=axis)


def paired_p_value(control: np.ndarray, treatment: np.ndarray) -> float:
    """Two-sided p of the paired randomization test: could swapping the two arms per question explain the gap?

    scipy rather than ranx's numba test, whose parallel threads make the p-value vary between runs.
    One question cannot tell the arms apart: either labelling is as likely, so p is 1.
    """
    if len(control) < 2:
        return 1.0
    result = permutation_test(
        (treatment, control),
        _mean_difference,
        permutation_type="samples",
        vectorized=True,
        n_resamples=PERMUTATIONS,
        alternative="two-sided",
        rng=np.random.default_rng(RANDOM_SEED),
    )
    return float(result.pvalue)


def latency_percentiles(latencies_ms: Sequence[float]) -> dict[str, float]:
    if not latencies_ms:
        return {"p50_ms": 0.0, "p95_ms": 0.0}
    p50, p95 = np.percentile(np.asarray(latencies_ms, dtype=np.float64), [50, 95])
    return {"p50_ms": round(float(p50), 2), "p95_ms": round(float(p95), 2)}
