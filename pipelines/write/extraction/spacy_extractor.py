"""The default extractor: spaCy's small English pipeline plus a few rules, offline and deterministic.

Entities are spaCy's named spans mapped to our kinds, with rules where the small model is weak:
"Project X" is a project (the model often calls it a person), "... Team" a team, "HX-4417" a code,
"Porto assembly plant" a place. Facts come from the dependency parse of each sentence:
subject–verb–object ("Tomasz Wielgus leads Project Heron"), verb–preposition ("Heron depends on
Tessel"), copula roles ("Saoirse Dunne is the mentor of Lucia Ferraro") and copula states
("Project Lantern is paused" -> status "paused"), appositions ("Paris, the capital of France," ->
capital_of) and possessive roles ("France's capital is Paris" -> Paris capital_of France). The
page's subject, named by the chunk's title, stands behind its pronouns and short references
(`page_subject`). A clause whose subject is not an entity, or that is negated, yields no fact.
A turn of a conversation (a chunk with a speaker) is read as dialogue instead (`dialogue`).
"""

from __future__ import annotations

import multiprocessing
import os
import re
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager

from pipelines.write.extraction.dialogue import read_turns
from pipelines.write.extraction.extraction_model import ChunkExtraction, ChunkText, ExtractedFact, Mention
from pipelines.write.extraction.grounding import ISO_DATE, prose_paragraphs, sentence_validity
from pipelines.write.extraction.ontology import guess_kind, kind_from_name, kind_from_role
from pipelines.write.extraction.page_subject import PageSubject, PageSubjects
from pipelines.write.extraction.parse_slots import ParseSlots
from pipelines.write.extraction.spacy_pipeline import LABEL_KINDS, load_pipeline, predicate_name

SUBJECTS = {"nsubj", "nsubjpass"}
OBJECT_PREPOSITIONS = {"of", "for", "in", "at", "on", "to", "from", "with", "by", "into", "under"}
# Entering a phase is a change of state: "Project Mooring entered production" -> "in production".
STATE_ENTRY_VERBS = {"enter", "reach"}
# "Project Lantern remains paused": a linking verb with an adjective states a state like "is" does.
LINKING_VERBS = {"remain", "stay", "become", "seem"}
CLAUSE_SKIPPED = {"relcl", "acl", "pcomp", "csubj"}
# Where a reference to the page's subject may stand: a pronoun as subject ("He was born ...") or
# possessor ("its capital"); a short definite noun ("the album") also as an object.
SUBJECT_PRONOUNS = {"he", "she", "it", "they"}
POSSESSIVE_PRONOUNS = {"his", "her", "its", "their"}
REFERENCE_DEPS = SUBJECTS | {"dobj", "pobj", "poss"}
# "Federal Bureau of Investigation (FBI)": a name declaring its acronym, which the tagger often
# swallows into the span.
DECLARED_ACRONYM = re.compile(r"^(?P<name>.+?)\s*\((?P<acronym>[A-Z][A-Za-z.&]{1,9})\)?$")
# Chunks a worker parses per task: enough to fill spaCy's batches, few enough that both workers
# stay busy to the end of a call.
CHUNKS_PER_TASK = 32


def _mention(span) -> Mention | None:
    declared = DECLARED_ACRONYM.match(span.text)
    text = declared["name"] if declared else span.text
    kind = kind_from_name(text) or LABEL_KINDS.get(span.label_)
    # A name has a capital or a digit somewhere; "bin" tagged as a person is the tagger's mistake.
    if kind is None or not any(character.isupper() or character.isdigit() for character in text):
        return None
    mention = Mention(text, kind)
    return mention if mention.name else None


def _declared_acronym(span, mention: Mention) -> str | None:
    """The acronym a name declares in parentheses, inside the tagger's span or right after it."""
    declared = DECLARED_ACRONYM.match(span.text)
    if declared:
        return declared["acronym"]
    doc = span.doc
    after = doc[span.end : span.end + 3]
    if len(after) == 3 and after[0].text == "(" and after[2].text == ")" and DECLARED_ACRONYM.match(f"x ({after[1].text})"):
        # Initials of the name's capitalised words: "(FBI)" after "Federal Bureau of Investigation".
        initials = "".join(word[0] for word in mention.name.split() if word[0].isupper())
        if after[1].text.replace(".", "").upper() == initials.upper():
            return after[1].text
    return None


def _role_words(noun) -> str:
    """A descriptive noun with the words that qualify it: "capital", "second album", "rock band"."""
    words = [t for t in noun.lefts if t.dep_ in {"compound", "amod"} and t.i == noun.i - 1] + [noun]
    return " ".join(t.lower_ for t in words)


def _phrase(token) -> str:
    """The token's noun phrase without leading determiners, e.g. "wrist gimbal torque drift"."""
    words = [t for t in token.subtree if not (t.dep_ in {"det", "predet"} and t.i < token.i)]
    while words and words[-1].is_punct:
        words.pop()
    return "".join(t.text_with_ws for t in words).strip()


class _Sentence:
    """One parsed sentence: its entity mentions by token, and the facts its clauses state."""

    def __init__(self, sentence, page: PageSubject | None = None) -> None:
        self.sentence = sentence
        self.page = page
        self.statement = sentence.text.strip()
        self.validity = sentence_validity(self.statement)
        self.mention_at: dict[int, Mention] = {}
        self.mentions: list[Mention] = []
        self.kind_hints: list[Mention] = []
        self.aliases: list[tuple[str, Mention]] = []
        # Tokens inside any named span, dates included: those are never guessed as names.
        self.tagged = {token.i for span in sentence.ents for token in span}
        for span in sentence.ents:
            mention = _mention(span)
            if mention is None:
                continue
            self.mentions.append(mention)
            for token in span:
                self.mention_at[token.i] = mention
            acronym = _declared_acronym(span, mention)
            if acronym:
                self.aliases.append((acronym, mention))
        if page is not None:
            page.learn_from(self.mentions)
            self._resolve_page_references(page)

    def _resolve_page_references(self, page: PageSubject) -> None:
        """Pronouns and short definite references ("the album") that mean the page's subject."""
        for token in self.sentence:
            if token.i in self.mention_at or token.dep_ not in REFERENCE_DEPS:
                continue
            if token.pos_ == "PRON":
                word = token.lower_
                in_place = word in (POSSESSIVE_PRONOUNS if token.dep_ == "poss" else SUBJECT_PRONOUNS)
                if not in_place or token.dep_ in {"dobj", "pobj"} or not page.pronoun_fits(word):
                    continue
            elif token.pos_ == "NOUN" and token.lemma_.lower() in page.nouns and self._bare_definite(token):
                word = token.lemma_.lower()
            else:
                continue
            earlier = [m for i, m in self.mention_at.items() if i < token.i]
            if page.rival(word, earlier):
                continue
            mention = page.mention()
            self.mention_at[token.i] = mention
            self.mentions.append(mention)

    @staticmethod
    def _bare_definite(noun) -> bool:
        """"the album", not "the band's album" or "the first album": a determiner "the" and nothing else before it."""
        lefts = list(noun.lefts)
        return len(lefts) == 1 and lefts[0].lower_ == "the"

    def entity_in(self, token) -> Mention | None:
        """The entity the token names, one named inside its noun phrase ("the Tessel sensor array"),
        or, failing both, the proper noun it heads."""
        return self._named_in(token) or self._untagged_proper_noun(token)

    def _named_in(self, token) -> Mention | None:
        if token.i in self.mention_at:
            return self.mention_at[token.i]
        for child in token.lefts:
            if child.dep_ in {"compound", "amod", "nmod", "nummod", "poss", "appos"}:
                found = self._named_in(child)
                if found is not None:
                    return found
        return None

    def _untagged_proper_noun(self, token) -> Mention | None:
        """A subject or object the tagger skipped ("Tomasz Wielgus leads ..." in some contexts):
        the run of capitalised proper nouns it heads, kind guessed from its form. The document-wide
        kind vote and stated roles correct the guess."""
        # A role ("is the Chief Executive Officer") is not a name.
        if token.pos_ != "PROPN" or token.i in self.tagged or not token.is_title or token.dep_ == "attr":
            return None
        words = [token]
        for child in reversed(list(token.lefts)):
            if child.i != words[0].i - 1 or child.pos_ != "PROPN":
                continue
            if child.i in self.tagged:
                # The rest of a name the tagger cut short ("Quillfern" of "Quillfern Robotics").
                return None
            if child.is_title:
                words.insert(0, child)
        name = token.doc[words[0].i : token.i + 1].text
        mention = Mention(name, guess_kind(name))
        self.mentions.append(mention)
        for word in words:
            self.mention_at[word.i] = mention
        return mention

    def facts(self) -> list[ExtractedFact]:
        found: list[ExtractedFact] = []
        for token in self.sentence:
            if token.pos_ in {"VERB", "AUX"} and not self._negated(token):
                found.extend(self._clause_facts(token))
        found.extend(self._apposition_facts())
        return found

    def _apposition_facts(self) -> list[ExtractedFact]:
        """"Paris, the capital of France," -> Paris capital_of France; "the album Green" -> Green is
        album; "his wife, Jane Doe," -> Jane Doe wife_of the page's subject; two places side by
        side ("Tulsa, Oklahoma") -> located_in."""
        found = []
        for appos in self.sentence:
            if appos.dep_ != "appos":
                continue
            head = appos.head
            head_named, appos_named = self.mention_at.get(head.i), self.mention_at.get(appos.i)
            if head_named and appos_named:
                if head_named != appos_named and head_named.kind == appos_named.kind == "place":
                    found.append(self._fact(head_named, "located_in", appos_named))
                continue
            named, description = (head_named, appos) if head_named else (appos_named, head)
            if named is None or description.pos_ != "NOUN":
                continue
            found.extend(
                self._fact(named, predicate, target, value)
                for predicate, target, value in self._described_as(description)
                if target != named
            )
        return found

    def _described_as(self, noun) -> list[tuple[str, Mention | None, str | None]]:
        """What a descriptive noun says of the entity it describes: a role of another entity
        ("France's capital", "the capital of France") or, failing that, what the entity is."""
        words = _role_words(noun)
        owner = self._possessor(noun)
        if owner is not None:
            return [(f"{words} of", owner, None)]
        related = self._prepositional_entities(noun)
        if related:
            return [(f"{words} {prep}", m, None) for prep, m in related]
        return [("is", None, words)]

    def _possessor(self, noun) -> Mention | None:
        """The entity owning a common noun that is not itself a name: France of "France's capital",
        the page's subject of "his wife"."""
        if noun.pos_ != "NOUN" or noun.i in self.mention_at:
            return None
        for child in noun.children:
            if child.dep_ == "poss":
                owner = self.mention_at.get(child.i) or self.entity_in(child)
                if owner is not None:
                    return owner
        return None

    @staticmethod
    def _negated(verb) -> bool:
        if any(child.dep_ == "neg" for child in verb.children):
            return True
        if any(
            child.dep_ in SUBJECTS and any(d.lower_ == "no" for d in child.children)
            for child in verb.children
        ):
            return True
        clause = " ".join(t.lower_ for t in verb.subtree)
        return "no longer" in clause

    def _subjects(self, verb) -> tuple[list, bool]:
        """Subject tokens (with coordinated ones) and whether the clause is passive."""
        own = [child for child in verb.children if child.dep_ in SUBJECTS]
        if own:
            head = own[0]
            return [head, *head.conjuncts], head.dep_ == "nsubjpass"
        stranded = self._stranded_subject(verb)
        if stranded is not None:
            return [stranded], False
        if verb.dep_ in {"conj", "xcomp"} and verb.head.pos_ in {"VERB", "AUX"}:
            inherited, passive = self._subjects(verb.head)
            return inherited, passive and verb.dep_ == "conj"
        return [], False

    @staticmethod
    def _stranded_subject(verb):
        """The subject the small model hangs on the previous clause's object.

        In "Rui Caldeira leads Project Tessel and Vantory Optics supplies the lidar" the parser
        makes "Vantory Optics" a second object of "leads" and leaves "supplies" without a subject.
        """
        if verb.dep_ != "conj" or verb.i == 0:
            return None
        before = verb.doc[verb.i - 1]
        if before.dep_ == "conj" and before.pos_ in {"PROPN", "NOUN"} and before.head.dep_ in {"dobj", "pobj", "attr"}:
            return before
        return None

    @staticmethod
    def _is_stranded_subject(token) -> bool:
        following = token.doc[token.i + 1] if token.i + 1 < len(token.doc) else None
        return following is not None and following.dep_ == "conj" and following.pos_ in {"VERB", "AUX"} and token.dep_ == "conj"

    def _clause_facts(self, verb) -> list[ExtractedFact]:
        if verb.dep_ in CLAUSE_SKIPPED:
            return []
        subject_tokens, passive = self._subjects(verb)
        if verb.lemma_ == "be":
            self._note_roles(verb, subject_tokens)
            self._note_page_definition(verb, subject_tokens)
            owned = self._owned_subject_facts(verb, subject_tokens)
            if owned:
                return owned
        subjects = [m for m in (self.entity_in(t) for t in subject_tokens) if m is not None]
        if not subjects:
            return []
        # Roles and states belong to the entity itself, not to something it modifies: "the Lantern
        # flight logs were complete" says nothing about Project Lantern's state.
        named_directly = [self.mention_at[t.i] for t in subject_tokens if t.i in self.mention_at]
        if verb.lemma_ == "be":
            objects = self._copula_objects(verb)
        elif passive:
            agent = self._agent(verb)
            if agent is not None:
                targets = [m for m in (self.entity_in(t) for t in subject_tokens) if m]
                return [self._fact(agent, verb.lemma_, target) for target in targets]
            objects = self._passive_objects(verb)
        else:
            objects = self._active_objects(verb)
        return [
            self._fact(subject, predicate, target, value)
            for predicate, target, value in objects
            for subject in (named_directly if predicate in {"is", "status"} or verb.lemma_ == "be" else subjects)
            if target != subject
        ]

    def _note_roles(self, verb, subject_tokens) -> None:
        """Record the kind a copula states ("X is the account manager"), naming X if the tagger missed it."""
        for child in verb.children:
            stated = kind_from_role(child.lemma_.lower()) if child.dep_ == "attr" else None
            if not stated or child.i in self.mention_at:
                continue
            for token in subject_tokens:
                named = self.mention_at.get(token.i) or self._untagged_proper_noun(token)
                if named is not None:
                    self.kind_hints.append(Mention(named.name, stated))

    def _note_page_definition(self, verb, subject_tokens) -> None:
        """"Green is the second album by Steve Hillage": "the album" now means the page's subject."""
        page = self.page
        if page is None:
            return
        named = [self.mention_at.get(t.i) or self._untagged_proper_noun(t) for t in subject_tokens]
        if not any(m is not None and m.normalized_name == page.normalized_name for m in named):
            return
        for child in verb.children:
            if child.dep_ == "attr" and child.pos_ == "NOUN":
                page.learn_definition(child.lemma_.lower())

    def _owned_subject_facts(self, verb, subject_tokens) -> list[ExtractedFact]:
        """"France's capital is Paris" -> Paris capital_of France."""
        found: list[ExtractedFact] = []
        for token in subject_tokens:
            owner = self._possessor(token)
            if owner is None:
                continue
            for child in verb.children:
                if child.dep_ == "attr":
                    found.extend(
                        self._fact(named, f"{_role_words(token)} of", owner)
                        for named in self._entities_of(child) if named != owner
                    )
        return found

    def _fact(self, subject: Mention, predicate: str, target: Mention | None = None, value: str | None = None) -> ExtractedFact:
        return ExtractedFact(
            subject=subject,
            predicate=predicate_name(predicate),
            statement=self.statement,
            object=target,
            object_value=None if target is not None else value,
            valid_from=self.validity.valid_from,
            valid_to=self.validity.valid_to,
        )

    def _entities_of(self, token) -> list[Mention]:
        tokens = [token, *(t for t in token.conjuncts if not self._is_stranded_subject(t))]
        return [m for m in (self.entity_in(t) for t in tokens) if m is not None]

    def _prepositional_entities(self, *heads) -> list[tuple[str, Mention]]:
        found: list[tuple[str, Mention]] = []
        for head in heads:
            for prep in head.children:
                if prep.dep_ == "prep" and prep.lower_ in OBJECT_PREPOSITIONS:
                    for pobj in prep.children:
                        if pobj.dep_ == "pobj":
                            found.extend((prep.lower_, m) for m in self._entities_of(pobj))
        return found

    def _copula_objects(self, verb) -> list[tuple[str, Mention | None, str | None]]:
        objects: list[tuple[str, Mention | None, str | None]] = []
        for child in verb.children:
            if child.dep_ == "attr":
                owner = self._possessor(child)
                if owner is not None:
                    objects.append((f"{_role_words(child)} of", owner, None))
                    continue
                named = self._entities_of(child)
                if named:
                    objects.extend(("is", m, None) for m in named)
                    continue
                role = [(prep, m) for prep, m in self._prepositional_entities(child)]
                if role:
                    head_words = " ".join(
                        t.text for t in child.subtree if t.i <= child.i and t.dep_ not in {"det", "predet", "poss"}
                    )
                    objects.extend((f"{head_words} {prep}", m, None) for prep, m in role)
                else:
                    objects.append(("is", None, _phrase(child)))
            elif child.dep_ == "acomp":
                objects.extend(("status", None, adjective.lower_) for adjective in [child, *child.conjuncts])
            elif child.dep_ == "prep" and child.lower_ in {"in", "at", "on"}:
                for pobj in child.children:
                    if pobj.dep_ != "pobj" or re.fullmatch(ISO_DATE, pobj.text):
                        continue
                    named = self._entities_of(pobj)
                    if named:
                        objects.extend(("located_in", m, None) for m in named)
                    elif pobj.pos_ == "NOUN":
                        objects.append(("status", None, f"{child.lower_} {_phrase(pobj).lower()}"))
        return objects

    def _agent(self, verb) -> Mention | None:
        for child in verb.children:
            if child.dep_ == "agent":
                for pobj in child.children:
                    if pobj.dep_ == "pobj":
                        return self.entity_in(pobj)
        return None

    def _passive_objects(self, verb) -> list[tuple[str, Mention | None, str | None]]:
        located = self._prepositional_entities(verb)
        if located:
            return [(f"{verb.lower_} {prep}", m, None) for prep, m in located]
        for prep in verb.children:
            if prep.dep_ == "prep" and prep.lower_ in OBJECT_PREPOSITIONS:
                for pobj in prep.children:
                    if pobj.dep_ == "pobj" and not re.fullmatch(ISO_DATE, pobj.text) and pobj.pos_ != "NUM":
                        return [(f"{verb.lower_} {prep.lower_}", None, _phrase(pobj))]
        return [("status", None, verb.lower_)]

    def _active_objects(self, verb) -> list[tuple[str, Mention | None, str | None]]:
        particle = " ".join(child.lower_ for child in verb.children if child.dep_ == "prt")
        action = f"{verb.lemma_} {particle}".strip()
        direct = next((child for child in verb.children if child.dep_ in {"dobj", "attr", "acomp"}), None)
        if direct is None:
            return [(f"{action} {prep}", m, None) for prep, m in self._prepositional_entities(verb)]
        if direct.dep_ == "acomp" and verb.lemma_ in LINKING_VERBS:
            return [("status", None, adjective.lower_) for adjective in [direct, *direct.conjuncts]]
        named = self._entities_of(direct)
        via: list[tuple[str, Mention | None, str | None]] = [(f"{action} {direct.lemma_} {prep}", m, None) for prep, m in self._prepositional_entities(direct, verb)]
        if named:
            return [(action, m, None) for m in named] + [item for item in via if item[0].endswith(" for")]
        if via:
            return via
        if direct.pos_ in {"PRON", "DET"}:
            return []
        if verb.lemma_ in STATE_ENTRY_VERBS:
            return [("status", None, f"in {_phrase(direct).lower()}")]
        return [(action, None, _phrase(direct))]


class SpacyExtractor:
    """Typed entities and sentence-grounded facts from spaCy's parse; the same input gives the same output.

    A call with more chunks than one task holds parses them in worker processes, one per core, so
    the process that writes the graph is free to write meanwhile. Workers are spawned, not forked:
    the calling process has usually loaded torch, whose threads a fork can leave deadlocked. They
    load spaCy once and live as long as the extractor (about one asset run).
    """

    name = "spacy"

    def __init__(self, batch_size: int = 64, workers: int | None = None, chunks_per_task: int = CHUNKS_PER_TASK) -> None:
        self.batch_size = batch_size
        self.workers = workers if workers is not None else len(os.sched_getaffinity(0))
        self.chunks_per_task = chunks_per_task
        self._pool: ProcessPoolExecutor | None = None
        self._slots = ParseSlots(self.workers)

    def extract(self, chunks: Sequence[ChunkText]) -> list[ChunkExtraction]:
        if self.workers < 2 or len(chunks) <= self.chunks_per_task:
            return _extract_chunks(chunks, self.batch_size)
        tasks = _tasks_by_page(chunks, self.chunks_per_task)
        pool = self._worker_pool()
        running: list[Future[list[ChunkExtraction]]] = []
        for task in tasks:
            self._slots.take()
            try:
                future = pool.submit(_extract_chunks, [chunks[i] for i in task], self.batch_size)
            except BaseException:
                self._slots.give_back()
                raise
            future.add_done_callback(lambda _: self._slots.give_back())
            running.append(future)
        results: list[ChunkExtraction | None] = [None] * len(chunks)
        for task, future in zip(tasks, running, strict=True):
            for index, extraction in zip(task, future.result(), strict=True):
                results[index] = extraction
        return [extraction for extraction in results if extraction is not None]

    @contextmanager
    def one_worker_fewer(self) -> Iterator[None]:
        """Inside: one parse worker fewer at work (never none), so that work done meanwhile on this
        machine by another process, the database server's, has a core to itself (`parse_slots`)."""
        with self._slots.one_yielded():
            yield

    def _worker_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # The initializer only watches the parent: a worker loads spaCy with its first task, so a
            # missing model surfaces as the task's ConfigError rather than as a broken pool.
            self._pool = ProcessPoolExecutor(
                self.workers, mp_context=multiprocessing.get_context("spawn"),
                initializer=_end_with_parent, initargs=(os.getpid(),),
            )
            # Shut down with the extractor, so a long-lived process keeps no idle parsers around.
            weakref.finalize(self, self._pool.shutdown, wait=False, cancel_futures=True)
        return self._pool


def _end_with_parent(parent: int, poll_seconds: float = 1.0) -> None:
    """In a worker: exit once the process that started it is gone. A killed ingest (SIGKILL, the
    OOM killer) cannot shut its pool down, and a worker busy with a long document parsed on,
    orphaned, holding its memory and a core beside the ingest run again."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_seconds)
        os._exit(1)

    threading.Thread(target=watch, name="end-with-parent", daemon=True).start()


def _extract_chunks(chunks: Sequence[ChunkText], batch_size: int) -> list[ChunkExtraction]:
    """The extraction of `chunks`, in this process; a worker runs it on its share of a call."""
    nlp = load_pipeline()
    results = [ChunkExtraction(chunk.id) for chunk in chunks]
    turns = [index for index, chunk in enumerate(chunks) if chunk.speaker]
    for index, extraction in zip(turns, read_turns(nlp, [chunks[i] for i in turns], batch_size), strict=True):
        results[index] = extraction
    paragraphs = [
        (index, p.text) for index, chunk in enumerate(chunks) if not chunk.speaker for p in prose_paragraphs(chunk.text)
    ]
    docs = nlp.pipe((text for _, text in paragraphs), batch_size=batch_size)
    pages = PageSubjects()
    for (index, _), doc in zip(paragraphs, docs):
        page = pages.of(chunks[index])
        for sentence in doc.sents:
            parsed = _Sentence(sentence, page)
            # Facts first: reading the clauses can name entities the tagger missed.
            results[index].facts.extend(parsed.facts())
            results[index].mentions.extend(parsed.mentions)
            results[index].kind_hints.extend(parsed.kind_hints)
            results[index].aliases.extend(parsed.aliases)
    return results


def _tasks_by_page(chunks: Sequence[ChunkText], chunks_per_task: int) -> list[list[int]]:
    """Chunk positions split into tasks of about `chunks_per_task`, every chunk of one page title in
    the same task and in order: what a page's earlier chunks teach about its subject holds in its
    later ones, so a worker must see them all, as the serial path does."""
    by_page: dict[tuple[str, str], list[int]] = {}
    for index, chunk in enumerate(chunks):
        by_page.setdefault((chunk.title_name, chunk.title_qualifier), []).append(index)
    tasks: list[list[int]] = [[]]
    for positions in by_page.values():
        if len(tasks[-1]) >= chunks_per_task:
            tasks.append([])
        tasks[-1].extend(positions)
    return [sorted(task) for task in tasks if task]
