"""The settings find runs its statement under: deep enough HNSW searches for the ANN windows, a
trigram threshold at the fuzzy-mention similarity, which lets the index prune without changing a row,
and no parallel workers for one short statement."""

from __future__ import annotations

from pipelines.read.compiler import bind_values, compile_find
from pipelines.read.execute import run_statement
from pipelines.lanes_config import ANN_WINDOW
from pipelines.read.find import enter_find_settings, fuzzy_mention_threshold
from tests.read.planting import vector

TYPO_QUESTION = "Who does Zorblaxx work with?"  # Zorblax, one letter off: trigram similarity 0.7


def with_lane_override(config, lane: str, **settings):  # type: ignore[no-untyped-def]
    lanes = dict(config.lanes)
    lanes[lane] = lanes[lane].model_copy(update={"settings": lanes[lane].settings.model_copy(update=settings)})
    return config.model_copy(update={"lanes": lanes})


def test_the_trigram_threshold_is_the_lowest_fuzzy_similarity_any_lane_uses(config):
    assert fuzzy_mention_threshold(config) == config.settings.mention_fuzzy_similarity
    assert fuzzy_mention_threshold(with_lane_override(config, "facts", mention_fuzzy_similarity=0.45)) == 0.45
    assert fuzzy_mention_threshold(with_lane_override(config, "facts", mention_fuzzy_similarity=0.9)) == (
        config.settings.mention_fuzzy_similarity
    )


def test_find_settings_last_for_the_transaction(world, config):
    own_settings = "SELECT current_setting('plan_cache_mode'), current_setting('max_parallel_workers_per_gather')"
    with world.connection() as connection:
        before = connection.execute(own_settings).fetchone()
        connection.rollback()  # so that find's settings below open a transaction of their own
        with connection.transaction():
            enter_find_settings(connection, config)
            settings = connection.execute(
                "SELECT current_setting('plan_cache_mode'), current_setting('hnsw.ef_search'),"
                " current_setting('pg_trgm.similarity_threshold')::float8,"
                " current_setting('max_parallel_workers_per_gather')"
            ).fetchone()
        after = connection.execute(own_settings).fetchone()
    assert settings == ("force_generic_plan", str(ANN_WINDOW), config.settings.mention_fuzzy_similarity, "0")
    assert after == before, "the server's own settings again after find's transaction"


def test_a_deeper_ann_search_is_a_setting_and_keeps_the_statement(world, config):
    deeper = config.model_copy(update={"settings": config.settings.model_copy(update={"ann_search_depth": 250})})
    assert compile_find(deeper).sql == compile_find(config).sql
    values = bind_values(config, question=TYPO_QUESTION, query_vector=vector(TYPO_QUESTION))
    with world.connection() as connection:
        with connection.transaction():
            enter_find_settings(connection, config)
            default_rows = run_statement(connection, compile_find(config), values)
        with connection.transaction():
            enter_find_settings(connection, deeper)
            assert connection.execute("SELECT current_setting('hnsw.ef_search')").fetchone() == ("250",)
            deeper_rows = run_statement(connection, compile_find(deeper), values)
    # A planted corpus is far smaller than either search: both are exact.
    assert deeper_rows == default_rows


def test_a_fuzzy_mention_finds_the_same_rows_under_find_settings(world, config):
    statement = compile_find(config)
    values = bind_values(config, question=TYPO_QUESTION, query_vector=vector(TYPO_QUESTION))
    with world.connection() as connection:
        with connection.transaction():
            connection.execute("SET LOCAL plan_cache_mode = force_generic_plan")
            plain = run_statement(connection, statement, values)
        with connection.transaction():
            enter_find_settings(connection, config)
            tuned = run_statement(connection, statement, values)
    assert tuned == plain
    assert "fact:f-walk-1" in {row[1] for row in tuned}
