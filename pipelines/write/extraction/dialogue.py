"""Reading a dialogue: a conversation's turns as entities and facts about the people talking.

A turn is a chunk with a speaker (`ChunkText.speaker`). Unlike a page, it has no subject named by
a title; it has participants: "I", "me", "my" and "we" are the speaker, "you" and "your" the
addressee (the other participant of a two-person conversation), and a first name or nickname of
either ("Mel" for Melanie) means them. What a turn talks about is mostly unnamed (pottery, a
charity race, the kids), so besides the tagger's names every noun phrase becomes a concept entity,
as HippoRAG's phrase nodes do, normalised so that "a pottery class", "pottery classes" and
"pottery" meet. Facts say what a participant or a named person does, likes, has, plans or feels,
grounded in the sentence that says it, valid from the session's day or from the relative time the
sentence gives ("yesterday", "last Friday", "next month").

Greetings, thanks and backchannels ("Hey Mel!", "Thanks!", "Wow, that's cool!") say nothing about
anyone: their sentences make no entity and no fact. A speaker prefix ("Caroline: ...") is never
part of a name, a name the speaker calls the addressee by is not a third person, and a capitalised
word opening a sentence is not a name by that alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from itertools import takewhile

from pipelines.write.extraction.extraction_model import ChunkExtraction, ChunkText, ExtractedFact, Mention
from pipelines.write.extraction.grounding import WEEKDAY, relative_day
from pipelines.write.extraction.spacy_pipeline import LABEL_KINDS, predicate_name

CONCEPT = "concept"
# "Caroline: Hey Mel!": the speaker's name before the turn's words, as transcripts write it.
SPEAKER_PREFIX = re.compile(r"^\s*[A-Z][\w.'’-]*(?: [A-Z][\w.'’-]*){0,3}:\s+")
SPEAKER_WORDS = {"i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "ourselves"}
ADDRESSEE_WORDS = {"you", "your", "yours", "yourself", "yourselves"}
THIRD_PERSON_WORDS = {"he", "she", "him", "her", "his", "hers", "himself", "herself"}
# Common nouns for a person, who "she" or "his" may mean instead of someone named.
PERSON_NOUNS = {
    "girl", "boy", "man", "woman", "guy", "lady", "kid", "child", "baby", "teen", "friend", "mom", "dad",
    "mother", "father", "sister", "brother", "son", "daughter", "wife", "husband", "partner", "girlfriend",
    "boyfriend", "grandma", "grandpa", "aunt", "uncle", "cousin", "neighbor", "teacher", "student",
    "person", "coach", "mentor", "veteran", "artist", "singer", "author", "player", "colleague",
}
# Chat spellings of "you" that the tagger reads as names.
ADDRESSEE_SPELLINGS = {"ya", "u", "ur"}
# Words that open a turn before a name without being part of it: "Yep John", "Aww Mel".
OPENERS = {
    "hey", "hi", "hello", "yep", "yeah", "yes", "aww", "aw", "wow", "oh", "ok", "okay", "well", "so",
    "ya", "thanks", "thank", "congrats", "hmm", "haha", "lol", "omg", "dear", "glad", "sorry", "nah",
}
# Sentences that are only social: they open with thanks, or are a greeting, wish or farewell.
THANKS = re.compile(r"^(?:thanks|thank|appreciate|thx|ty|congrats|congratulations|cheers)\b", re.IGNORECASE)
PHATIC_PHRASES = re.compile(
    r"\b(?:(?:good|nice|great|glad|lovely) (?:to|talking|chatting|catching)(?: up)?(?: (?:see|talk|chat|hear|meet))?"
    r"(?: (?:to|with|from))? (?:you|ya)|talk (?:to you |with you )?(?:soon|later)|take care|see (?:you|ya)"
    r"|catch (?:you|ya) later|have a (?:good|great|nice|lovely) (?:one|day|night|time|weekend|evening)"
    r"|how (?:have you been|are you|is it going|'s it going|about you)|what'?s up|you too|me too|same here"
    r"|no problem|no worries|good night|bye)\b",
    re.IGNORECASE,
)
# Verbs that carry no content of their own in a short social sentence ("That sounds great!").
EMPTY_VERBS = {"be", "do", "sound", "look", "seem", "feel", "get", "go", "say", "mean", "know", "guess", "bet"}
# Verbs that say how someone is with an adjective: "I was so happy", "I'm feeling confident".
LINKING_VERBS = {"be", "feel", "get", "become", "seem", "look", "stay", "remain", "grow", "keep"}
# What marks a clause as a plan or a wish rather than something done.
FUTURE_AUXILIARIES = {"will", "'ll", "shall"}
HYPOTHETICAL_AUXILIARIES = {"would", "'d", "could", "might"}
INTENT_VERBS = {"want", "plan", "hope", "wish", "love", "like", "intend", "decide", "need", "try", "aim"}
# A sentence without a subject whose verb says what the speaker feels: "Wow, love that painting!"
SUBJECTLESS_FEELINGS = {"love", "like", "enjoy", "hope", "miss", "want", "need", "wish", "appreciate", "adore"}
# Gerunds that name the activity a verb like "go" or "love" takes: "go swimming", "love painting".
ACTIVITY_VERBS = {"go", "love", "like", "enjoy", "start", "try", "begin", "prefer", "hate", "miss", "practice"}
ARGUMENT_DEPS = {"nsubj", "nsubjpass", "dobj", "pobj", "poss", "attr", "dative", "conj", "appos", "compound"}
SUBJECTS = {"nsubj", "nsubjpass"}
# Heads too vague to be a node of their own ("a lot", "something", "the way", "a photo").
VAGUE_HEADS = {
    "thing", "lot", "way", "time", "bit", "kind", "sort", "stuff", "something", "anything", "everything",
    "nothing", "one", "day", "week", "month", "year", "moment", "while", "today", "tonight", "yesterday",
    "tomorrow", "part", "piece", "idea", "fun", "lol", "haha", "wow", "yeah", "photo", "pic", "picture",
    "people", "place", "deal", "job", "reason", "fact", "end", "point", "glad", "hey", "hi", "thanks",
    "everyone", "someone", "anyone", "all", "other", "others", "kinda", "sorta", "lots", "tons", "number",
    "fave", "favorite", "favourite", "thank", "word", "eye", "best", "mix", "blast", "chance", "sense", "look",
    "feelin", "prob",
}
# Words that say when, not what: "an evening pottery class" is a pottery class.
WHEN_WORDS = {"morning", "afternoon", "evening", "night", "weekend", "summer", "winter", "spring", "autumn", "fall"}
# Heads that only frame an activity: "a pottery class" is about pottery.
FRAME_HEADS = {"class", "lesson", "course", "workshop", "session", "practice", "trip", "activity", "hobby", "club"}
# Adjectives of judgement or quantity say nothing about what a thing is: "a great counselor";
# nor do comparatives and superlatives ("the coolest party").
JUDGING_ADJECTIVES = {
    "good", "great", "nice", "awesome", "amazing", "cool", "wonderful", "lovely", "beautiful", "fun",
    "favorite", "favourite", "own", "new", "old", "big", "little", "small", "huge", "real", "whole",
    "best", "better", "bad", "hard", "tough", "special", "fantastic", "incredible", "super", "many",
    "much", "few", "several", "some", "more", "most", "other", "same", "such", "first", "last", "next",
    "recent", "different", "certain", "main", "perfect", "exciting", "happy", "long", "short", "entire",
    "helpful", "inspiring", "cute", "sweet", "crazy", "lot", "busy", "strong",
}
# The last word of a capitalised phrase the tagger calls a person but that names a dish or a work.
NOT_NAME_HEADS = {
    "pie", "cake", "soup", "salad", "pasta", "sauce", "bread", "pizza", "burger", "tacos", "curry",
    "stew", "chili", "casserole", "sandwich", "cookies", "muffins", "pancakes", "roast", "chicken",
    "game", "games", "show", "movie", "film", "book", "song", "album", "series", "festival", "club",
    "music", "memories", "art", "day", "night", "park", "street", "beach",
}
# Tagger labels of when, how many and how much: values, never entities.
VALUE_LABELS = {"DATE", "TIME", "CARDINAL", "ORDINAL", "QUANTITY", "MONEY", "PERCENT"}


def turn_body(chunk: ChunkText) -> str:
    """The turn's words after any "Name: " prefix."""
    prefix = SPEAKER_PREFIX.match(chunk.text)
    return chunk.text[prefix.end() if prefix else 0 :].strip()


@dataclass(frozen=True)
class Participants:
    speaker: Mention
    addressee: Mention | None

    @classmethod
    def of(cls, chunk: ChunkText) -> Participants:
        return cls(Mention(chunk.speaker, "person"), Mention(chunk.addressee, "person") if chunk.addressee else None)

    def by_name(self, text: str) -> Mention | None:
        """The participant a name means: their name or its first word, or a nickname of three or
        more letters that begins it ("Mel" for Melanie)."""
        word = text.strip().lower()
        for person in (self.speaker, self.addressee):
            if person is None or len(word) < 3:
                continue
            full = person.normalized_name
            if word == full or word == full.split()[0] or full.startswith(word):
                return person
        return None

    def by_pronoun(self, token) -> Mention | None:
        word = token.lower_
        if word in SPEAKER_WORDS and token.pos_ == "PRON":
            return self.speaker
        if (word in ADDRESSEE_WORDS and token.pos_ == "PRON") or (word in ADDRESSEE_SPELLINGS and token.text == word):
            return self.addressee
        return None


def concept_name(root) -> str | None:
    """The normalised name of the noun phrase `root` heads: its lemma with the compounds and
    classifying adjectives right before it, no determiner, possessive, quantity or judgement;
    a framing head ("class" of "pottery class") gives way to what it frames."""
    if root.pos_ != "NOUN" or not root.is_alpha or root.is_stop or root.lower_ in SPEAKER_WORDS | ADDRESSEE_WORDS | ADDRESSEE_SPELLINGS:
        return None
    words: list[str] = []
    for left in reversed(root.doc[root.left_edge.i : root.i]):
        # Each word modifies one after it inside the phrase: "mental health job", "Harry Potter movie".
        inside = left.i < left.head.i <= root.i and left.is_alpha
        compound = left.dep_ == "compound" and left.pos_ in {"NOUN", "PROPN"} and left.lower_ not in WHEN_WORDS
        classifying = (
            left.dep_ == "amod" and left.pos_ == "ADJ" and left.tag_ == "JJ" and left.lower_ not in JUDGING_ADJECTIVES
        )
        if not (inside and (compound or classifying)):
            break
        words.insert(0, left.text if left.pos_ == "PROPN" else left.lower_)
    # The lemmatiser cuts "politics" to "politic", and a capitalised name the tagger missed
    # ("a week in Leeds") is no plural.
    unlemmatised = root.lower_.endswith("ics") or (root.is_title and not root.is_sent_start)
    head = root.lower_ if unlemmatised else root.lemma_.lower()
    if head in FRAME_HEADS and words:
        return " ".join(words)
    if head in VAGUE_HEADS and not words:
        return None
    return " ".join([*words, head])


@dataclass
class _Turn:
    """What every sentence of one turn shares: its participants, its day, and the names it uses."""

    participants: Participants
    said_on: date | None
    # Names the turn also uses inside a sentence, so a sentence opening with one names it too.
    named_elsewhere: set[str]
    # People other than the participants the turn has named so far, in order.
    others: list[Mention] = field(default_factory=list)

    def the_other_person(self, earlier_in_sentence: list[Mention]) -> Mention | None:
        """Whom "she" or "his" means: the one other person named before it in the turn, if only one."""
        named = [m for m in [*self.others, *earlier_in_sentence] if m not in {self.participants.speaker, self.participants.addressee}]
        return named[0] if len(set(named)) == 1 else None


class _TurnSentence:
    """One sentence of a turn: what it names and the facts its clauses state about people."""

    def __init__(self, sentence, turn: _Turn) -> None:
        self.sentence = sentence
        self.turn = turn
        self.participants = turn.participants
        self.statement = sentence.text.strip()
        said_on = turn.said_on
        self.valid_from = (relative_day(self.statement, said_on) or said_on) if said_on else None
        self.mention_at: dict[int, Mention] = {}
        self.phatic = self._is_phatic()
        if not self.phatic:
            self._read_names()
            self._read_concepts()

    # Social sentences ------------------------------------------------------------------------

    def _is_phatic(self) -> bool:
        content = [t for t in self.sentence if not (t.is_punct or t.pos_ == "INTJ" or t.is_space)]
        # "Great, thanks!": thanks after an exclamation are thanks all the same.
        opening = list(takewhile(lambda t: t.pos_ == "ADJ" or t.lower_ in OPENERS, content))
        rest = " ".join(t.text for t in content[len(opening) :])
        thanks = any(THANKS.match(t.text) for t in opening) or THANKS.match(rest)
        if not content or thanks or PHATIC_PHRASES.search(self.statement):
            return True
        opener = self.sentence[0]
        if (opener.pos_ == "INTJ" or opener.lower_ in OPENERS) and not any(t.pos_ == "VERB" for t in content):
            # "Wow, what an amazing journey!": an exclamation, not a statement.
            return True
        return not any(
            (t.pos_ == "NOUN" and t.lemma_.lower() not in VAGUE_HEADS)
            or (t.pos_ == "PROPN" and self.participants.by_name(t.text) is None)
            or (t.pos_ == "VERB" and t.lemma_ not in EMPTY_VERBS)
            for t in content
        )

    # Entities --------------------------------------------------------------------------------

    def _read_names(self) -> None:
        for span in self.sentence.ents:
            if span.label_ in VALUE_LABELS:
                continue
            words = list(span)
            while words and (words[0].is_punct or words[0].pos_ == "INTJ" or words[0].lower_ in OPENERS):
                words.pop(0)
            while words and words[-1].is_punct:
                words.pop()
            if not words:
                continue
            name = span.doc[words[0].i : words[-1].i + 1]
            mention = self._named(name, span.label_)
            if mention is not None:
                for token in name:
                    self.mention_at[token.i] = mention
        named_here = [(i, m) for i, m in sorted(self.mention_at.items()) if m.kind == "person"]
        for token in self.sentence:
            person = self.participants.by_pronoun(token)
            if person is None and token.pos_ == "PROPN" and token.i not in self.mention_at and token.dep_ in ARGUMENT_DEPS:
                person = self.participants.by_name(token.text)
            if person is None and token.pos_ == "PRON" and token.lower_ in THIRD_PERSON_WORDS and self._may_refer_back(token):
                person = self.turn.the_other_person([m for i, m in named_here if i < token.i])
            if person is not None and token.i not in self.mention_at:
                self.mention_at[token.i] = person
        self.turn.others.extend(m for _, m in named_here if m not in {self.participants.speaker, self.participants.addressee})

    def _may_refer_back(self, pronoun) -> bool:
        """Not in a shared photo's caption (it describes the picture), nor after a person described
        but not named earlier in the sentence ("a trans girl and her family")."""
        if self.statement.startswith("["):
            return False
        return not any(t.lemma_.lower() in PERSON_NOUNS for t in self.sentence if t.i < pronoun.i and t.pos_ == "NOUN")

    def _named(self, name, label: str) -> Mention | None:
        """The entity a tagged span names, or None where the tagger is fooled by a capital."""
        participant = self.participants.by_name(name.text)
        if participant is not None:
            # "Hey Mel", "Wow, Caroline!": calling someone by name says nothing about them.
            return participant if name.root.dep_ in ARGUMENT_DEPS - {"compound", "appos", "conj"} else None
        kind = LABEL_KINDS.get(label)
        if kind is None or not any(c.isupper() or c.isdigit() for c in name.text) or any(re.fullmatch(WEEKDAY, t.lower_) for t in name):
            return None
        common = len(name) == 1 and f" {name.text.lower()}" in f" {self.sentence.doc.text}"
        if common or all(t.tag_ in {"NNS", "NN"} for t in name):
            # "Pottery's so relaxing" beside "pottery class", "Success": a common noun, capitalised.
            concept = concept_name(name.root)
            return Mention(concept, CONCEPT) if concept else None
        if kind in {"person", "place"} and name[-1].lower_ in NOT_NAME_HEADS:
            # "Chicken Pot Pie", "Games": a dish or a work, not a person or a place.
            return Mention(name.text.lower(), CONCEPT)
        before = self.sentence[: name.start - self.sentence.start]
        if len(name) == 1 and all(t.is_punct or t.pos_ == "INTJ" or t.lower_ in OPENERS for t in before):
            # A capitalised word opening a sentence is a name only if the turn also capitalises it elsewhere.
            return Mention(name.text, kind) if name.text in self.turn.named_elsewhere else None
        return Mention(name.text, kind)

    def _read_concepts(self) -> None:
        for token in self.sentence:
            if token.i in self.mention_at:
                continue
            name = None
            if token.pos_ == "NOUN" and token.dep_ != "compound" and token.ent_type_ not in VALUE_LABELS:
                name = concept_name(token)
            elif (
                token.tag_ == "VBG" and token.dep_ in {"xcomp", "dobj"} and token.head.lemma_ in ACTIVITY_VERBS
                and token.lemma_ not in EMPTY_VERBS | {"have", "make", "take"}
            ):
                name = token.lower_
            if name:
                self.mention_at[token.i] = Mention(name, CONCEPT)

    @property
    def mentions(self) -> list[Mention]:
        return list(dict.fromkeys(self.mention_at[i] for i in sorted(self.mention_at)))

    # Facts -----------------------------------------------------------------------------------

    def facts(self) -> list[ExtractedFact]:
        # A question asserts nothing: "Have you had any news?" is not news.
        if self.phatic or self.statement.endswith("?"):
            return []
        found: dict[tuple, ExtractedFact] = {}
        for token in self.sentence:
            if token.pos_ in {"VERB", "AUX"} and not _negated(token):
                for fact in self._clause_facts(token):
                    found.setdefault((fact.subject, fact.predicate, fact.object, fact.object_value), fact)
        for fact in self._possession_facts():
            found.setdefault((fact.subject, fact.predicate, fact.object, fact.object_value), fact)
        return list(found.values())

    def _person(self, token) -> Mention | None:
        mention = self.mention_at.get(token.i)
        return mention if mention is not None and mention.kind == "person" else None

    def _subjects(self, verb) -> list[Mention]:
        own = [child for child in verb.children if child.dep_ in SUBJECTS]
        if own:
            return [m for m in (self._person(t) for t in [own[0], *own[0].conjuncts]) if m is not None]
        if verb.dep_ in {"conj", "xcomp"} and verb.head.pos_ in {"VERB", "AUX"}:
            return self._subjects(verb.head)
        if verb.dep_ == "ROOT" and verb.tag_ in {"VB", "VBP"} and verb.lemma_ in SUBJECTLESS_FEELINGS:
            return [self.participants.speaker]
        return []

    def _entity_in(self, token) -> Mention | None:
        """The entity a token names, or one its phrase names ("the Tessel sensor array")."""
        if token.i in self.mention_at:
            return self.mention_at[token.i]
        for child in token.lefts:
            if child.dep_ in {"compound", "amod", "nmod"} and child.i in self.mention_at:
                return self.mention_at[child.i]
        return None

    def _objects_of(self, token) -> list[Mention]:
        """Entities a complement names: itself and its coordinated siblings, or for a clause
        complement ("about going camping"), what that clause's verb takes."""
        if token.pos_ in {"VERB", "AUX"} and token.i not in self.mention_at:
            return [m for child in token.children if child.dep_ in {"dobj", "xcomp", "attr"} for m in self._objects_of(child)]
        return [m for m in (self._entity_in(t) for t in [token, *token.conjuncts]) if m is not None]

    def _clause_facts(self, verb) -> list[ExtractedFact]:
        if verb.dep_ in {"relcl", "acl", "amod"} or (verb.tag_ == "VBG" and verb.dep_ in {"xcomp", "dobj"} and verb.i in self.mention_at):
            return []
        subjects = self._subjects(verb)
        if not subjects:
            return []
        particle = " ".join(child.lower_ for child in verb.children if child.dep_ == "prt")
        action = f"{_intent(verb)} {verb.lemma_} {particle}".strip()
        pairs: list[tuple[str, Mention | None, str | None]] = []
        for child in verb.children:
            if child.dep_ in {"dobj", "attr", "dative"} or (child.dep_ == "xcomp" and child.i in self.mention_at):
                pairs.extend((action, m, None) for m in self._objects_of(child))
            elif child.dep_ == "acomp":
                # "I was so happy", "I'm feeling confident", "I got stressed": how someone is.
                if child.pos_ == "ADJ" and verb.lemma_ in LINKING_VERBS:
                    pairs.append((verb.lemma_, None, child.lower_))
                pairs.extend(self._prepositional(child, f"{action} {child.lower_}"))
        pairs.extend(self._prepositional(verb, action))
        return [
            ExtractedFact(subject, predicate_name(predicate), self.statement, target, value, self.valid_from)
            for predicate, target, value in pairs
            for subject in subjects
            if target != subject
        ]

    def _prepositional(self, head, action: str) -> list[tuple[str, Mention | None, str | None]]:
        return [
            (f"{action} {prep.lower_}", m, None)
            for prep in head.children
            if prep.dep_ == "prep"
            for obj in prep.children
            if obj.dep_ in {"pobj", "pcomp"}
            for m in self._objects_of(obj)
        ]

    def _possession_facts(self) -> list[ExtractedFact]:
        """"my kids", "your painting", "Jon's studio": the owner has the thing."""
        found = []
        for token in self.sentence:
            if token.dep_ != "poss":
                continue
            owner = self._person(token)
            owned = self._entity_in(token.head)
            if owner is not None and owned is not None and owned != owner:
                found.append(ExtractedFact(owner, "have", self.statement, owned, None, self.valid_from))
        return found


def _intent(verb) -> str:
    """What a clause is yet to do, as its predicate's prefix: "I will visit Paris" and "I'm gonna
    visit Paris" -> will_visit, "you'd love this novel" -> would_love, "I want to learn piano" ->
    want_to_learn; "" for what is or was."""
    auxiliaries = {child.lower_ for child in verb.children if child.dep_ == "aux"}
    if auxiliaries & FUTURE_AUXILIARIES:
        return "will"
    if auxiliaries & HYPOTHETICAL_AUXILIARIES:
        return "would"
    if verb.dep_ == "xcomp" and any(child.dep_ == "aux" and child.tag_ == "TO" for child in verb.children):
        head = verb.head
        if head.lemma_ == "go" and head.tag_ == "VBG":
            return "will"
        if head.lemma_ in INTENT_VERBS:
            return f"{head.lemma_} to"
    return ""


def _negated(verb) -> bool:
    return any(child.dep_ == "neg" for child in verb.children)


def read_turns(nlp, turns: Sequence[ChunkText], batch_size: int) -> list[ChunkExtraction]:
    """The entities and facts of each turn, in order, parsed in batches with `nlp`."""
    bodies = [turn_body(turn) for turn in turns]
    results = []
    for chunk, doc in zip(turns, nlp.pipe(bodies, batch_size=batch_size), strict=True):
        extraction = ChunkExtraction(chunk.id)
        sentences = list(doc.sents)
        named_elsewhere = {span.text for span in doc.ents if all(span.start != s.start for s in sentences)}
        turn = _Turn(Participants.of(chunk), chunk.observed_at, named_elsewhere)
        for sentence in sentences:
            read = _TurnSentence(sentence, turn)
            extraction.facts.extend(read.facts())
            extraction.mentions.extend(read.mentions)
        results.append(extraction)
    return results
