"""A conversation ingested as JSONL and asked about: turns keep their speaker, session and time,
find shows them on each line, a turn is a page of its own, and the reply after a found turn rises."""

from __future__ import annotations

from collections.abc import Callable

import dagster as dg
import pytest

from pipelines.config import LanegraphConfig, load_config
from pipelines.definitions import defs
from pipelines.orchestration.runner import ingest
from pipelines.read.find import FindResult, find
from pipelines.resources.database import Database
from tests import REPOSITORY
from tests.read.planting import EMBEDDER

CHATS = REPOSITORY / "pipelines" / "demo_corpus" / "documents" / "mentoring-chats.jsonl"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def chats(make_schema_url: Callable[[], str]) -> Database:
    url = make_schema_url()
    with dg.DagsterInstance.ephemeral() as instance:
        ingest(CHATS, definitions=defs, instance=instance, database_url=url)
    database = Database(url)
    yield database
    database.close()


def with_plan(settings: dict[str, object] | None = None, **changes: object) -> LanegraphConfig:
    config = load_config(REPOSITORY / "lanes.yaml")
    return config.model_copy(update={
        "plan": config.plan.model_copy(update=changes),
        "settings": config.settings.model_copy(update=settings or {}),
    })


def sources(result: FindResult) -> list[str]:
    return [candidate.document_id for candidate in result.candidates if candidate.lane == "sources"]


def test_each_turn_keeps_its_conversation_session_speaker_and_place(chats: Database) -> None:
    with chats.connection() as connection:
        rows = connection.execute(
            "SELECT id, conversation, session, speaker, turn, to_char(observed_at, 'YYYY-MM-DD') FROM document ORDER BY session, turn"
        ).fetchall()
    assert len(rows) == 13
    assert rows[0] == ("mentoring-chats:1:1", "mentoring-chats", "1", "Lucia Ferraro", 1, "2025-06-02")
    assert rows[-1] == ("mentoring-chats:2:6", "mentoring-chats", "2", "Lucia Ferraro", 6, "2025-06-16")


def test_a_turns_line_shows_its_speaker_and_date(chats: Database) -> None:
    result = find(chats, "What did Lucia sign up for at the Leeds craft centre?", config=with_plan(), embedder=EMBEDDER)
    best = next(candidate for candidate in result.candidates if candidate.lane == "sources")
    assert best.document_id == "mentoring-chats:2:4"
    assert "(observed 2025-06-16)" in best.line and "Lucia Ferraro: Sounds intense." in best.line


def test_the_reply_after_a_found_turn_rises(chats: Database) -> None:
    # The question shares its words with Lucia's question (turn 5); Saoirse's reply (turn 6)
    # answers it without any of them. Lending the reply twice the found turn's score puts it first.
    question = "What should Lucia prepare for the design review next month?"
    lending = {"turn_reply_weight": 2.0, "turn_context_weight": 0.0}
    with_turns = sources(find(chats, question, config=with_plan(lending, turns=True), embedder=EMBEDDER))
    without = sources(find(chats, question, config=with_plan(lending, turns=False), embedder=EMBEDDER))
    assert without[0] == "mentoring-chats:1:5"
    assert with_turns[0] == "mentoring-chats:1:6"


def test_two_turns_of_one_session_are_two_pages(chats: Database) -> None:
    # Both climbing turns are in session 1, whose turns share one title.
    question = "forearms still hurt, climbing to switch off"
    ranked = sources(find(chats, question, config=with_plan(turns=False), embedder=EMBEDDER))
    assert set(ranked[:2]) == {"mentoring-chats:1:3", "mentoring-chats:1:4"}
