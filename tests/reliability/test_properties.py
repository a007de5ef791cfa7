"""Property-based: generated lanes.yaml documents and questions never raise anything but LanegraphError.

Every generated settings file is loaded and, when it loads, compiled into the find statement;
every generated question goes through find against a planted database. The only acceptable
outcomes are success or a LanegraphError whose message is a single line.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.config import load_config
from tests import REPOSITORY
from pipelines.read.compiler import compile_find
from pipelines.read.find import find
from pipelines.resources.database import Database
from pipelines.errors import LanegraphError
from tests.reliability.tenancy import HashedEmbedder, hashed_embedding, plant_world

VALID = yaml.safe_load((REPOSITORY / "lanes.yaml").read_text())
SETTING_NAMES = sorted(VALID["settings"])
PROPERTY_SETTINGS = settings(max_examples=120, deadline=None)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(["'; DROP TABLE fact; --", "$1", "%s", ":query_vector", "../../etc/passwd", "/dev/zero"]),
)
values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=12,
)
# Limit expressions are a tiny language of their own: setting names, integers, + - * and parentheses.
limit_expressions = st.lists(
    st.one_of(st.sampled_from(SETTING_NAMES + ["nope", "__import__", "k.real"]),
              st.sampled_from(["+", "-", "*", "/", "**", "(", ")", "0", "-1", "999999999999", ";"])),
    min_size=1, max_size=7,
).map(" ".join)


def key_paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    paths = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, child in node.items():
            paths += key_paths(child, (*prefix, key))
    return paths


@st.composite
def mutated_lanes(draw: st.DrawFn) -> dict:
    """The shipped lanes.yaml with a few keys replaced, removed or added."""
    document = yaml.safe_load(yaml.safe_dump(VALID))
    paths = key_paths(document)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths))
        parent = document
        for key in path[:-1]:
            parent = parent.get(key) if isinstance(parent, dict) else None
        if not isinstance(parent, dict):
            continue
        action = draw(st.sampled_from(["replace", "delete", "add", "limit"]))
        if action == "replace":
            parent[path[-1]] = draw(values)
        elif action == "delete":
            parent.pop(path[-1], None)
        elif action == "add":
            parent[draw(st.text(min_size=1, max_size=12))] = draw(values)
        else:
            lane = draw(st.sampled_from(sorted(document.get("lanes") or {"facts": {}})))
            if isinstance(document.get("lanes"), dict) and isinstance(document["lanes"].get(lane), dict):
                document["lanes"][lane]["limit"] = draw(limit_expressions)
    return document


def _same_type_as(value: object) -> st.SearchStrategy:
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.integers(1, 8) | st.integers(0, 100) | st.integers(-(10**15), 10**15)
    if isinstance(value, float):
        return st.floats(0, 2) | st.floats(0, 2) | st.floats(allow_nan=True, allow_infinity=True)
    return st.text(max_size=20)


@st.composite
def well_typed_lanes(draw: st.DrawFn) -> dict:
    """The shipped lanes.yaml with values of the right types but any magnitude, and odd plans:
    these get past validation and reach the compiler and the database."""
    document = yaml.safe_load(yaml.safe_dump(VALID))
    for name in draw(st.lists(st.sampled_from(SETTING_NAMES), max_size=3)):
        document["settings"][name] = draw(_same_type_as(VALID["settings"][name]))
    plan = document["plan"]
    for toggle in ("profiles", "communities", "raptor", "neighbors", "fuzzy_mentions"):
        plan[toggle] = draw(st.booleans())
    plan["hops"] = draw(st.integers(0, 4) | st.integers(-1, 12))
    order = draw(st.permutations(list(VALID["lanes"])))
    plan["order"] = order
    if draw(st.integers(0, 9)) == 0:
        plan["order"].append(draw(st.sampled_from([order[0], "nope"])))
    for lane in draw(st.lists(st.sampled_from(sorted(VALID["lanes"])), max_size=2)):
        document["lanes"][lane]["limit"] = draw(limit_expressions)
    return document


def _dump(document: object) -> str:
    try:
        return yaml.safe_dump(document, allow_unicode=True)
    except yaml.YAMLError:
        return yaml.safe_dump(str(document))


class Outcomes:
    """How the generated inputs ended: success or a one-line LanegraphError, nothing else."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def run(self, action: Callable[[], object]) -> None:
        try:
            action()
        except LanegraphError as error:
            message = str(error)
            assert message and "\n" not in message, message
            self.counts["refused with one line"] += 1
        else:
            self.counts["succeeded"] += 1

    def report(self, label: str) -> None:
        total = sum(self.counts.values())
        parts = ", ".join(f"{count} {outcome}" for outcome, count in sorted(self.counts.items()))
        print(f"{label}: {total} generated inputs: {parts}, 0 uncaught exceptions")


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="lanegraph-properties-") as folder:
        yield Path(folder)


@pytest.fixture(scope="module")
def planted_database(make_database: Callable[[], Database], embedding_dimension: int) -> Database:
    database = make_database()
    with database.connection() as connection:
        plant_world(connection, np.random.default_rng(3), lambda t: hashed_embedding(t, embedding_dimension),
                    documents=12, entities=20, facts=40)
    return database


def load_and_compile(path: Path) -> None:
    compile_find(load_config(path))


def test_generated_settings_documents(scratch: Path) -> None:
    outcomes = Outcomes()
    path = scratch / "lanes.yaml"

    @PROPERTY_SETTINGS
    @given(document=st.one_of(mutated_lanes(), values))
    def load(document: object) -> None:
        path.write_text(_dump(document), encoding="utf-8", errors="surrogatepass")
        outcomes.run(lambda: load_and_compile(path))

    load()
    outcomes.report("generated lanes.yaml documents")


def test_generated_raw_bytes_as_settings(scratch: Path) -> None:
    outcomes = Outcomes()
    path = scratch / "raw.yaml"

    @PROPERTY_SETTINGS
    @given(raw=st.one_of(st.binary(max_size=400), st.text(max_size=400).map(lambda t: t.encode("utf-8", "surrogatepass"))))
    def load(raw: bytes) -> None:
        path.write_bytes(raw)
        outcomes.run(lambda: load_and_compile(path))

    load()
    outcomes.report("generated raw settings files")


def test_generated_plans_and_values_through_find(
    planted_database: Database, embedding_dimension: int, scratch: Path
) -> None:
    outcomes = Outcomes()
    path = scratch / "typed.yaml"
    embedder = HashedEmbedder(embedding_dimension)

    @settings(PROPERTY_SETTINGS, max_examples=60)
    @given(document=well_typed_lanes(), question=st.text(min_size=1, max_size=60))
    def answer(document: dict, question: str) -> None:
        path.write_text(_dump(document), encoding="utf-8")
        outcomes.run(
            lambda: find(planted_database, question, config=load_config(path), embedder=embedder, scopes=["acme"])
        )

    answer()
    outcomes.report("generated plans and values through find")


questions = st.one_of(
    st.text(st.characters(blacklist_categories=()), max_size=300),
    # A lone surrogate is what Python makes of an invalid UTF-8 byte on a command line.
    st.tuples(st.text(max_size=30), st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)).map("".join),
    st.text(max_size=6000),
    st.sampled_from(["'; DROP TABLE fact; --", "%s %(x)s $1 :query_vector", "\x1b[31mred\x1b[0m", "\u202e"]),
)


def test_generated_questions_through_find(planted_database: Database, embedding_dimension: int) -> None:
    outcomes = Outcomes()
    config = load_config()
    embedder = HashedEmbedder(embedding_dimension)

    @PROPERTY_SETTINGS
    @given(question=questions, scopes=st.one_of(st.none(), st.lists(st.text(max_size=8), max_size=3)),
           k=st.one_of(st.none(), st.integers(-3, 40)))
    def answer(question: str, scopes: list[str] | None, k: int | None) -> None:
        outcomes.run(
            lambda: find(planted_database, question, k=k, config=config, embedder=embedder, scopes=scopes)
        )

    answer()
    outcomes.report("generated questions through find")
