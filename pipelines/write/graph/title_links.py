"""Title links: which chunk names which other document's title.

A page's title is its main entity ("Hank Snow", "Green (Steve Hillage album)"), and a chunk that
names it points at the page, as a hyperlink would. The small extraction model misses many such
names (songs, albums, works, unusual spellings), so the titles themselves are looked up in the
text: a page is named by its title without the parenthesised qualifier ("Green", the database's
`document.title_name`), matched as whole words with their capitals, since lower-case words
("green") are ordinary words, not names, and with accents folded on both sides ("Tekeze River" names
"Tekezé River"), the name stored folded in lower case, as the title lookup keys are.

The set of titles is corpus-wide (a new page makes every chunk that names it link to it), so every
refresh scans every chunk; the scan is cheap (about 2,500 chunks a second), and only the links that
changed are written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pipelines.accents import fold_accents
from pipelines.resources.database import Database
from pipelines.write.graph import title_link_sql as q
from pipelines.write.progress import Log, silent, step_progress

STEP = "title_links"
# Words of a token: letters and digits, joined by inner hyphens, apostrophes and dots ("Rock'n'roll",
# "U.S.", "Jay-Z"); any other character is a token of its own, so "Snow," ends at the comma.
TOKEN = re.compile(r"\w+(?:[-'’.]\w+)*|[^\w\s]")
POSSESSIVE = re.compile(r"['’]s$")
# Shorter names ("Mr", "AC") are abbreviations more often than titles.
MIN_NAME_CHARS = 3
# Chunks matched between progress reports.
CHUNKS_PER_REPORT = 2000


def linkable(name: str) -> bool:
    """Whether a page's name can be told from ordinary words in a text: not shorter than
    MIN_NAME_CHARS, and not starting in lower case."""
    return len(name) >= MIN_NAME_CHARS and not name[0].islower()


def name_tokens(text: str) -> tuple[str, ...]:
    """The text's tokens, accents folded and a possessive's "'s" dropped: "Pearl Jam's second album"
    names Pearl Jam."""
    return tuple(POSSESSIVE.sub("", token) for token in TOKEN.findall(fold_accents(text)))


@dataclass(frozen=True)
class TitleIndex:
    """Every linkable title's tokens, with its name (folded, in lower case) and the documents it titles."""

    documents: Mapping[tuple[str, ...], tuple[str, tuple[str, ...]]]
    # The token counts of the titles starting with each token, longest first: a text is scanned
    # once, trying at each token only the lengths some title starting there has.
    lengths: Mapping[str, tuple[int, ...]]

    @classmethod
    def of(cls, pages: Iterable[tuple[str, str]]) -> TitleIndex:
        """From (document id, page name) pairs."""
        documents: dict[tuple[str, ...], list[str]] = {}
        names: dict[tuple[str, ...], str] = {}
        for document_id, name in pages:
            if linkable(name):
                tokens = name_tokens(name)
                documents.setdefault(tokens, []).append(document_id)
                names.setdefault(tokens, fold_accents(name.lower()))
        lengths: dict[str, set[int]] = {}
        for tokens in documents:
            lengths.setdefault(tokens[0], set()).add(len(tokens))
        return cls(
            documents={tokens: (names[tokens], tuple(sorted(ids))) for tokens, ids in documents.items()},
            lengths={first: tuple(sorted(sizes, reverse=True)) for first, sizes in lengths.items()},
        )

    def named_in(self, text: str) -> dict[str, tuple[str, ...]]:
        """The titles the text names, by their folded lower-case name, with the documents they title."""
        tokens = name_tokens(text)
        named: dict[str, tuple[str, ...]] = {}
        for start, token in enumerate(tokens):
            for length in self.lengths.get(token, ()):
                titled = self.documents.get(tokens[start:start + length])
                if titled is not None:
                    name, documents = titled
                    named[name] = documents
        return named


@dataclass(frozen=True)
class TitleLink:
    chunk_id: str
    document_id: str
    linked_document_id: str
    name: str


def links_of_chunk(index: TitleIndex, chunk_id: str, document_id: str, text: str) -> list[TitleLink]:
    """The chunk's links to every other document whose title it names."""
    return [
        TitleLink(chunk_id, document_id, linked, name)
        for name, documents in sorted(index.named_in(text).items())
        for linked in documents
        if linked != document_id
    ]


@dataclass
class TitleLinkReport:
    chunks: int = 0
    linkable_titles: int = 0
    links: int = 0
    inserted: int = 0
    deleted: int = 0
    linked_documents: int = 0
    linking_chunks: int = 0
    most_linked: list[tuple[str, int]] = field(default_factory=list)


def _write_difference(database: Database, links: Sequence[TitleLink]) -> tuple[int, int]:
    """The stored links made equal to `links` in one transaction (a reader sees the old set or the
    new one), writing only what differs; returns how many were inserted and deleted."""
    with database.connection() as connection, connection.transaction():
        connection.execute(q.CREATE_FOUND_LINKS)
        with connection.cursor().copy(q.COPY_FOUND_LINKS) as copy:
            for link in links:
                copy.write_row((link.chunk_id, link.document_id, link.linked_document_id, link.name))
        connection.execute(q.SCOPE_FOUND_LINKS)
        deleted = connection.execute(q.DELETE_LOST_LINKS).rowcount
        inserted = connection.execute(q.INSERT_NEW_LINKS).rowcount
    return inserted, deleted


def refresh_title_links(database: Database, log: Log = silent) -> TitleLinkReport:
    """Every chunk's title links, recomputed from the documents' titles and the chunks' text."""
    with database.connection() as connection:
        index = TitleIndex.of(connection.execute(q.DOCUMENT_NAMES).fetchall())
        chunks = connection.execute(q.CHUNK_TEXTS).fetchall()
    advance = step_progress(STEP, len(chunks), "chunks", log)
    links: list[TitleLink] = []
    for done, (chunk_id, document_id, text) in enumerate(chunks, 1):
        links.extend(links_of_chunk(index, chunk_id, document_id, text))
        if done % CHUNKS_PER_REPORT == 0 or done == len(chunks):
            advance(done)
    inserted, deleted = _write_difference(database, links)
    with database.connection() as connection:
        most_linked = connection.execute(q.MOST_LINKED_DOCUMENTS).fetchall()
    return TitleLinkReport(
        chunks=len(chunks),
        linkable_titles=sum(len(documents) for _, documents in index.documents.values()),
        links=len(links),
        inserted=inserted,
        deleted=deleted,
        linked_documents=len({link.linked_document_id for link in links}),
        linking_chunks=len({link.chunk_id for link in links}),
        most_linked=[(title, count) for title, count in most_linked],
    )
