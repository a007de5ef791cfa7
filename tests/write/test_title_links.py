"""Title links: a chunk that names another page's title links to it."""

from __future__ import annotations

import pytest

from pipelines.accents import fold_accents
from pipelines.write.graph.title_links import TitleIndex, linkable, links_of_chunk, refresh_title_links

# (document id, page name): the names the database gives "Green (Steve Hillage album)" and
# "Green (film)" are both "Green".
NAMES = [
    ("hank", "Hank Snow"),
    ("green-album", "Green"),
    ("green-film", "Green"),
    ("nashville", "Nashville, Tennessee"),
    ("ac", "AC"),
    ("ipsum", "lorem ipsum"),
    ("tekeze", "Tekezé River"),
]
INDEX = TitleIndex.of(NAMES)


@pytest.mark.parametrize(("name", "expected"), [("Hank Snow", True), ("AC", False), ("lorem ipsum", False)])
def test_a_name_links_only_when_it_can_be_told_from_ordinary_words(name, expected):
    assert linkable(name) is expected


def test_a_page_is_named_by_its_title_without_the_qualifier(database):
    with database.connection() as connection:
        for id, title in [("a", "Green (Steve Hillage album)"), ("b", "Nashville, Tennessee"), ("c", "Brother (song) (remix)")]:
            connection.execute("INSERT INTO document (id, title, body, content_hash) VALUES (%s, %s, '', 'h')", (id, title))
        names = connection.execute("SELECT title_name, title_name_lower FROM document ORDER BY id").fetchall()
    assert names == [("Green", "green"), ("Nashville, Tennessee", "nashville, tennessee"), ("Brother (song)", "brother (song)")]


ACCENTED = ["Aschenbrödel", "Tekezé River", "Akinoshū Kenji", "Łódź", "Straße", "ﬁnal Ø", "Cañón", "한국", "plain"]


def test_the_database_folds_accents_exactly_as_python_does(database):
    with database.connection() as connection:
        folded = [row[0] for row in connection.execute(
            "SELECT lanegraph_fold_accents(name) FROM unnest(%s::text[]) WITH ORDINALITY AS t(name, n) ORDER BY n",
            (ACCENTED,),
        )]
    assert folded == [fold_accents(name) for name in ACCENTED]
    assert folded[:3] == ["Aschenbrodel", "Tekeze River", "Akinoshu Kenji"]


def test_title_lookup_keys_are_lower_case_with_accents_folded(database):
    with database.connection() as connection:
        connection.execute(
            "INSERT INTO document (id, title, body, content_hash) VALUES ('a', 'Tekezé River (Ethiopia)', '', 'h')"
        )
        keys = connection.execute("SELECT title_lower, title_name_lower FROM document").fetchone()
    assert keys == ("tekeze river (ethiopia)", "tekeze river")


def test_a_one_word_name_of_a_stopword_is_not_distinctive(database):
    titles = {"a": "Because (Beatles song)", "b": "in", "c": "All by Myself", "d": "Summary", "e": "Green (film)"}
    with database.connection() as connection:
        for id, title in titles.items():
            connection.execute("INSERT INTO document (id, title, body, content_hash) VALUES (%s, %s, '', 'h')", (id, title))
        distinctive = dict(connection.execute("SELECT id, title_name_is_distinctive FROM document").fetchall())
    assert distinctive == {"a": False, "b": False, "c": True, "d": True, "e": True}


def test_a_page_whose_name_is_a_stopword_gets_no_links(database):
    with database.connection() as connection:
        _document(connection, "because", "Because (Beatles song)", "A song on Abbey Road.")
        _document(connection, "notes", "Notes", "Because the tour ended, Because was never played live.")
    assert refresh_title_links(database).links == 0


def test_a_chunk_links_to_every_page_whose_title_it_names():
    links = links_of_chunk(INDEX, "song#0", "song", "Hello Love was a hit for Hank Snow, who lived in Nashville, Tennessee.")
    assert {(link.linked_document_id, link.name) for link in links} == {
        ("hank", "hank snow"), ("nashville", "nashville, tennessee"),
    }


def test_a_possessive_names_the_page():
    links = links_of_chunk(INDEX, "album#0", "album", "Hank Snow’s first hit and Hank Snow's last.")
    assert [(link.linked_document_id, link.name) for link in links] == [("hank", "hank snow")]


@pytest.mark.parametrize("text", ["It joins the Tekezé River.", "It joins the Tekeze River."])
def test_a_name_links_with_or_without_its_accents(text):
    links = links_of_chunk(INDEX, "atbarah#0", "atbarah", text)
    assert [(link.linked_document_id, link.name) for link in links] == [("tekeze", "tekeze river")]


def test_a_name_shared_by_several_titles_links_to_each():
    links = links_of_chunk(INDEX, "review#0", "review", "Hillage released Green in 1978.")
    assert {link.linked_document_id for link in links} == {"green-album", "green-film"}


@pytest.mark.parametrize("text", [
    "The walls were painted green.",          # a lower-case word is not a name
    "Greenland is an island.",                # whole words only
    "Hank Snowden played the fiddle.",
    "The AC unit failed.",                    # too short to tell from an abbreviation
])
def test_ordinary_words_do_not_link(text):
    assert links_of_chunk(INDEX, "other#0", "other", text) == []


def test_a_page_does_not_link_to_itself():
    assert links_of_chunk(INDEX, "hank#0", "hank", "Hank Snow moved to Nashville in 1949.") == []


def _document(connection, id, title, body, scopes=(), retracted=False):
    connection.execute(
        "INSERT INTO document (id, title, body, content_hash, scopes, retracted_at)"
        " VALUES (%s, %s, %s, 'h', %s, CASE WHEN %s THEN now() END)",
        (id, title, body, list(scopes), retracted),
    )
    connection.execute(
        "INSERT INTO chunk (id, document_id, position, text, token_count, content_hash, scopes)"
        " VALUES (%s, %s, 0, %s, 8, 'h', %s)",
        (f"{id}#0", id, body, list(scopes)),
    )


def test_links_carry_both_ends_scopes_and_skip_retracted_pages(database):
    with database.connection() as connection:
        _document(connection, "snow", "Hank Snow", "Hank Snow sang country songs.")
        _document(connection, "heron", "Project Heron", "Project Heron ships in May.", scopes=["team-a"])
        _document(connection, "memo", "Memo", "Hank Snow and Project Heron are both mentioned here.", scopes=["team-b"])
        _document(connection, "old", "Old Plan (2019)", "Nothing left.", retracted=True)
        _document(connection, "notes", "Notes", "The Old Plan named Hank Snow.")
    report = refresh_title_links(database)
    with database.connection() as connection:
        rows = connection.execute(
            "SELECT chunk_id, linked_document_id, name, scopes FROM title_link ORDER BY chunk_id, linked_document_id"
        ).fetchall()
    assert rows == [
        ("memo#0", "heron", "project heron", ["team-a", "team-b"]),
        ("memo#0", "snow", "hank snow", ["team-b"]),
        ("notes#0", "snow", "hank snow", []),
    ]
    assert (report.links, report.linking_chunks, report.linked_documents) == (3, 2, 2)


def test_a_refresh_replaces_the_links_of_changed_text(database):
    with database.connection() as connection:
        _document(connection, "snow", "Hank Snow", "Hank Snow sang country songs.")
        _document(connection, "notes", "Notes", "Hank Snow toured Canada.")
    refresh_title_links(database)
    with database.connection() as connection:
        connection.execute("UPDATE chunk SET text = 'Nobody is named here.' WHERE id = 'notes#0'")
    report = refresh_title_links(database)
    with database.connection() as connection:
        assert connection.execute("SELECT count(*) FROM title_link").fetchone()[0] == 0
    assert (report.links, report.inserted, report.deleted) == (0, 0, 1)


def test_a_refresh_writes_only_the_links_that_changed(database):
    with database.connection() as connection:
        _document(connection, "snow", "Hank Snow", "Hank Snow sang country songs.")
        _document(connection, "heron", "Project Heron", "Project Heron ships in May.")
        _document(connection, "memo", "Memo", "Hank Snow and Project Heron are both named here.")
    refresh_title_links(database)
    with database.connection() as connection:
        kept_before = connection.execute("SELECT xmin::text FROM title_link WHERE linked_document_id = 'snow'").fetchone()
        connection.execute("UPDATE document SET scopes = '{team-a}' WHERE id = 'heron'")
        _document(connection, "notes", "Notes", "Project Heron slipped.")
    report = refresh_title_links(database)
    with database.connection() as connection:
        kept_after = connection.execute("SELECT xmin::text FROM title_link WHERE linked_document_id = 'snow'").fetchone()
        rows = connection.execute(
            "SELECT chunk_id, linked_document_id, scopes FROM title_link ORDER BY chunk_id, linked_document_id"
        ).fetchall()
    assert kept_after == kept_before
    assert rows == [("memo#0", "heron", ["team-a"]), ("memo#0", "snow", []), ("notes#0", "heron", ["team-a"])]
    assert (report.links, report.inserted, report.deleted) == (3, 2, 1)
