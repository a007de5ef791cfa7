"""The code location Dagster serves: the whole defs tree, loaded through Dagster's supported call."""

import warnings

from pipelines.defs.code_location import code_location


def test_the_code_location_loads_every_job_schedule_and_sensor_without_deprecated_calls():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        repository = code_location().get_repository_def()
    assert {"ingest_documents", "refresh_graph", "promote_session_items"} <= {job.name for job in repository.get_all_jobs()}
    assert {schedule.name for schedule in repository.schedule_defs} == {"daily_graph_refresh", "weekly_graph_rebuild"}
    assert {sensor.name for sensor in repository.sensor_defs} == {"document_inbox", "hourly_session_promotion"}
    assert repository.asset_graph.get_all_asset_keys()
