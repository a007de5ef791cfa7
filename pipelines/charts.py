"""Charts for materialization metadata: a matplotlib figure as PNG bytes, and PNG bytes as a
markdown image with the PNG inline (the Dagster UI shows it). Every chart of the project is drawn
on a figure from `subplots` here, so none opens a display."""

from __future__ import annotations

import base64
import io
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display: a figure only ever becomes PNG bytes
from matplotlib import pyplot  # noqa: E402  (the backend must be chosen before pyplot loads)
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402


def subplots(**options: Any) -> tuple[Figure, Axes]:
    """A figure with one set of axes (pyplot.subplots' options: figsize, dpi, ...)."""
    return pyplot.subplots(**options)


def figure_png(figure: Figure) -> bytes:
    """The figure laid out and saved as PNG; the figure is closed either way."""
    try:
        figure.tight_layout()
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png")
    finally:
        pyplot.close(figure)
    return buffer.getvalue()


def markdown_image(png: bytes, title: str) -> str:
    return f"![{title}](data:image/png;base64,{base64.b64encode(png).decode('ascii')})"
