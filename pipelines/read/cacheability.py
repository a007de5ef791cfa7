"""The cacheability validator: proves six properties of a compiled statement.

1. shape only: the configuration recompiled with every setting value changed gives the same text;
2. binds only and 3. schema checked: enforced while compiling (a violation raises TemplateError
   naming the lane, file and line), so a statement that exists has both;
4. reaches the indexes: `EXPLAIN (GENERIC_PLAN)` shows an HNSW index for every dense ranking and
   the BM25 posting index (bm25_posting_pkey, by term), and no sequential scan outside
   SEQ_SCAN_ALLOWED; a caller confined by row security reads no table whole that the owner's plan
   probes through an index (row security refuses an index probe whose condition calls a function
   or operator that is not leakproof). The check runs with `enable_seqscan = off`: in a small database a
   sequential scan is honestly cheaper and the planner would pick it, so the check asks whether
   every access *can* be index-driven. It also asks whether the index is *taken*: in the generic plan as
   PostgreSQL picks it (no setting changed), every embedded table of UNPROMPTED_HNSW_ROWS rows or
   more must be read through its HNSW index. That holds because every ANN window has a constant
   depth (lanes_config.ANN_WINDOW); a bound `LIMIT $n` is costed at a tenth of the table and lost to
   a sequential scan and sort from ~7k chunks up (MuSiQue, the 10k and 100k bench corpora) while
   passing the first half of this check. Smaller tables may be scanned and sorted, which is
   cheaper at that size. The posting index needs postings in proportion: with a handful of rows
   the planner drives BM25 from the chunk side, so check after loading a corpus;
5. prepared once: one server-side prepared statement serves a run of different questions (and
   different k, which psycopg would otherwise send as int2, int4 or int8 by size);
6. generic equals custom: every question returns the same rows under force_generic_plan as under
   force_custom_plan, both inside one transaction so now() is the same for both.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from pgvector.psycopg import register_vector

from pipelines.config import LanegraphConfig
from pipelines.read.compiler import CompiledStatement, bind_values, compile_find
from pipelines.read.execute import explain_statement, run_statement
from pipelines.lanes_config import Plan, Settings
from pipelines.read.schema import load_catalog
from pipelines.read.templates import TemplateError, display_path
from pipelines.resources.database import Database, connect
from pipelines.resources.embedder import EmbedderResource, QuestionEmbedder
from pipelines.resources.rows import one_row

# Below this many postings the planner drives the BM25 join from the chunk side (right for a toy
# corpus), so the posting index check says why it failed.
SMALL_CORPUS_POSTINGS = 1000
# Tables a sequential scan is fine for, and why.
SEQ_SCAN_ALLOWED: dict[str, str] = {"bm25_corpus": "one row of corpus statistics per scope set"}
INDEX_SCANS = ("Index Scan", "Index Only Scan", "Bitmap Index Scan")
# From this many rows (the planner's estimate) an embedded table must be read through its HNSW
# index unprompted. With 100-row windows the index path is the cheaper one from about 3k rows
# (measured on MuSiQue's 7k chunks, where a bound window lost the index); the margin covers
# narrower rows, whose sequential scan is cheaper.
UNPROMPTED_HNSW_ROWS = 5_000

# Questions the runtime checks ask: ordinary ones, and ones that look like SQL, which must be text.
PROBE_QUESTIONS: tuple[str, ...] = (
    "Who leads Project Heron now?",
    "Which supplier is based in Eindhoven?",
    "What does fault code HX-4417 mean?",
    "x",
    "Robert'); DROP TABLE fact; --",
    "100% of %s and $1 :question ::text",
    'quote " and backslash \\ and semicolon ;',
)
# Two k values psycopg would send as different integer types if the binds were not cast to int8.
PROBE_KS: tuple[int | None, ...] = (None, 3, 70000)


@dataclass(frozen=True)
class PropertyResult:
    name: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class CacheabilityReport:
    statement: CompiledStatement
    results: tuple[PropertyResult, ...]
    generic_plan: dict | None = field(default=None, compare=False)

    @property
    def passed(self) -> bool:
        return all(result.passed for result in self.results)

    def render(self) -> str:
        return "\n".join(
            f"{'ok  ' if r.passed else 'FAIL'} {r.name}: {r.detail}" for r in self.results
        )


def check_cacheability(
    config: LanegraphConfig,
    database: Database | None = None,
    *,
    embedder: QuestionEmbedder | None = None,
    questions: Sequence[str] = PROBE_QUESTIONS,
) -> CacheabilityReport:
    """Compile (which enforces binds-only and the schema) and prove the other properties; the
    database properties (4-6) are checked only when a database is given."""
    statement = compile_find(config)
    results = [
        PropertyResult("binds only", True, f"{len(statement.binds)} typed positional parameters, no literal in a limit or comparison"),
        PropertyResult("schema checked", True, f"every column of {len(statement.templates)} template parts resolves"),
        shape_only(config, statement),
    ]
    plan = None
    if database is not None:
        embedder = embedder or EmbedderResource.from_settings(config.pipeline.embedding).get_embedder()
        vectors = embedder.embed_questions(list(questions))
        with database.connection([]) as confined:
            confined_plan = generic_plan(confined, statement)
        with _dedicated_connection(database) as connection:
            plan = generic_plan(connection, statement)
            unprompted = unprompted_hnsw_misses(
                generic_plan(connection, statement, unprompted=True),
                statement,
                planned_rows(connection, statement.dense_tables),
            )
            results.append(
                reaches_indexes(
                    plan, statement, postings=posting_state(connection), unprompted_misses=unprompted,
                    confined_plan=confined_plan,
                )
            )
            results.append(prepared_once(connection, config, statement, questions, vectors))
            results.append(generic_equals_custom(connection, config, statement, questions, vectors))
    return CacheabilityReport(statement, tuple(results), plan)


def shape_only(config: LanegraphConfig, statement: CompiledStatement) -> PropertyResult:
    """Recompile, bypassing the cache, with every value changed: the text must not move."""
    again = compile_find(changed_values(config), cached=False)
    if again.sql != statement.sql:
        return PropertyResult("shape only", False, "changing setting values changed the SQL text")
    return PropertyResult("shape only", True, "every setting value changed, SQL text byte-identical")


def maximal_plan(config: LanegraphConfig) -> LanegraphConfig:
    """The same lanes under a plan that turns on every lane and part a plan can: compiling it reads
    every template the settings file can reach, whatever this plan includes."""
    toggles = {name: True for name, field in Plan.model_fields.items() if field.annotation is bool}
    plan = config.plan.model_copy(update={**toggles, "hops": max(config.plan.hops, 1)})
    return config.model_copy(update={"plan": plan})


def check_templates_left_off(config: LanegraphConfig, statement: CompiledStatement) -> tuple[Path, ...]:
    """Compile the lanes and parts this plan leaves off, in the maximal plan, so a broken template
    fails `check` now rather than `find` on the day its lane is turned on. Returns the template
    files the plan's own statement does not read; a broken one raises TemplateError naming it."""
    try:
        maximal = compile_find(maximal_plan(config))
    except TemplateError as error:
        raise TemplateError(
            f"{error} (compiled in the maximal plan: this plan may leave the lane or part off, but turning it on must not fail)"
        ) from None
    return tuple(sorted(set(maximal.templates) - set(statement.templates), key=display_path))


def changed_values(config: LanegraphConfig) -> LanegraphConfig:
    """The same configuration with every setting and every lane override set to another value."""
    settings = config.settings.model_copy(update=_other_values(config.settings, Settings.model_fields))
    lanes = {
        name: lane.model_copy(
            update={"settings": lane.settings.model_copy(update=_other_values(lane.settings, lane.overrides))}
        )
        for name, lane in config.lanes.items()
    }
    return config.model_copy(update={"settings": settings, "lanes": lanes})


def _other_values(settings: Settings, names: Iterable[str]) -> dict[str, object]:
    values: dict[str, object] = {}
    for name in names:
        value = getattr(settings, name)
        values[name] = value + 1 if isinstance(value, int) else value / 2
    return values


def generic_plan(connection: psycopg.Connection, statement: CompiledStatement, *, unprompted: bool = False) -> dict:
    """The generic plan with sequential scans ruled out, or as PostgreSQL picks it (`unprompted`)."""
    with connection.transaction():
        if not unprompted:
            connection.execute("SET LOCAL enable_seqscan = off")
        return explain_statement(connection, statement)


def planned_rows(connection: psycopg.Connection, tables: Sequence[str]) -> dict[str, float]:
    """The planner's row estimate of each table (pg_class.reltuples; -1 before the first ANALYZE)."""
    rows = connection.execute(
        "SELECT relname, reltuples FROM pg_class WHERE oid = ANY(%s::regclass[])", (list(tables),)
    ).fetchall()
    return {name: float(count) for name, count in rows}


def unprompted_hnsw_misses(plan: dict, statement: CompiledStatement, rows: Mapping[str, float]) -> list[str]:
    """Embedded tables of UNPROMPTED_HNSW_ROWS rows or more that `plan` reads without their HNSW index."""
    used = {node.get("Index Name") for node in plan_nodes(plan["Plan"])}
    catalog = load_catalog()
    return [
        f"{table} ({rows[table]:.0f} rows)"
        for table in statement.dense_tables
        if rows.get(table, 0) >= UNPROMPTED_HNSW_ROWS and not used & set(catalog.hnsw_indexes[table])
    ]


def plan_nodes(node: dict) -> Iterator[dict]:
    yield node
    for child in node.get("Plans", []):
        yield from plan_nodes(child)


@dataclass(frozen=True)
class PostingState:
    """What the planner knows of bm25_posting: how many rows (up to SMALL_CORPUS_POSTINGS), and
    whether it has statistics at all (a freshly loaded table has none until ANALYZE runs)."""

    rows: int
    analyzed: bool


def posting_state(connection: psycopg.Connection) -> PostingState:
    rows = one_row(
        connection.execute(
            "SELECT count(*) FROM (SELECT 1 FROM bm25_posting LIMIT %s) AS sample", (SMALL_CORPUS_POSTINGS,)
        ),
        "a sample of bm25_posting",
    )[0]
    analyzed = connection.execute(
        "SELECT coalesce(last_analyze, last_autoanalyze) IS NOT NULL FROM pg_stat_user_tables"
        " WHERE relid = 'bm25_posting'::regclass"
    ).fetchone()
    return PostingState(rows, bool(analyzed and analyzed[0]))


def reaches_indexes(
    plan: dict,
    statement: CompiledStatement,
    postings: PostingState | None = None,
    unprompted_misses: Sequence[str] = (),
    confined_plan: dict | None = None,
) -> PropertyResult:
    """`plan` is the owner's; `confined_plan`, a confined caller's, must read no table whole that the
    owner's reads through an index: row security refuses an index probe whose condition calls a
    function or operator that is not leakproof."""
    nodes = list(plan_nodes(plan["Plan"]))
    used = {name for node in nodes if (name := node.get("Index Name"))}
    catalog = load_catalog()
    missing = [
        f"{table} ({' or '.join(catalog.hnsw_indexes[table])})"
        for table in statement.dense_tables
        if not used & set(catalog.hnsw_indexes[table])
    ]
    missing += [
        f"{table} ({catalog.primary_keys[table]})"
        for table in statement.lexical_tables
        if catalog.primary_keys[table] not in used
    ]
    scanned = sorted(
        {node["Relation Name"] for node in nodes if node["Node Type"] == "Seq Scan" and "Relation Name" in node} - set(SEQ_SCAN_ALLOWED)
    )
    confined_whole = sorted(read_whole(confined_plan) - read_whole(plan)) if confined_plan is not None else []
    if missing or scanned or unprompted_misses or confined_whole:
        problems = []
        if missing:
            problems.append(f"no index scan for {', '.join(missing)}")
            if postings is not None and statement.lexical_tables:
                problems.append(_posting_hint(postings))
        if scanned:
            problems.append(f"sequential scan of {', '.join(scanned)}")
        if unprompted_misses:
            problems.append(
                f"the generic plan as PostgreSQL picks it scans and sorts {', '.join(unprompted_misses)} "
                "instead of taking the HNSW index (is an ANN window's LIMIT bound?)"
            )
        if confined_whole:
            problems.append(
                f"a confined caller reads every row of {', '.join(confined_whole)}, which the owner probes "
                "through an index (under row security only a leakproof condition can probe an index: not a "
                "function of a join key, nor pg_trgm's %)"
            )
        return PropertyResult("reaches the indexes", False, "; ".join(problems))
    indexes = sorted(i for i in used if i.endswith("_hnsw") or i in catalog.primary_keys.values())
    callers = " and a confined caller's" if confined_plan is not None else ""
    return PropertyResult(
        "reaches the indexes",
        True,
        f"generic plan uses {len(statement.dense_tables)} HNSW rankings and BM25 postings "
        f"({', '.join(i for i in indexes if i.endswith('_hnsw') or i.startswith('bm25_posting'))}); "
        f"the owner's plan{callers}",
    )


def read_whole(plan: dict) -> set[str]:
    """Tables a plan reads row by row to the end: a sequential scan, or an index scan with neither a
    condition nor an ordering, the form such a scan takes while sequential scans are ruled out."""
    return {
        node["Relation Name"]
        for node in plan_nodes(plan["Plan"])
        # A scan of a function or a CTE names no relation.
        if "Relation Name" in node
        and (
            node["Node Type"] == "Seq Scan"
            or (node["Node Type"] in INDEX_SCANS and "Index Cond" not in node and "Order By" not in node)
        )
    }


def _posting_hint(postings: PostingState) -> str:
    if postings.rows < SMALL_CORPUS_POSTINGS:
        return (
            f"bm25_posting holds {postings.rows} rows, so few that the planner rightly reads it "
            "from the chunk side; check again once a corpus is loaded"
        )
    if not postings.analyzed:
        return "bm25_posting has no planner statistics yet; run ANALYZE (or wait for autovacuum) and check again"
    return "the planner reads bm25_posting another way at these statistics"


def prepared_once(
    connection: psycopg.Connection,
    config: LanegraphConfig,
    statement: CompiledStatement,
    questions: Sequence[str],
    vectors: Iterable[object],
) -> PropertyResult:
    runs = 0
    for k in PROBE_KS:
        for question, vector in zip(questions, vectors, strict=True):
            run_statement(connection, statement, bind_values(config, question=question, query_vector=vector, k=k))
            runs += 1
    rows = connection.execute(
        "SELECT name, generic_plans + custom_plans FROM pg_prepared_statements WHERE statement = %s",
        (statement.sql,),
    ).fetchall()
    executions = sum(count for _, count in rows)
    if len(rows) != 1 or executions != runs:
        return PropertyResult(
            "prepared once",
            False,
            f"{runs} questions used {len(rows)} prepared statements ({executions} executions recorded)",
        )
    return PropertyResult(
        "prepared once", True, f"{runs} questions (k {', '.join(str(k) for k in PROBE_KS)}) served by prepared statement {rows[0][0]}"
    )


def generic_equals_custom(
    connection: psycopg.Connection,
    config: LanegraphConfig,
    statement: CompiledStatement,
    questions: Sequence[str],
    vectors: Iterable[object],
) -> PropertyResult:
    differing = []
    for question, vector in zip(questions, vectors, strict=True):
        values = bind_values(config, question=question, query_vector=vector)
        with connection.transaction():
            connection.execute("SET LOCAL plan_cache_mode = force_generic_plan")
            generic = run_statement(connection, statement, values)
            connection.execute("SET LOCAL plan_cache_mode = force_custom_plan")
            custom = run_statement(connection, statement, values)
        if generic != custom:
            differing.append(question)
    if differing:
        return PropertyResult(
            "generic equals custom", False, f"rows differ for {len(differing)} question(s), e.g. {differing[0]!r}"
        )
    return PropertyResult("generic equals custom", True, f"{len(questions)} questions, identical rows under both plans")


@contextmanager
def _dedicated_connection(database: Database) -> Iterator[psycopg.Connection]:
    """A connection of its own, so the prepared-statement counts are this check's alone."""
    connection = connect(database.url, autocommit=True)
    try:
        register_vector(connection)
        yield connection
    finally:
        connection.close()


def failure_summary(report: CacheabilityReport) -> str:
    failed = [r for r in report.results if not r.passed]
    return "; ".join(f"{r.name}: {r.detail}" for r in failed)

