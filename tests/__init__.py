from pathlib import Path

# The source tree the suite tests: its lanes.yaml, sql_templates/ and demo corpus.
REPOSITORY = Path(__file__).resolve().parents[1]
