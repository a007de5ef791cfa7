"""Small charts for materialization metadata, as markdown with an inline PNG (the Dagster UI shows it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pipelines.charts import figure_png, markdown_image, subplots


def sizes_per_level_chart(title: str, sizes: Mapping[int, Sequence[int]], y_label: str) -> str:
    """One bar per cluster, grouped and coloured by level, as a markdown image."""
    figure, axes = subplots(figsize=(7, 3), dpi=100)
    position = 0
    for level in sorted(sizes):
        values = list(sizes[level])
        # A level's bars as one filled outline: a patch per bar made the chart of a corpus's
        # 2,600 communities cost over a second of every graph refresh.
        axes.stairs(values, range(position, position + len(values) + 1), fill=True, label=f"level {level}")
        position += len(values) + 1
    axes.set_title(title)
    axes.set_ylabel(y_label)
    axes.set_xticks([])
    if sizes:
        axes.legend(loc="upper right", fontsize="small")
    return markdown_image(figure_png(figure), title)
