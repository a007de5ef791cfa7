"""Driving Dagster from this process: the instance directory, the document partitions and the runner
behind `lanegraph ingest` and `materialize`."""
