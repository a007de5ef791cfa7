"""A small benchmark generated from the shipped demo corpus, for evaluating without a dataset file.

Passages are the demo documents (id = file name without .md, title = the `# Title` line); questions
are the demo questions whose expectations name documents, with those documents as gold, and their
answer phrase when they have one. Questions answered only by session items or summaries name no
document and are left out.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from pipelines.demo_corpus import demo_corpus_path

DEMO_DATASET_NAME = "demo"
_NAMED_DOCUMENT = re.compile(r"\b([a-z0-9][a-z0-9-]*)\.md\b")


def _passage(path: Path) -> dict[str, str]:
    heading, _, body = path.read_text(encoding="utf-8").partition("\n")
    return {"id": path.stem, "title": heading.removeprefix("# ").strip(), "text": body.strip()}


def demo_dataset() -> dict[str, object]:
    """The demo corpus and its document-grounded questions, in the benchmark dataset format."""
    root = demo_corpus_path()
    corpus = [_passage(path) for path in sorted((root / "documents").glob("*.md"))]
    known = {passage["id"] for passage in corpus}
    queries = []
    for number, entry in enumerate(yaml.safe_load((root / "questions.yaml").read_text(encoding="utf-8"))):
        named = [match for line in entry["expects"] for match in _NAMED_DOCUMENT.findall(line)]
        gold = [name for name in dict.fromkeys(named) if name in known]
        if gold:
            queries.append(
                {
                    "id": f"demo-{number:02d}",
                    "text": entry["question"],
                    "gold_ids": gold,
                    "answers": [entry["answer"]] if "answer" in entry else [],
                    "meta": {"split": "dev"},
                }
            )
    return {"name": DEMO_DATASET_NAME, "corpus": corpus, "queries": queries}


def write_demo_dataset(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(demo_dataset(), indent=1, ensure_ascii=False), encoding="utf-8")
    return path
