"""A synthetic corpus with the statistics that make retrieval cost what it costs in production.

Uniform random vectors would flatter HNSW (no dense neighbourhoods to wade through) and uniform
random words would flatter BM25 (no long posting lists). So the corpus is built the way real text
clusters: topics are centroids on the unit sphere; a document sits near its topic, its chunks near
the document, a fact near the chunk it was read from, an entity near its topic, a profile near its
entity, a community and a RAPTOR node at the mean of their members. Chunk text draws common words
from a Zipf law (long posting lists, as for real mid-frequency words), topical words from the
topic's own vocabulary (so lexical and dense neighbourhoods agree) and entity names from a name
vocabulary (so BM25, title matching and named mentions all hit). Sizes of every table are
proportional to the chunk count. The words are pseudo-words of consonant-vowel syllables, so no
stop-word list or stemmer mistakes one for English.

Everything here is pure generation (numpy, strings, row tuples); `pipelines.bench.loader` writes the
rows. They bypass the write-side assets on purpose (the benchmark measures reading, and a million
chunks through the embedder and the extractor would take hours); only the BM25 statistics are
computed by the write side's own SQL, from the same indexed text its asset would index.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np

from pipelines.write.documents.chunking import indexed_text

# Proportions, per chunk, in line with what extraction yields on encyclopedic passages.
CHUNKS_PER_DOCUMENT = 8
ENTITIES_PER_CHUNK = 0.4
FACTS_PER_CHUNK = 1.5
CHUNKS_PER_TOPIC = 400
MINIMUM_TOPICS = 8
SESSION_ITEMS_PER_CHUNK = 0.01
MINIMUM_SESSION_ITEMS = 20
PROMOTED_SESSION_SHARE = 0.2
SUPERSEDED_FACT_SHARE = 0.05
STATE_FACT_SHARE = 0.2
ENTITY_KINDS = (
    "person", "organization", "place", "project", "product", "event",
    "work", "team", "customer", "supplier", "standard", "incident",
)
PREDICATES = (
    "works with", "reports to", "founded", "leads", "supplies", "owns", "audited", "depends on",
    "replaced", "joined", "funded", "acquired", "mentors", "visited", "built", "reviewed",
    "approved", "cancelled", "succeeded", "located in", "member of", "partnered with",
    "competes with", "wrote", "published", "designed", "inspected", "hosted", "trained", "advised",
)
STATES = ("active", "paused", "waiting", "completed", "cancelled", "planned")

# Words per chunk, by source. About fifty tokens: long enough for BM25 lengths to vary and short
# enough that a million chunks' postings fit a laptop's disk.
COMMON_WORDS_PER_CHUNK = 30
TOPIC_WORDS_PER_CHUNK = 12
MENTIONS_PER_CHUNK = 3
COMMON_VOCABULARY = 20_000
TOPIC_VOCABULARY = 50
ZIPF_EXPONENT = 1.0
# Questions carry words from the middle of the Zipf law, like real questions' content words.
QUESTION_COMMON_RANKS = (100, 5_000)

# Noise radii relative to a unit vector: cosine(document, topic) ~ 0.78, chunks of one document
# ~ 0.74 to each other, chunks of one topic ~ 0.45, a question ~ 0.82 to the chunk it asks about.
DOCUMENT_SPREAD = 0.8
CHUNK_SPREAD = 0.6
FACT_SPREAD = 0.5
ENTITY_SPREAD = 0.9
PROFILE_SPREAD = 0.3
SESSION_SPREAD = 0.5
QUESTION_SPREAD = 0.7

COMMUNITY_SIZE = 25
RAPTOR_FANOUT = 10
PROFILE_MIN_DEGREE = 2
PROFILE_STATEMENTS = 3
DOCUMENTS_PER_BLOCK = 2_000
# Part of the shape a kept corpus is reused by: raise it whenever generation adds or changes rows,
# so `--reuse` regenerates a corpus loaded by an older generator (2: entity_mention rows).
GENERATOR_VERSION = 2
EPOCH = datetime(2025, 1, 1, tzinfo=UTC)
HISTORY_DAYS = 730

# Pseudo-words: consonant-vowel syllables ending in a vowel other than "e", so stemmers and
# lower-casing leave them as they are, and word families never collide.
_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aiou"
_SYLLABLES = [c + v for c in _CONSONANTS for v in _VOWELS]
_WORD_SYLLABLES = 4
_WORD_SPACE = len(_SYLLABLES) ** _WORD_SYLLABLES
# Multiplying by a unit modulo the space scatters neighbouring indexes over unrelated spellings, so
# consecutive entity names do not share trigrams.
_SCATTER = 1_000_003


def pseudo_word(index: int) -> str:
    """A pronounceable lower-case word, distinct for every index below the word space."""
    if not 0 <= index < _WORD_SPACE:
        raise ValueError(f"word index {index} outside 0..{_WORD_SPACE - 1}")
    code = (index * _SCATTER) % _WORD_SPACE
    syllables = []
    for _ in range(_WORD_SYLLABLES):
        code, digit = divmod(code, len(_SYLLABLES))
        syllables.append(_SYLLABLES[digit])
    return "".join(syllables)


@dataclass(frozen=True)
class CorpusShape:
    """How big every table is, derived from the chunk count."""

    chunks: int
    dimension: int
    seed: int = 0

    def __post_init__(self) -> None:
        if self.chunks < CHUNKS_PER_DOCUMENT:
            raise ValueError(f"a synthetic corpus needs at least {CHUNKS_PER_DOCUMENT} chunks")
        if self.dimension < 2:
            raise ValueError("embedding dimension must be at least 2")

    @property
    def documents(self) -> int:
        return self.chunks // CHUNKS_PER_DOCUMENT

    @property
    def topics(self) -> int:
        return max(MINIMUM_TOPICS, self.chunks // CHUNKS_PER_TOPIC)

    @property
    def entities(self) -> int:
        return max(self.topics * MENTIONS_PER_CHUNK, int(self.chunks * ENTITIES_PER_CHUNK))

    @property
    def session_items(self) -> int:
        return max(MINIMUM_SESSION_ITEMS, int(self.chunks * SESSION_ITEMS_PER_CHUNK))

    def as_dict(self) -> dict[str, int]:
        return {
            "chunks": self.chunks,
            "documents": self.documents,
            "topics": self.topics,
            "entities": self.entities,
            "session_items": self.session_items,
            "dimension": self.dimension,
            "seed": self.seed,
            "generator_version": GENERATOR_VERSION,
        }


@dataclass
class ContentBlock:
    """Rows for a run of documents: the unit the loader streams, so memory stays flat with size."""

    documents: list[tuple] = field(default_factory=list)
    chunks: list[tuple] = field(default_factory=list)
    facts: list[tuple] = field(default_factory=list)
    # One row per (entity, chunk naming it), as the extraction asset writes entity_mention.
    mentions: list[tuple] = field(default_factory=list)
    # (chunk id, the text BM25 indexes): the write side's own SQL turns these into postings.
    indexed_texts: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class SyntheticQuery:
    """A question about one chunk: its text, its vector and the names it mentions."""

    text: str
    vector: np.ndarray
    target_chunk_id: str
    mentions: tuple[str, ...]


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


def _content_hash(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def _zipf_cumulative(size: int) -> np.ndarray:
    weights = 1.0 / np.arange(1, size + 1) ** ZIPF_EXPONENT
    return np.cumsum(weights / weights.sum())


class SyntheticCorpus:
    """Deterministic for a shape: the same seed gives the same rows, vectors and questions."""

    def __init__(self, shape: CorpusShape) -> None:
        self.shape = shape
        self._rng = np.random.default_rng(shape.seed)
        rng = self._rng
        self.topic_centroids = _unit_rows(rng.standard_normal((shape.topics, shape.dimension)))
        self.common_words = [pseudo_word(i) for i in range(COMMON_VOCABULARY)]
        self._common_cumulative = _zipf_cumulative(COMMON_VOCABULARY)
        topic_offset = COMMON_VOCABULARY
        self.topic_words = [
            [pseudo_word(topic_offset + t * TOPIC_VOCABULARY + w) for w in range(TOPIC_VOCABULARY)]
            for t in range(shape.topics)
        ]
        self._name_offset = topic_offset + shape.topics * TOPIC_VOCABULARY
        self.entity_names = self._entity_names(shape.entities)
        # Entity e belongs to topic e mod T, so a topic's entities are e = t, t + T, t + 2T, ...
        self.entity_topic = np.arange(shape.entities) % shape.topics
        self.entity_kind = rng.integers(0, len(ENTITY_KINDS), shape.entities)
        self.entity_vectors = self._near(self.topic_centroids[self.entity_topic], ENTITY_SPREAD)
        self.entity_degree = np.zeros(shape.entities, dtype=np.int64)
        self._entity_statements: dict[int, list[str]] = {}
        counts = rng.multinomial(shape.chunks - shape.documents, np.full(shape.documents, 1 / shape.documents))
        self.document_chunk_counts = counts + 1
        self.document_topic = rng.integers(0, shape.topics, shape.documents)
        self.document_primary_entity = np.array(
            [self._topic_entity(int(t), rng) for t in self.document_topic], dtype=np.int64
        )
        self._chunk_vector_memory: dict[str, np.ndarray] = {}
        self._remembered_chunks = self._chunks_to_remember()
        self._raptor_leaves: list[tuple[str, int, np.ndarray, list[str]]] = []
        self._chunk_mentions: dict[str, tuple[str, ...]] = {}
        self._facts_written = 0

    # Names and ids -------------------------------------------------------------------------

    def _entity_names(self, count: int) -> list[str]:
        first_names = max(2, math.ceil(2 * math.sqrt(count)))
        last_names = math.ceil(count / first_names)
        firsts = [pseudo_word(self._name_offset + i).capitalize() for i in range(first_names)]
        lasts = [pseudo_word(self._name_offset + first_names + i).capitalize() for i in range(last_names)]
        # Popular entities have small indexes; a bijective scramble keeps them from all sharing
        # the first surname (which would give one name token a posting list like a stop word's).
        space = first_names * last_names
        step = next(a for a in range(int(space * 0.618) + 1, space * 2) if math.gcd(a, space) == 1)
        scrambled = [(e * step) % space for e in range(count)]
        return [f"{firsts[s % first_names]} {lasts[s // first_names]}" for s in scrambled]

    @staticmethod
    def entity_id(entity: int) -> str:
        return f"syn-e{entity:07d}"

    @staticmethod
    def document_id(document: int) -> str:
        return f"syn-d{document:07d}"

    def _topic_entity(self, topic: int, rng: np.random.Generator) -> int:
        """An entity of `topic`, popular ones more often (hubs, as in real graphs)."""
        members = (self.shape.entities - topic + self.shape.topics - 1) // self.shape.topics
        rank = min(int(rng.zipf(1.6)) - 1, members - 1)
        return topic + rank * self.shape.topics

    def _near(self, anchors: np.ndarray, spread: float) -> np.ndarray:
        noise = self._rng.standard_normal(anchors.shape).astype(np.float32)
        noise *= spread / math.sqrt(anchors.shape[1])
        return _unit_rows(anchors + noise)

    def _chunks_to_remember(self) -> set[int]:
        """Chunk ordinals whose vectors questions and session items are built from."""
        wanted = min(self.shape.chunks, 4 * self.shape.session_items + 10_000)
        return set(self._rng.choice(self.shape.chunks, size=wanted, replace=False).tolist())

    # Tables --------------------------------------------------------------------------------

    def entity_kinds(self) -> list[tuple]:
        vectors = _unit_rows(self._rng.standard_normal((len(ENTITY_KINDS), self.shape.dimension)))
        return [(kind, f"{kind} entities", vectors[i]) for i, kind in enumerate(ENTITY_KINDS)]

    def entities(self) -> Iterator[tuple]:
        created = EPOCH - timedelta(days=HISTORY_DAYS)
        for e, name in enumerate(self.entity_names):
            yield (
                self.entity_id(e), name, ENTITY_KINDS[self.entity_kind[e]], name.lower(),
                self.entity_vectors[e], created,
            )

    def content_blocks(self) -> Iterator[ContentBlock]:
        """Documents with their chunks, mentions, facts and BM25 postings, a block of documents at a time."""
        chunk_ordinal = 0
        for start in range(0, self.shape.documents, DOCUMENTS_PER_BLOCK):
            block = ContentBlock()
            leaves: dict[int, list[tuple[str, np.ndarray]]] = {}
            for document in range(start, min(start + DOCUMENTS_PER_BLOCK, self.shape.documents)):
                chunk_ordinal = self._add_document(block, document, chunk_ordinal, leaves)
            self._collect_raptor_leaves(leaves)
            yield block

    def _add_document(
        self, block: ContentBlock, document: int, chunk_ordinal: int,
        leaves: dict[int, list[tuple[str, np.ndarray]]],
    ) -> int:
        rng = self._rng
        topic = int(self.document_topic[document])
        document_id = self.document_id(document)
        title = self.entity_names[self.document_primary_entity[document]]
        count = int(self.document_chunk_counts[document])
        document_vector = self._near(self.topic_centroids[topic][None, :], DOCUMENT_SPREAD)
        chunk_vectors = self._near(np.repeat(document_vector, count, axis=0), CHUNK_SPREAD)
        texts = []
        observed = EPOCH - timedelta(days=int(rng.integers(0, HISTORY_DAYS)))
        for position in range(count):
            chunk_id = f"{document_id}:{position}"
            mentioned = [int(self.document_primary_entity[document])] + [
                self._topic_entity(topic, rng) for _ in range(MENTIONS_PER_CHUNK)
            ]
            mentioned = list(dict.fromkeys(mentioned))
            words = self._chunk_words(topic, mentioned)
            text = " ".join(words)
            texts.append(text)
            content_hash = _content_hash(text)
            block.chunks.append(
                (chunk_id, document_id, position, text, len(words), content_hash,
                 chunk_vectors[position], "synthetic", content_hash)
            )
            block.indexed_texts.append((chunk_id, indexed_text(title, text)))
            block.mentions.extend(self._mention_rows(chunk_id, document_id, mentioned))
            self._add_facts(block, chunk_id, document_id, chunk_vectors[position], mentioned, observed)
            leaves.setdefault(topic, []).append((chunk_id, chunk_vectors[position]))
            if chunk_ordinal in self._remembered_chunks:
                self._chunk_vector_memory[chunk_id] = chunk_vectors[position]
                self._chunk_mentions[chunk_id] = tuple(self.entity_names[e] for e in mentioned)
            chunk_ordinal += 1
        body = "\n\n".join(texts)
        block.documents.append(
            (document_id, title, f"synthetic://{document_id}", body, _content_hash(body), observed,
             observed, observed)
        )
        return chunk_ordinal

    def _mention_rows(self, chunk_id: str, document_id: str, mentioned: list[int]) -> list[tuple]:
        """entity_mention rows: each name occurs once in the chunk's text, under its entity's kind,
        public (no scopes) like every other synthetic row."""
        return [
            (self.entity_id(e), chunk_id, document_id, self.entity_names[e], ENTITY_KINDS[self.entity_kind[e]], 1, [])
            for e in mentioned
        ]

    def _chunk_words(self, topic: int, mentioned: list[int]) -> list[str]:
        rng = self._rng
        # Inverse-CDF sampling: rng.choice(p=...) would rebuild the CDF for every chunk.
        common = np.minimum(
            np.searchsorted(self._common_cumulative, rng.random(COMMON_WORDS_PER_CHUNK)), COMMON_VOCABULARY - 1
        )
        topical = rng.integers(0, TOPIC_VOCABULARY, TOPIC_WORDS_PER_CHUNK)
        # A name is shuffled as one unit so it stays a contiguous phrase, as names are in real text.
        units = [self.common_words[i] for i in common] + [self.topic_words[topic][i] for i in topical]
        units.extend(self.entity_names[entity] for entity in mentioned)
        return [word for i in rng.permutation(len(units)) for word in units[i].split()]

    def _add_facts(
        self, block: ContentBlock, chunk_id: str, document_id: str, chunk_vector: np.ndarray,
        mentioned: list[int], observed: datetime,
    ) -> None:
        rng = self._rng
        wanted = int(rng.poisson(FACTS_PER_CHUNK))
        if wanted == 0:
            return
        vectors = self._near(np.repeat(chunk_vector[None, :], wanted, axis=0), FACT_SPREAD)
        seen: set[tuple] = set()
        for i in range(wanted):
            subject = int(mentioned[rng.integers(len(mentioned))])
            predicate = PREDICATES[rng.integers(len(PREDICATES))]
            others = [e for e in mentioned if e != subject]
            if others and rng.random() >= STATE_FACT_SHARE:
                linked = int(others[rng.integers(len(others))])
                target: int | None = linked
                value = None
                statement = f"{self.entity_names[subject]} {predicate} {self.entity_names[linked]}"
            else:
                target = None
                value = STATES[rng.integers(len(STATES))]
                predicate = "status"
                statement = f"{self.entity_names[subject]} is {value}"
            key = (subject, predicate, target, value)
            if key in seen:
                continue
            seen.add(key)
            recorded_from = observed + timedelta(hours=int(rng.integers(0, 48)))
            superseded = rng.random() < SUPERSEDED_FACT_SHARE
            recorded_to = recorded_from + timedelta(days=int(rng.integers(1, 90))) if superseded else None
            if not superseded:
                self._count_live_fact(subject, target, statement)
            block.facts.append(
                (f"syn-f{self._facts_written:08d}", self.entity_id(subject), predicate,
                 self.entity_id(target) if target is not None else None, value, statement,
                 vectors[i], chunk_id, document_id, observed, recorded_from, recorded_to,
                 int(rng.zipf(2.0)) - 1)
            )
            self._facts_written += 1

    def _count_live_fact(self, subject: int, target: int | None, statement: str) -> None:
        for endpoint in (subject, target):
            if endpoint is None:
                continue
            self.entity_degree[endpoint] += 1
            statements = self._entity_statements.setdefault(endpoint, [])
            if len(statements) < PROFILE_STATEMENTS:
                statements.append(statement)

    def _collect_raptor_leaves(self, leaves: dict[int, list[tuple[str, np.ndarray]]]) -> None:
        """Level-1 RAPTOR nodes: runs of a topic's chunks, summarized at their mean."""
        for topic, members in sorted(leaves.items()):
            for start in range(0, len(members), RAPTOR_FANOUT):
                group = members[start:start + RAPTOR_FANOUT]
                mean = np.mean([vector for _, vector in group], axis=0)
                node_id = f"syn-r1-{len(self._raptor_leaves):07d}"
                self._raptor_leaves.append((node_id, topic, mean, [chunk for chunk, _ in group]))

    # Summaries: only after every content block was consumed ---------------------------------

    def raptor_nodes(self, max_levels: int, root_count: int) -> list[tuple]:
        """Level by level until at most `root_count` nodes remain or `max_levels` is reached."""
        rows = []
        level_nodes = [(node_id, topic, mean, children) for node_id, topic, mean, children in self._raptor_leaves]
        level = 1
        while True:
            for node_id, topic, mean, children in level_nodes:
                rows.append((node_id, level, self._summary_text(topic), children, _unit_rows(mean[None, :])[0]))
            if len(level_nodes) <= root_count or level >= max_levels:
                return rows
            level += 1
            fanout = max(2, min(RAPTOR_FANOUT, math.ceil(len(level_nodes) / root_count)))
            ordered = sorted(level_nodes, key=lambda node: node[1])
            level_nodes = []
            for start in range(0, len(ordered), fanout):
                group = ordered[start:start + fanout]
                mean = np.mean([node[2] for node in group], axis=0)
                level_nodes.append(
                    (f"syn-r{level}-{len(level_nodes):07d}", group[0][1], mean, [node[0] for node in group])
                )

    def communities(self) -> list[tuple]:
        """A community per topic and, under it, sub-communities of about COMMUNITY_SIZE entities."""
        rows = []
        for topic in range(self.shape.topics):
            members = np.arange(topic, self.shape.entities, self.shape.topics)
            parent_id = f"syn-c0-{topic:06d}"
            rows.append(self._community_row(parent_id, 0, None, topic, members))
            for part, start in enumerate(range(0, len(members), COMMUNITY_SIZE)):
                rows.append(
                    self._community_row(f"syn-c1-{topic:06d}-{part:04d}", 1, parent_id, topic,
                                        members[start:start + COMMUNITY_SIZE])
                )
        return rows

    def _community_row(self, community_id: str, level: int, parent_id: str | None, topic: int,
                       members: np.ndarray) -> tuple:
        names = [self.entity_names[e] for e in members[:5]]
        label = f"{self.topic_words[topic][0]} {self.topic_words[topic][1]}"
        summary = f"{label}: {', '.join(names)}. {self._summary_text(topic)}"
        vector = _unit_rows(self.entity_vectors[members].mean(axis=0)[None, :])[0]
        return (community_id, level, parent_id, label, summary, [self.entity_id(e) for e in members], vector)

    def profiles(self) -> Iterator[tuple]:
        """A profile per entity with at least PROFILE_MIN_DEGREE live facts."""
        profiled = np.flatnonzero(self.entity_degree >= PROFILE_MIN_DEGREE)
        if len(profiled) == 0:
            return
        vectors = self._near(self.entity_vectors[profiled], PROFILE_SPREAD)
        for row, entity in enumerate(profiled.tolist()):
            statements = self._entity_statements.get(entity, [])
            summary = f"{self.entity_names[entity]} ({ENTITY_KINDS[self.entity_kind[entity]]}). " + ". ".join(statements)
            yield (self.entity_id(entity), summary, int(self.entity_degree[entity]), vectors[row])

    def session_items(self) -> list[tuple]:
        rng = self._rng
        remembered = sorted(self._chunk_vector_memory)
        picks = rng.choice(len(remembered), size=self.shape.session_items, replace=len(remembered) < self.shape.session_items)
        anchors = np.stack([self._chunk_vector_memory[remembered[i]] for i in picks])
        vectors = self._near(anchors, SESSION_SPREAD)
        rows = []
        for i, pick in enumerate(picks.tolist()):
            mentions = self._chunk_mentions[remembered[pick]]
            created = EPOCH + timedelta(hours=int(rng.integers(0, 24 * 30)))
            promoted = created + timedelta(days=1) if rng.random() < PROMOTED_SESSION_SHARE else None
            text = f"note: {mentions[0]} mentioned {self.common_words[int(rng.integers(100, 2000))]}"
            rows.append((f"syn-s{i:07d}", text, vectors[i], created, promoted))
        return rows

    def queries(self, count: int) -> list[SyntheticQuery]:
        """Questions about remembered chunks: an entity named, topical and mid-frequency words."""
        rng = np.random.default_rng(self.shape.seed + 1)
        remembered = sorted(self._chunk_vector_memory)
        if not remembered:
            raise ValueError("generate the content blocks before asking for questions")
        picks = rng.choice(len(remembered), size=count, replace=len(remembered) < count)
        anchors = np.stack([self._chunk_vector_memory[remembered[i]] for i in picks])
        noise = rng.standard_normal(anchors.shape).astype(np.float32) * (QUESTION_SPREAD / math.sqrt(anchors.shape[1]))
        vectors = _unit_rows(anchors + noise)
        questions = []
        for i, pick in enumerate(picks.tolist()):
            chunk_id = remembered[pick]
            mentions = self._chunk_mentions[chunk_id]
            named = mentions[int(rng.integers(len(mentions)))]
            document = int(chunk_id[len("syn-d"):chunk_id.index(":")])
            topic = int(self.document_topic[document])
            topical = [self.topic_words[topic][int(w)] for w in rng.integers(0, TOPIC_VOCABULARY, 2)]
            common = self.common_words[int(rng.integers(*QUESTION_COMMON_RANKS))]
            predicate = PREDICATES[int(rng.integers(len(PREDICATES)))]
            text = f"Who {predicate} {named} in the {topical[0]} {common} {topical[1]}?"
            questions.append(SyntheticQuery(text, vectors[i], chunk_id, (named,)))
        return questions

    def _summary_text(self, topic: int) -> str:
        words = self._rng.integers(0, TOPIC_VOCABULARY, 20)
        return " ".join(self.topic_words[topic][w] for w in words)
