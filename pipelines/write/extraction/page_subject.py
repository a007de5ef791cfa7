"""A page's main entity, named by its title, and the references in the page that mean it.

In an encyclopedic page the title names the subject, and the text mostly refers to it as "he",
"it", "its" or "the album". spaCy's small model resolves none of these, so the page's own facts
("He was born in Tulsa.") lose their subject. The rules here are deliberately conservative:
he/she/his/her only for a person (or a subject of unknown kind), it/its only for a non-person,
they/their for either; a definite reference ("the album") only with a noun the page itself uses
for its subject (the title's qualifier "(Steve Hillage album)", or what the page says its subject
is: "Green is the second album ..."); and never when an entity of a compatible kind was named
earlier in the same sentence, which the reference could mean instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pipelines.write.extraction.extraction_model import ChunkText, Mention
from pipelines.write.extraction.ontology import guess_kind, kind_from_role, normalize_entity_name

PERSON_PRONOUNS = {"he", "she", "his", "her", "him"}
THING_PRONOUNS = {"it", "its"}
EITHER_PRONOUNS = {"they", "their"}
# The qualifier's head nouns whose kind the page's subject takes: "(band)", "(1999 film)".
QUALIFIER_KINDS = {
    "band": "organization", "company": "organization", "group": "organization", "club": "organization",
    "party": "organization", "university": "organization", "magazine": "organization",
    "newspaper": "organization", "film": "document", "album": "document", "song": "document",
    "novel": "document", "book": "document", "single": "document", "series": "document",
    "play": "document", "poem": "document", "city": "place", "town": "place", "village": "place",
    "river": "place", "county": "place", "state": "place", "country": "place", "island": "place",
    "mountain": "place", "lake": "place", "district": "place", "region": "place",
    "actor": "person", "actress": "person", "singer": "person", "musician": "person",
    "footballer": "person", "politician": "person", "writer": "person", "author": "person",
    "director": "person", "painter": "person", "rapper": "person", "composer": "person",
}
# Title words that may stay lower case in a name ("Lord of the Rings", "Bank of America").
NAME_FUNCTION_WORDS = {"of", "the", "and", "a", "an", "in", "on", "for", "to", "de", "la", "von", "van", "&"}


def names_an_entity(title_name: str) -> bool:
    """A title that reads as a name ("Hank Snow", "Green") rather than a description ("Company
    overview"): every word but function words starts with a capital or a digit."""
    words = title_name.split()
    return bool(words) and all(
        word[0].isupper() or word[0].isdigit() or word.lower() in NAME_FUNCTION_WORDS for word in words
    ) and (words[0][0].isupper() or words[0][0].isdigit())


@dataclass
class PageSubject:
    """The main entity of one page, and what the page has told us about it so far."""

    name: str
    kind: str | None = None
    # Nouns the page uses for its subject: the qualifier's head and the nouns it is defined by.
    nouns: set[str] = field(default_factory=set)

    @property
    def normalized_name(self) -> str:
        return normalize_entity_name(self.name)

    def mention(self) -> Mention:
        return Mention(self.name, self.kind or guess_kind(self.name))

    def learn_from(self, mentions: Iterable[Mention]) -> None:
        """The kind the tagger gives the title's name where the page names it outright."""
        if self.kind is None:
            self.kind = next((m.kind for m in mentions if m.normalized_name == self.normalized_name), None)

    def learn_definition(self, noun: str) -> None:
        """The page says what its subject is ("... is the second album by ..."): the noun refers to
        it from now on, and a role noun decides its kind."""
        self.nouns.add(noun)
        self.kind = QUALIFIER_KINDS.get(noun) or kind_from_role(noun) or self.kind

    def pronoun_fits(self, pronoun: str) -> bool:
        if pronoun in PERSON_PRONOUNS:
            return self.kind in {None, "person"}
        if pronoun in THING_PRONOUNS:
            # Unknown, the kind a name's form suggests decides: "it" never means "Odile Marchetti".
            return (self.kind or guess_kind(self.name)) != "person"
        return pronoun in EITHER_PRONOUNS

    def rival(self, pronoun_or_noun: str, earlier: Iterable[Mention]) -> bool:
        """An entity named before the reference in its sentence that it could mean instead."""
        for mention in earlier:
            if mention.normalized_name == self.normalized_name:
                continue
            if pronoun_or_noun in PERSON_PRONOUNS and mention.kind == "person":
                return True
            if pronoun_or_noun in THING_PRONOUNS and mention.kind != "person":
                return True
            if pronoun_or_noun in EITHER_PRONOUNS:
                return True
            if pronoun_or_noun in self.nouns and mention.kind == (self.kind or mention.kind):
                return True
        return False


class PageSubjects:
    """One PageSubject per page title across the chunks of an extraction run, so what an earlier
    chunk of the page taught (its subject's kind) holds in the later ones."""

    def __init__(self) -> None:
        self._pages: dict[tuple[str, str], PageSubject] = {}

    def of(self, chunk: ChunkText) -> PageSubject | None:
        if not names_an_entity(chunk.title_name):
            return None
        key = (chunk.title_name, chunk.title_qualifier)
        if key not in self._pages:
            self._pages[key] = _from_title(chunk.title_name, chunk.title_qualifier)
        return self._pages[key]


def _from_title(name: str, qualifier: str) -> PageSubject:
    page = PageSubject(name)
    words = qualifier.lower().split()
    if words:
        head = words[-1]
        page.nouns.add(head)
        page.kind = QUALIFIER_KINDS.get(head) or kind_from_role(head)
    return page
