"""Every tenant gets a graph of its own: four tenants' documents name the same projects, people and
companies, the real write side (documents to RAPTOR) builds the graph once, and each confined caller
must read profiles, communities and RAPTOR overviews built only from documents it may read.

Each tenant's documents also name people and words of its own, spelled with a private token ("zx" +
six letters); the public and the two-tenant documents have tokens too. A token in any row a caller
gets is legitimate only if a document the caller may read contains it, so one scan of every output
catches content from another tenant's documents, whatever lane or column it came through.
LANEGRAPH_TENANT_FINDS sets how many random confined finds the leak check runs (default 1,000).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg
import numpy as np
import pytest

from pipelines.config import load_config
from pipelines.read.find import find
from pipelines.resources.database import Database
from pipelines.orchestration.runner import ingest
from tests.plans import every_lane_on
from tests.reliability.tenancy import HashedEmbedder
from tests.reliability.write_worker import definitions

pytestmark = pytest.mark.slow

TENANTS = ("acme", "borealis", "cinder", "dunmore")
TOKEN = re.compile(r"zx[a-z]{6}")
FINDS = int(os.environ.get("LANEGRAPH_TENANT_FINDS", "1000"))
SEED = 20261202
# The scope sets `random_caller` can draw: one tenant, none, or two or three of the tenants and `legal`.
CALLER_SCOPE_SETS = len(TENANTS) + 1 + math.comb(len(TENANTS) + 1, 2) + math.comb(len(TENANTS) + 1, 3)
SHARED_NAMES = ("Project Heron", "Mara Okafor", "Corvane Logistics", "Rotterdam Yard", "Project Lantern")
# Sentences the rule extractor turns into facts between the shared names and a tenant's own people.
DOCUMENT_SENTENCES = (
    "Mara Okafor leads Project Heron. {person} works with Mara Okafor on the {word} budget. "
    "Corvane Logistics supplies Project Heron. {person} audits Corvane Logistics every quarter.",
    "Project Heron is based in Rotterdam Yard. {person} manages Rotterdam Yard. "
    "The {word} review covered Project Heron and Project Lantern. Mara Okafor mentors {person}.",
    "Project Lantern depends on Corvane Logistics. {person} leads Project Lantern. "
    "Corvane Logistics works with Rotterdam Yard on the {word} schedule.",
    "{person} reports to Mara Okafor. Project Lantern is paused. "
    "The {word} incident at Rotterdam Yard was logged by {person}.",
)


@dataclass
class TenantCorpus:
    """Which scope sets may read each token, and the database the write side built."""

    database: Database
    token_readers: dict[str, list[frozenset[str]]] = field(default_factory=dict)

    def foreign_tokens(self, caller: frozenset[str], texts: list[object]) -> tuple[int, list[str]]:
        """(tokens seen, tokens no document readable by `caller` contains)."""
        found = TOKEN.findall(" ".join(str(text) for text in texts if text is not None).lower())
        return len(found), [t for t in found if not any(scopes <= caller for scopes in self.token_readers[t])]


def write_corpus(folder: Path, rng: np.random.Generator) -> dict[str, list[frozenset[str]]]:
    """Four tenants' documents (plus public and two-tenant ones) sharing every entity name."""
    folder.mkdir(parents=True)
    readers: dict[str, list[frozenset[str]]] = {}

    def token() -> str:
        while (candidate := "zx" + "".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), 6))) in readers:
            pass
        return candidate

    owners = [frozenset({tenant}) for tenant in TENANTS] + [frozenset(), frozenset({"acme", "borealis"})]
    records = []
    for scopes in owners:
        for number, sentences in enumerate(DOCUMENT_SENTENCES):
            person, word = token(), token()
            readers[person] = readers[word] = [scopes]
            name = "-".join(sorted(scopes)) or "public"
            records.append({
                "id": f"{name}-{number}", "title": f"{SHARED_NAMES[number]} notes {word}",
                "text": sentences.format(person=f"Ilse {person.capitalize()}", word=word),
                "scopes": sorted(scopes),
            })
    (folder / "tenants.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    return readers


@pytest.fixture(scope="module")
def tenants(make_schema_url: Callable[[], str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[TenantCorpus]:
    url = make_schema_url()
    folder = tmp_path_factory.mktemp("tenants") / "corpus"
    readers = write_corpus(folder, np.random.default_rng(SEED))
    report = ingest(folder, definitions=definitions(), instance=dg.DagsterInstance.ephemeral(), database_url=url)
    assert all(report.checks.values()), report.checks
    # Room to keep a confined connection open for every scope set `random_caller` draws, so most of
    # the random finds run on a kept connection (the path where one caller's state could reach the
    # next) rather than spending the test opening connections and preparing find again.
    with Database(url, max_size=CALLER_SCOPE_SETS) as database:
        yield TenantCorpus(database, readers)


# Each graph row with the documents it was built from, read as the caller (row security applies to
# the sources as well, so a source the caller may not read is missing from `sources`).
GRAPH_ROWS = {
    "profile": """
        SELECT p.entity_id, p.summary, p.scopes,
               (SELECT array_agg(DISTINCT m.document_id) FROM entity_mention m WHERE m.entity_id = p.entity_id),
               (SELECT array_agg(DISTINCT m.document_id) FROM entity_mention m WHERE m.entity_id = p.entity_id)
        FROM profile p""",
    "community": """
        SELECT c.id, c.label || ' ' || c.summary, c.scopes,
               (SELECT array_agg(DISTINCT m.document_id) FROM entity_mention m WHERE m.entity_id = ANY(c.members)),
               NULL
        FROM community c""",
    "raptor_node": """
        WITH RECURSIVE below (root, node) AS (
            SELECT r.id, r.id FROM raptor_node r
            UNION ALL
            SELECT below.root, child FROM below JOIN raptor_node r ON r.id = below.node, unnest(r.children) child
        )
        SELECT r.id, r.summary, r.scopes,
               (SELECT array_agg(DISTINCT c.document_id) FROM below JOIN chunk c ON c.id = below.node
                WHERE below.root = r.id),
               NULL
        FROM raptor_node r""",
}


def document_scopes(corpus: TenantCorpus) -> dict[str, frozenset[str]]:
    with corpus.database.connection() as connection:
        return {i: frozenset(s) for i, s in connection.execute("SELECT id, scopes FROM document")}


@pytest.mark.parametrize("tenant", TENANTS)
def test_a_single_tenant_reads_profiles_communities_and_overviews_of_its_own_documents(
    tenants: TenantCorpus, tenant: str
) -> None:
    caller = frozenset({tenant})
    owned = document_scopes(tenants)
    readable = {document for document, scopes in owned.items() if scopes <= caller}
    with tenants.database.connection([tenant]) as connection:
        for table, query in GRAPH_ROWS.items():
            rows = connection.execute(query).fetchall()
            own = [row for row in rows if row[2] == [tenant]]
            assert own, f"{tenant} reads no {table} rows built from its documents"
            for row_id, text, scopes, sources, _ in rows:
                assert frozenset(scopes) <= caller, (table, row_id, scopes)
                assert sources and set(sources) <= readable, (table, row_id, sources)
                # Built from its own documents, not from a mix it happens to be able to read.
                assert len({owned[source] for source in sources}) == 1, (table, row_id, sources)
                assert tenants.foreign_tokens(caller, [text])[1] == [], (table, row_id, text)
    result = find(
        tenants.database, "Who leads Project Heron, and what does Mara Okafor manage?",
        config=every_lane_on(load_config()), embedder=HashedEmbedder(load_config().pipeline.embedding.dimension), scopes=[tenant],
    )
    lanes = {candidate.lane for candidate in result.candidates}
    assert {"profile", "communities", "overview"} <= lanes, lanes
    for candidate in result.candidates:
        assert tenants.foreign_tokens(caller, list(candidate.__dict__.values()))[1] == [], candidate


def test_the_owner_reads_every_tenants_graph(tenants: TenantCorpus) -> None:
    owned = document_scopes(tenants)
    with tenants.database.connection() as connection:
        for table, query in GRAPH_ROWS.items():
            built_for = {frozenset(scopes) for _, _, scopes, _, _ in connection.execute(query)}
            assert built_for == set(owned.values()), (table, built_for)


def random_caller(rng: np.random.Generator) -> frozenset[str]:
    """One tenant (60%), no scope (10%), or two or three of the tenants and `legal` (30%)."""
    roll = rng.random()
    if roll < 0.6:
        return frozenset({str(rng.choice(TENANTS))})
    if roll < 0.7:
        return frozenset()
    return frozenset(str(s) for s in rng.choice(TENANTS + ("legal",), int(rng.integers(2, 4)), replace=False))


def test_random_confined_finds_return_nothing_from_unreadable_documents(tenants: TenantCorpus) -> None:
    rng = np.random.default_rng(SEED + 1)
    config = every_lane_on(load_config())
    embedder = HashedEmbedder(config.pipeline.embedding.dimension)
    tokens = sorted(tenants.token_readers)
    rows = checked = leaked = 0
    graph_rows: dict[str, int] = {"profile": 0, "communities": 0, "overview": 0}
    examples = []
    for _ in range(FINDS):
        caller = random_caller(rng)
        words = list(rng.choice(SHARED_NAMES, int(rng.integers(1, 3)), replace=False))
        words += [str(t) for t in rng.choice(tokens, int(rng.integers(0, 3)))]
        question = "What about " + " and ".join(words) + "?"
        result = find(tenants.database, question, config=config, embedder=embedder, scopes=sorted(caller))
        for candidate in result.candidates:
            rows += 1
            graph_rows[candidate.lane] = graph_rows.get(candidate.lane, 0) + 1
            seen, foreign = tenants.foreign_tokens(caller, list(candidate.__dict__.values()))
            checked += seen
            outside = not frozenset(candidate.scopes) <= caller
            if foreign or outside:
                leaked += 1
                if len(examples) < 5:
                    examples.append(f"{sorted(caller)} {question!r}: {candidate.lane} {foreign} {candidate.scopes}")
    print(
        f"tenant graphs: {FINDS} confined finds, {rows} rows ({', '.join(f'{k} {v}' for k, v in sorted(graph_rows.items()))}), "
        f"{checked} private tokens checked, {leaked} rows from unreadable documents"
    )
    assert leaked == 0, examples
    assert min(graph_rows[lane] for lane in ("profile", "communities", "overview")) > 0, graph_rows
