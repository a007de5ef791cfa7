"""A random multi-tenant world planted straight into every table, and a leak detector for outputs.

Every planted row owns one unique token ("zx" + six letters) that appears in its id and in each of
its text fields; text may also quote other rows' tokens (a fact statement names its entities). A
token seen in any output is legitimate only if some row containing it is visible to the caller, so
one scan of the output text catches a leak through any column, snippet or id, whatever its format.
"""

from __future__ import annotations

import re
import string
import zlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import psycopg

from pipelines.resources.embedder import EmbedderResource
from tests import ANALYZE_OWN_SCHEMA

TOKEN = re.compile(r"zx[a-z]{6}")
TENANTS = ("acme", "borealis", "cinder", "dunmore", "estuary", "fenwick")
LABELS = ("board", "hr", "legal")
WORDS = ["battery", "audit", "supplier", "drone", "airspace", "incident", "mentor", "cold", "chain", "warehouse", "contract", "budget", "schedule", "review", "pilot", "battery", "safety", "inspection", "freight", "harbour", "customer", "renewal"]
PREDICATES = ("leads", "supplies", "audits", "reports_to", "works_with")
KINDS = ("person", "organization", "project")

# Statements a caller might run to leave its confinement, with `{owner}` for the role that owns the
# tables. Each must fail, or leave the session confined to its own scopes or to nothing at all.
ESCAPES = [
    "RESET ROLE",
    "SET ROLE {owner}",
    "SET ROLE lanegraph_writer",
    "SET ROLE lanegraph_reader",
    "SET ROLE NONE",
    "SET SESSION AUTHORIZATION {owner}",
    "RESET SESSION AUTHORIZATION",
    "RESET ALL",
    "DISCARD ALL",
    "SELECT set_config('lanegraph.scopes', '{{a,b}}', false)",
    "SELECT set_config('lanegraph.scopes', '{{a,b}}', true)",
    "SET lanegraph.scopes = '{{b}}'",
    "SELECT set_config('lanegraph.scopes', '{{" + ",".join(TENANTS + LABELS) + "}}', false)",
    "RESET lanegraph.scopes_signature",
]


@dataclass
class World:
    """What was planted: each row's scopes, and which rows each token appears in."""

    rows: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict)
    token_rows: dict[str, list[frozenset[str]]] = field(default_factory=lambda: defaultdict(list))
    entity_names: list[str] = field(default_factory=list)
    entity_ids: list[str] = field(default_factory=list)
    titles: list[str] = field(default_factory=list)
    scope_sets: list[frozenset[str]] = field(default_factory=list)

    def record(self, table: str, row_id: str, scopes: frozenset[str], *texts: str) -> None:
        self.rows[(table, row_id)] = scopes
        for token in set(TOKEN.findall(" ".join((row_id, *texts)))):
            self.token_rows[token].append(scopes)

    def expected_counts(self, caller: frozenset[str]) -> dict[str, int]:
        counts: dict[str, int] = defaultdict(int)
        for (table, _), scopes in self.rows.items():
            counts[table] += scopes <= caller
        return counts


@dataclass
class LeakCount:
    """Tallies across many outputs: what was looked at and what should not have been there."""

    queries: int = 0
    rows: int = 0
    tokens: int = 0
    leaked_tokens: int = 0
    leaked_rows: int = 0
    examples: list[str] = field(default_factory=list)

    def check_row(self, world: World, caller: frozenset[str], values: Iterable[object], where: str) -> None:
        """One output row: every token in any of its values must belong to a row the caller may read."""
        self.rows += 1
        leaked = False
        for token in TOKEN.findall(" ".join(str(value) for value in values if value is not None)):
            self.tokens += 1
            owners = world.token_rows.get(token)
            if owners is None or not any(scopes <= caller for scopes in owners):
                self.leaked_tokens += 1
                leaked = True
        if leaked:
            self.leaked_rows += 1
            if len(self.examples) < 5:
                self.examples.append(f"{where}: caller {sorted(caller)} got {list(values)!r}"[:300])

    def check_scopes(self, caller: frozenset[str], row_scopes: Sequence[str], where: str) -> None:
        """A row that reports its own scopes must report a subset of the caller's."""
        if not frozenset(row_scopes) <= caller:
            self.leaked_rows += 1
            if len(self.examples) < 5:
                self.examples.append(f"{where}: caller {sorted(caller)} saw a row scoped {sorted(row_scopes)}")

    def summary(self, label: str) -> str:
        return (
            f"{label}: {self.queries} queries, {self.rows} rows checked, {self.tokens} tokens checked, "
            f"{self.leaked_rows} rows outside the caller's scopes, {self.leaked_tokens} leaked tokens"
        )


class _Planter:
    def __init__(self, rng: np.random.Generator, world: World) -> None:
        self.rng = rng
        self.world = world
        self.used: set[str] = set()

    def token(self) -> str:
        while True:
            token = "zx" + "".join(self.rng.choice(list(string.ascii_lowercase), 6))
            if token not in self.used:
                self.used.add(token)
                return token

    def scopes(self) -> frozenset[str]:
        """Mostly one tenant, sometimes a tenant plus a label, sometimes public or cross-tenant."""
        roll = self.rng.random()
        tenant = str(self.rng.choice(TENANTS))
        if roll < 0.1:
            chosen = frozenset()
        elif roll < 0.6:
            chosen = frozenset({tenant})
        elif roll < 0.9:
            chosen = frozenset({tenant, str(self.rng.choice(LABELS))})
        else:
            chosen = frozenset({tenant, str(self.rng.choice(TENANTS))})
        self.world.scope_sets.append(chosen)
        return chosen

    def words(self, count: int) -> str:
        return " ".join(self.rng.choice(WORDS, count))


def random_caller(rng: np.random.Generator, world: World) -> frozenset[str]:
    """A caller holding a planted scope set exactly, or a random mix of tenants and labels."""
    if rng.random() < 0.5 and world.scope_sets:
        return world.scope_sets[int(rng.integers(len(world.scope_sets)))]
    universe = TENANTS + LABELS
    return frozenset(str(s) for s in rng.choice(universe, int(rng.integers(0, 4)), replace=False))


def random_question(rng: np.random.Generator, world: World) -> str:
    """Common words plus names and titles of rows from any tenant, visible to the caller or not."""
    parts = list(rng.choice(WORDS, int(rng.integers(1, 5))))
    for _ in range(int(rng.integers(0, 3))):
        parts.append(str(rng.choice(world.entity_names)))
    if rng.random() < 0.4:
        parts.append(str(rng.choice(world.titles)))
    rng.shuffle(parts)
    return "What about " + " ".join(parts) + "?"


def hashed_embedding(texts: Sequence[str], dimension: int) -> np.ndarray:
    """Unit vectors from summed per-word random vectors: texts sharing words lie near each other.

    Deterministic and instant, where the bundled model needs many seconds per few hundred texts;
    the leak test needs neighbourhoods, not meaning.
    """
    vectors = np.zeros((len(texts), dimension), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in _tokens_of(text) or ["empty"]:
            seed = zlib.crc32(word.encode())
            vectors[row] += np.random.default_rng(seed).standard_normal(dimension).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


class HashedEmbedder:
    """`hashed_embedding` as an Embedder, so find embeds questions the way the world was planted."""

    model_id = "test-hashed-words"

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return hashed_embedding(texts, self.dimension)

    def embed_questions(self, questions: Sequence[str]) -> np.ndarray:
        return hashed_embedding(questions, self.dimension)


class HashedEmbedderResource(EmbedderResource):
    """The word-hash embedder for Dagster runs: instant and deterministic."""

    def get_embedder(self) -> HashedEmbedder:  # type: ignore[override]
        return HashedEmbedder(self.dimension)


def _tokens_of(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def plant_world(
    connection: psycopg.Connection,
    rng: np.random.Generator,
    embed,
    *,
    documents: int = 40,
    entities: int = 60,
    facts: int = 150,
) -> World:
    """Plant documents, chunks, BM25 statistics, entities, mentions, facts, session items,
    communities, profiles and RAPTOR nodes, each with random scopes; `embed(texts)` gives vectors."""
    world = World()
    planter = _Planter(rng, world)
    cursor = connection.cursor()

    cursor.executemany(
        "INSERT INTO entity_kind (name, description, embedding) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
        [(kind, f"{kind} kind", vector) for kind, vector in zip(KINDS, embed([f"{k} kind" for k in KINDS]))],
    )
    for kind in KINDS:
        world.record("entity_kind", kind, frozenset())

    chunk_rows = []
    for _ in range(documents):
        token = planter.token()
        document_id, scopes = f"doc-{token}", planter.scopes()
        title = f"{planter.words(1).title()} {token}"
        body_parts = []
        for position in range(int(rng.integers(1, 4))):
            chunk_token = planter.token()
            text = f"{planter.words(6)} {chunk_token} {token} {planter.words(6)}"
            chunk_rows.append((f"ch-{chunk_token}", document_id, position, text, scopes))
            body_parts.append(text)
        body = "\n\n".join(body_parts)
        cursor.execute(
            "INSERT INTO document (id, title, uri, body, content_hash, observed_at, scopes) "
            "VALUES (%s, %s, %s, %s, md5(%s), now() - interval '3 days', %s)",
            (document_id, title, f"file:///{token}.md", body, body, sorted(scopes)),
        )
        world.record("document", document_id, scopes, title, body, f"file:///{token}.md")
        world.titles.append(title)

    chunk_vectors = embed([text for _, _, _, text, _ in chunk_rows])
    cursor.executemany(
        "INSERT INTO chunk (id, document_id, position, text, token_count, content_hash, embedding, scopes) "
        "VALUES (%s, %s, %s, %s, %s, md5(%s), %s, %s)",
        [
            (chunk_id, document_id, position, text, len(text.split()), text, vector, sorted(scopes))
            for (chunk_id, document_id, position, text, scopes), vector in zip(chunk_rows, chunk_vectors)
        ],
    )
    postings, lengths = [], []
    document_frequency: dict[tuple[str, frozenset[str]], int] = defaultdict(int)
    corpus: dict[frozenset[str], list[int]] = defaultdict(lambda: [0, 0])
    for chunk_id, document_id, _, text, scopes in chunk_rows:
        world.record("chunk", chunk_id, scopes, text, document_id)
        terms = _tokens_of(text)
        counts: dict[str, int] = defaultdict(int)
        for term in terms:
            counts[term] += 1
        for term, count in counts.items():
            postings.append((term, chunk_id, count, len(terms), sorted(scopes)))
            world.record("bm25_posting", f"{term}|{chunk_id}", scopes, term)
            document_frequency[term, scopes] += 1
        lengths.append((chunk_id, len(terms), sorted(scopes)))
        world.record("bm25_chunk_length", chunk_id, scopes)
        corpus[scopes][0] += 1
        corpus[scopes][1] += len(terms)
    cursor.executemany(
        "INSERT INTO bm25_posting (term, chunk_id, term_frequency, chunk_length, scopes) VALUES (%s, %s, %s, %s, %s)",
        postings,
    )
    cursor.executemany("INSERT INTO bm25_chunk_length (chunk_id, length, scopes) VALUES (%s, %s, %s)", lengths)
    # Statistics are kept per scope set of the chunks they count, as the write side keeps them.
    cursor.executemany(
        "INSERT INTO bm25_term (term, scopes, document_frequency) VALUES (%s, %s, %s)",
        [(term, sorted(scopes), frequency) for (term, scopes), frequency in document_frequency.items()],
    )
    for term, scopes in document_frequency:
        world.record("bm25_term", f"term:{len(world.rows)}", scopes, term)
    cursor.executemany(
        "INSERT INTO bm25_corpus (scopes, chunk_count, total_length) VALUES (%s, %s, %s)",
        [(sorted(scopes), count, total) for scopes, (count, total) in corpus.items()],
    )
    for scopes in corpus:
        world.record("bm25_corpus", f"corpus:{len(world.rows)}", scopes)

    entity_rows = []
    for _ in range(entities):
        token = planter.token()
        name = token.capitalize()
        entity_rows.append((f"ent-{token}", name, str(rng.choice(KINDS)), planter.scopes()))
    entity_vectors = embed([name for _, name, _, _ in entity_rows])
    cursor.executemany(
        "INSERT INTO entity (id, name, kind, normalized_name, aliases, embedding, scopes) "
        "VALUES (%s, %s, %s, lower(%s), ARRAY[lower(%s) || ' alias'], %s, %s)",
        [
            (entity_id, name, kind, name, name, vector, sorted(scopes))
            for (entity_id, name, kind, scopes), vector in zip(entity_rows, entity_vectors)
        ],
    )
    for entity_id, name, _, scopes in entity_rows:
        world.record("entity", entity_id, scopes, name, f"{name.lower()} alias")
        # 0044's trigger gives the alias a row of its own, under the entity's scopes.
        world.record("entity_alias", f"{entity_id}|alias", scopes, f"{name.lower()} alias")
        world.entity_names.append(name)
        world.entity_ids.append(entity_id)

    mention_rows = []
    for entity_id, name, kind, _ in entity_rows:
        for index in rng.choice(len(chunk_rows), 2, replace=False):
            chunk_id, document_id, _, _, scopes = chunk_rows[int(index)]
            mention_rows.append((entity_id, chunk_id, document_id, name, kind, sorted(scopes)))
            world.record("entity_mention", f"{entity_id}|{chunk_id}|{document_id}", scopes, name)
    cursor.executemany(
        "INSERT INTO entity_mention (entity_id, chunk_id, document_id, name, kind, mentions, scopes) "
        "VALUES (%s, %s, %s, %s, %s, 1, %s)",
        mention_rows,
    )

    fact_rows = []
    for index in range(facts):
        token = planter.token()
        subject_id, subject_name, _, _ = entity_rows[int(rng.integers(len(entity_rows)))]
        chunk_id, document_id, _, _, chunk_scopes = chunk_rows[int(rng.integers(len(chunk_rows)))]
        scopes = chunk_scopes if rng.random() < 0.7 else planter.scopes()
        predicate = str(rng.choice(PREDICATES))
        if index % 5 == 0:
            object_id, value = None, f"state {token}"
            statement = f"{subject_name} is {value}."
        else:
            object_id, object_name, _, _ = entity_rows[int(rng.integers(len(entity_rows)))]
            value, statement = None, f"{subject_name} {predicate} {object_name} ({token})."
        window = rng.random()
        valid_from = None if window < 0.6 else "2020-01-01"
        valid_to = "2021-01-01" if window > 0.9 else None
        fact_rows.append(
            (f"fact-{token}", subject_id, predicate, object_id, value, statement,
             chunk_id, document_id, valid_from, valid_to, sorted(scopes))
        )
        # A row's references are part of what it shows: a visible fact names its entities and chunk.
        world.record(
            "fact", f"fact-{token}", scopes, statement, value or "", subject_id, object_id or "", chunk_id, document_id
        )
    fact_vectors = embed([row[5] for row in fact_rows])
    cursor.executemany(
        "INSERT INTO fact (id, subject_id, predicate, object_id, object_value, statement, source_chunk_id, "
        "document_id, valid_from, valid_to, embedding, scopes) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        [row[:10] + (vector, row[10]) for row, vector in zip(fact_rows, fact_vectors)],
    )

    session_rows = []
    for _ in range(documents // 2):
        token = planter.token()
        session_rows.append((f"mem-{token}", f"Remember {planter.words(4)} {token}.", planter.scopes()))
    cursor.executemany(
        "INSERT INTO session_item (id, text, embedding, scopes) VALUES (%s, %s, %s, %s)",
        [(i, t, v, sorted(s)) for (i, t, s), v in zip(session_rows, embed([t for _, t, _ in session_rows]))],
    )
    for session_id, text, scopes in session_rows:
        world.record("session_item", session_id, scopes, text)

    community_rows = []
    for _ in range(max(3, entities // 6)):
        token = planter.token()
        members = [entity_rows[int(i)] for i in rng.choice(len(entity_rows), 4, replace=False)]
        label = f"Community {token}"
        summary = f"{token}: " + ", ".join(name for _, name, _, _ in members)
        scopes = frozenset().union(*(s for _, _, _, s in members)) if rng.random() < 0.7 else planter.scopes()
        community_rows.append((f"com-{token}", label, summary, [m[0] for m in members], scopes))
    cursor.executemany(
        "INSERT INTO community (id, level, label, summary, members, embedding, scopes) "
        "VALUES (%s, 0, %s, %s, %s, %s, %s)",
        [
            (i, label, summary, members, v, sorted(s))
            for (i, label, summary, members, s), v in zip(
                community_rows, embed([f"{label} {summary}" for _, label, summary, _, _ in community_rows])
            )
        ],
    )
    for community_id, label, summary, members, scopes in community_rows:
        world.record("community", community_id, scopes, label, summary, " ".join(members))

    profile_rows = []
    for entity_id, name, _, scopes in entity_rows[: entities // 2]:
        token = planter.token()
        profile_rows.append((entity_id, f"{name} profile {token}: {planter.words(5)}.", scopes))
    cursor.executemany(
        "INSERT INTO profile (entity_id, summary, fact_count, embedding, scopes) VALUES (%s, %s, 3, %s, %s)",
        [(i, t, v, sorted(s)) for (i, t, s), v in zip(profile_rows, embed([t for _, t, _ in profile_rows]))],
    )
    for entity_id, summary, scopes in profile_rows:
        world.record("profile", entity_id, scopes, summary)

    raptor_rows = []
    for level in (1, 2):
        for _ in range(6 if level == 1 else 2):
            token = planter.token()
            children = [chunk_rows[int(i)] for i in rng.choice(len(chunk_rows), 3, replace=False)]
            scopes = frozenset().union(*(c[4] for c in children))
            summary = f"Summary {token} of {planter.words(4)}."
            raptor_rows.append((f"rap-{token}", level, summary, [c[0] for c in children], scopes))
    cursor.executemany(
        "INSERT INTO raptor_node (id, level, summary, children, embedding, scopes) VALUES (%s, %s, %s, %s, %s, %s)",
        [
            (i, level, s, children, v, sorted(scopes))
            for (i, level, s, children, scopes), v in zip(raptor_rows, embed([r[2] for r in raptor_rows]))
        ],
    )
    for raptor_id, _, summary, children, scopes in raptor_rows:
        world.record("raptor_node", raptor_id, scopes, summary, " ".join(children))
    cursor.execute(ANALYZE_OWN_SCHEMA)
    return world
