"""Each lane finds what only it can find, through the one compiled statement."""

from __future__ import annotations

from pipelines.config import LanegraphConfig
from pipelines.read.find import FindResult, find
from pipelines.resources.database import Database
from pipelines.write.graph.title_links import refresh_title_links
from tests.read.planting import EMBEDDER, Planter, vector


def ask(world: Database, config: LanegraphConfig, question: str) -> FindResult:
    return find(world, question, config=config, embedder=EMBEDDER)


def by_lane(result: FindResult, lane: str) -> dict[str, str]:
    return {c.evidence_id: c.line for c in result.candidates if c.lane == lane}


def test_the_walk_finds_a_fact_two_hops_from_the_named_entity(world, config):
    result = ask(world, config, "Who does Zorblax work with?")
    facts = by_lane(result, "facts")
    assert "fact:f-walk-2" in facts and facts["fact:f-walk-2"] == "Quentin trains with Marlo."
    without_walk = config.model_copy(update={"plan": config.plan.model_copy(update={"hops": 0})})
    assert "fact:f-walk-2" not in by_lane(ask(world, without_walk, "Who does Zorblax work with?"), "facts")


def test_bm25_finds_a_chunk_that_neither_dense_nor_title_ranking_can(world, config):
    result = ask(world, config, "What happened to QX-7781?")
    sources = {c.evidence_id: c for c in result.candidates if c.lane == "sources"}
    assert "chunk:maintenance#0" in sources
    assert sources["chunk:maintenance#0"].line.startswith("Maintenance Notes: Gimbal part QX-7781")
    assert not sources["chunk:maintenance#0"].direct
    with world.connection() as connection:
        (distance,) = connection.execute(
            "SELECT embedding <=> %s FROM chunk WHERE id = 'maintenance#0'", (vector("What happened to QX-7781?"),)
        ).fetchone()
    assert distance > config.settings.find_max_distance


def test_a_title_named_in_the_question_brings_its_chunks_as_direct_evidence(world, config):
    result = ask(world, config, "What did the Corvane Cold Chain Audit conclude?")
    sources = {c.evidence_id: c for c in result.candidates if c.lane == "sources"}
    corvane = sources["chunk:corvane#0"]
    assert corvane.direct and corvane.source_title == "Corvane Cold Chain Audit"
    assert corvane.source_uri == "file://corvane.md" and corvane.document_id == "corvane"
    assert all(not c.direct for c in result.candidates if c is not corvane)


def test_a_title_counts_only_as_whole_words(world, config):
    result = ask(world, config, "What did the Corvane Cold Chain Auditors conclude?")
    assert "chunk:corvane#0" not in by_lane(result, "sources")


def test_a_title_named_without_its_accents_is_named(world, config):
    for question in ("When was the Zoltan Varkonyi Lighthouse lit?", "When was the Zoltán Várkonyi Lighthouse lit?"):
        zoltan = next(c for c in ask(world, config, question).candidates if c.evidence_id == "chunk:zoltan#0")
        assert zoltan.direct


def test_a_title_of_one_stopword_names_nothing(world, config):
    result = ask(world, config, "What did the Corvane Cold Chain Audit conclude in the end?")
    assert "chunk:stopword#0" not in by_lane(result, "sources")


def test_a_title_named_without_its_qualifier_lifts_its_page_by_its_own_bonus(world, config):
    question = "What cargo did the Kestrel Moorhen haul?"

    def sources_with(bonus: float) -> list[str]:
        settings = config.settings.model_copy(update={"unqualified_title_bonus": bonus})
        result = ask(world, config.model_copy(update={"settings": settings}), question)
        assert not next(c for c in result.candidates if c.evidence_id == "chunk:kestrel#0").direct
        return list(by_lane(result, "sources"))

    lifted, flat = sources_with(1.0), sources_with(0.0)
    assert lifted.index("chunk:kestrel#0") < lifted.index("chunk:manifest#0")
    assert flat.index("chunk:kestrel#0") > flat.index("chunk:manifest#0")


def test_a_title_many_passages_name_lifts_its_page_less(world, config):
    question = "Which river turns the wheel of Brannock Mill in Velsia?"

    def sources_with(common_title_mentions: float) -> list[str]:
        settings = config.settings.model_copy(update={"common_title_mentions": common_title_mentions})
        result = ask(world, config.model_copy(update={"settings": settings}), question)
        assert next(c for c in result.candidates if c.evidence_id == "chunk:velsia#0").direct
        return list(by_lane(result, "sources"))

    # Five passages name Velsia: at 1 its bonus is a fifth, at 5 or more the whole bonus.
    rare, common = sources_with(5.0), sources_with(1.0)
    assert rare.index("chunk:brannock#0") < rare.index("chunk:velsia#0") < rare.index("chunk:wheel#0")
    assert common.index("chunk:brannock#0") < common.index("chunk:wheel#0") < common.index("chunk:velsia#0")


def test_a_title_inside_a_longer_named_title_names_nothing(world, config):
    assert "chunk:gate#0" not in by_lane(ask(world, config, "Who guards the Orsolan Gate?"), "sources")
    alone = next(c for c in ask(world, config, "Who guards the Gate?").candidates if c.evidence_id == "chunk:gate#0")
    assert alone.direct


def test_a_second_document_of_a_page_yields_one_place_to_the_next_page(world, config):
    result = ask(world, config, "Where did the Ferrow Glassworks ship its zandolite?")
    sources = [c for c in result.candidates if c.lane == "sources"]
    order = [c.evidence_id for c in sources]
    assert order[:3] in (
        ["chunk:ferrow-a#0", "chunk:barge#0", "chunk:ferrow-b#0"],
        ["chunk:ferrow-b#0", "chunk:barge#0", "chunk:ferrow-a#0"],
    )
    assert sources[0].direct and sources[2].direct and not sources[1].direct


def test_the_bridge_hop_reaches_the_page_of_an_entity_the_named_document_mentions(world, config):
    question = "Who is the spouse of the singer of Lighthouse Hymn?"
    sources = by_lane(ask(world, config, question), "sources")
    assert sources["chunk:vask#0"] == "Ondrea Vask: She married the cartographer Tamsin Oyelaran in 2004."
    assert list(sources).index("chunk:lighthouse#0") < list(sources).index("chunk:vask#0")
    without_bridges = config.model_copy(update={"plan": config.plan.model_copy(update={"bridges": False})})
    assert "chunk:vask#0" not in by_lane(ask(world, without_bridges, question), "sources")


def test_the_bridge_hop_reaches_another_page_that_names_the_same_entity(world, config):
    question = "Which year did whoever made Harbor Quay Mural break up?"
    sources = list(by_lane(ask(world, config, question), "sources"))
    assert sources.index("chunk:mural#0") < sources.index("chunk:ledger#0")
    without_bridges = config.model_copy(update={"plan": config.plan.model_copy(update={"bridges": False})})
    assert "chunk:ledger#0" not in by_lane(ask(world, without_bridges, question), "sources")


def test_the_bridge_hop_follows_a_title_link_no_entity_mention_records(world, config):
    question = "Who oversaw the LP that Paper Lantern Parade ends?"
    sources = list(by_lane(ask(world, config, question), "sources"))
    assert sources.index("chunk:parade#0") < sources.index("chunk:velmont#0")
    without_bridges = config.model_copy(update={"plan": config.plan.model_copy(update={"bridges": False})})
    assert "chunk:velmont#0" not in by_lane(ask(world, without_bridges, question), "sources")
    with world.connection() as connection:
        connection.execute("DELETE FROM title_link WHERE linked_document_id = 'velmont'")
    try:
        assert "chunk:velmont#0" not in by_lane(ask(world, config, question), "sources")
    finally:
        refresh_title_links(world)


def test_the_bridge_hop_follows_only_seeds_near_the_best_score(world, config):
    question = "Who cast the bell of Quarry Bell Tower?"
    sources = list(by_lane(ask(world, config, question), "sources"))
    assert sources[0] == "chunk:tower#0" and "chunk:foundry#0" in sources
    assert "chunk:pellam#0" not in sources
    every_seed = config.model_copy(update={"settings": config.settings.model_copy(update={"bridge_seed_share": 0.0})})
    assert "chunk:pellam#0" in by_lane(ask(world, every_seed, question), "sources")


def test_the_bridge_hop_does_not_follow_a_hub_entity(world, config):
    # The guild is named in two chunks: a fanout of two makes it a hub.
    hubs_at_two = config.model_copy(update={"settings": config.settings.model_copy(update={"bridge_fanout": 2})})
    question = "Which year did whoever made Harbor Quay Mural break up?"
    assert "chunk:ledger#0" not in by_lane(ask(world, hubs_at_two, question), "sources")


def test_the_entity_catalog_lists_live_entities_with_their_states(world, config):
    result = ask(world, config, "Which projects are running right now?")
    catalog = by_lane(result, "entity_catalog")
    assert catalog["kind:project:"] == "Current project entities are Atlas (active), Beacon (waiting)."


def test_the_overview_reads_only_the_raptor_roots(world, config):
    root = ask(world, config, "What does Quillfern Robotics build?")
    assert by_lane(root, "overview") == {
        "raptor:raptor-root": "Quillfern Robotics builds warehouse robots across four sites."
    }
    leaf_question = ask(world, config, "Heron arms pick mixed cases in the Porto warehouse.")
    assert "raptor:raptor-leaf" not in by_lane(leaf_question, "overview")


def test_the_communities_lane_returns_label_and_summary(world, config):
    result = ask(world, config, "Who looks after temperature logging on reefer trucks?")
    assert by_lane(result, "communities") == {
        "community:community-cold": "Cold chain: Reefer trucks, temperature logging and seal audits."
    }


def test_the_profile_lane_returns_the_entity_summary(world, config):
    result = ask(world, config, "Tell me about Saoirse Dunne and who she mentors.")
    profiles = by_lane(result, "profile")
    assert profiles["profile:person:saoirse dunne"] == (
        "Saoirse Dunne: Saoirse Dunne leads Project Mooring and mentors Lucia Ferraro."
    )


def test_working_memory_returns_unpromoted_items_only(world, config):
    result = ask(world, config, "Which units does the user prefer in answers?")
    memory = by_lane(result, "working_memory")
    assert "session:wm-open" in memory and memory["session:wm-open"].endswith(
        "The user prefers metric units and ISO 8601 dates in every answer."
    )
    assert "session:wm-promoted" not in memory


def test_a_lane_whose_limit_is_zero_contributes_no_rows_with_the_same_sql(world, config):
    question = "Which units does the user prefer in answers?"
    silenced = config.model_copy(update={"settings": config.settings.model_copy(update={"session_find_k": 0})})
    assert by_lane(ask(world, config, question), "working_memory")
    assert not by_lane(ask(world, silenced, question), "working_memory")


def test_rows_come_in_plan_order_then_lane_ordering(world, config):
    result = ask(world, config, "Who does Zorblax work with?")
    priorities = [config.plan.order.index(c.lane) for c in result.candidates]
    assert priorities == sorted(priorities)


def test_a_source_line_flattens_every_run_of_whitespace_to_one_space(make_database, config):
    database = make_database()
    with database.connection() as connection:
        with Planter(connection) as plant:
            for name, text in {
                "tabbed": "Quarterly\tledger totals were reconciled\u2003on Friday.",
                "spaced": "The  ledger\n\nwas  closed  on\r\nMonday.",
                "flat": "The flat ledger line stays as it was.",
            }.items():
                plant.document(name, name.title())
                plant.chunk(name, 0, text)
    sources = by_lane(ask(database, config, "Was the quarterly ledger reconciled and closed?"), "sources")
    assert sources["chunk:tabbed#0"] == "Tabbed: Quarterly ledger totals were reconciled on Friday."
    assert sources["chunk:spaced#0"] == "Spaced: The ledger was closed on Monday."
    assert sources["chunk:flat#0"] == "Flat: The flat ledger line stays as it was."
