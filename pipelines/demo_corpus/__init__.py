"""Lanegraph's own demo corpus, shipped inside the package."""

from pathlib import Path


def demo_corpus_path() -> Path:
    """Folder holding documents/, session_items.jsonl and questions.yaml."""
    return Path(__file__).parent
