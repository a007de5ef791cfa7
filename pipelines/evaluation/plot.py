"""Recall@k per arm as a PNG, embeddable in Dagster's markdown metadata."""

from __future__ import annotations

from collections.abc import Mapping

from pipelines.charts import figure_png, markdown_image, subplots


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
    figure, axes = subplots(figsize=(max(6.0, 0.75 * len(names) + 2), 4.2), dpi=100)
    for offset, k in enumerate(cutoffs):
        positions = [index + (offset - (len(cutoffs) - 1) / 2) * width for index in range(len(names))]
        axes.bar(positions, [arms[name][f"recall@{k}"] for name in names], width, label=f"Recall@{k}")
    axes.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize="small")
    axes.set_ylabel("Recall@k")
    axes.set_ylim(0, 1.05)
    axes.set_title(f"{report['dataset']}: Recall@k per arm ({report['queries']} questions)")
    axes.grid(axis="y", alpha=0.3)
    axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return figure_png(figure)


def recall_plot_markdown(report: Mapping[str, object]) -> str:
    return markdown_image(recall_plot_png(report), "Recall@k per arm")
