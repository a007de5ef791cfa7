"""Recall@k per arm as a PNG, embeddable in Dagster's markdown metadata."""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping

import matplotlib

matplotlib.use("Agg")  # no display: the figure only ever becomes PNG bytes
import matplotlib.pyplot as plt  # noqa: E402


def recall_cutoffs(report: Mapping[str, object]) -> list[int]:
    arms: Mapping[str, Mapping[str, float]] = report["arms"]  # type: ignore[assignment]
    first = next(iter(arms.values()), {})
    return sorted(int(key.split("@")[1]) for key in first if key.startswith("recall@"))


def recall_plot_png(report: Mapping[str, object]) -> bytes:
    arms: Mapping[str, Mapping[str, float]] = report["arms"]  # type: ignore[assignment]
    cutoffs = recall_cutoffs(report)
    names = list(arms)
    # Grouped bars, not lines: a dozen ablation arms sit close together and lines would hide each other.
    width = 0.8 / max(len(cutoffs), 1)
    figure, axes = plt.subplots(figsize=(max(6.0, 0.75 * len(names) + 2), 4.2), dpi=100)
    try:
        for offset, k in enumerate(cutoffs):
            positions = [index + (offset - (len(cutoffs) - 1) / 2) * width for index in range(len(names))]
            axes.bar(positions, [arms[name][f"recall@{k}"] for name in names], width, label=f"Recall@{k}")
        axes.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize="small")
        axes.set_ylabel("Recall@k")
        axes.set_ylim(0, 1.05)
        axes.set_title(f"{report['dataset']}: Recall@k per arm ({report['queries']} questions)")
        axes.grid(axis="y", alpha=0.3)
        axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
        figure.tight_layout()
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png")
    finally:
        plt.close(figure)
    return buffer.getvalue()


def recall_plot_markdown(report: Mapping[str, object]) -> str:
    encoded = base64.b64encode(recall_plot_png(report)).decode("ascii")
    return f"![Recall@k per arm](data:image/png;base64,{encoded})"
