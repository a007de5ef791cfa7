"""Imports under pipelines/ only run downward: no cycle between files or packages, and no module
imports from a layer above its own. Every import counts, also one inside a function.

A module belongs to the deepest entry of LAYERS its name starts with; it may import its own entry
and the ones before it.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

from tests import REPOSITORY

ROOT = REPOSITORY / "pipelines"

# Bottom first.
LAYERS = (
    # Project-wide: errors, strict YAML, the settings file and its models.
    "pipelines.errors",
    # Where the shipped files (sql_templates/, the default lanes.yaml) are.
    "pipelines.shipped",
    "pipelines.strict_yaml",
    # How names compare: the same folding on the write side's links and the read side's questions.
    "pipelines.accents",
    "pipelines.lanes_config",
    "pipelines.config",
    "pipelines.demo_corpus",
    # Charts for materialization metadata (matplotlib without a display).
    "pipelines.charts",
    # The database, migrations, embedder and HTTP clients.
    "pipelines.resources",
    # The write side: steps' shared reporting first, then the stages in pipeline order.
    "pipelines.write",
    "pipelines.write.documents",
    "pipelines.write.extraction",
    "pipelines.write.summaries",
    "pipelines.write.graph",
    "pipelines.write.session",
    "pipelines.read",
    "pipelines.fusion",
    # Driving Dagster: partitions, groups, the runner (handed the definitions it runs).
    "pipelines.orchestration",
    "pipelines.evaluation",
    # Searching retrieval settings: trials scored by the evaluation, studies kept in PostgreSQL.
    "pipelines.tuning",
    "pipelines.defs",
    "pipelines.definitions",
    "pipelines.bench",
    # The server: find and working memory over HTTP and MCP, as a token's caller.
    "pipelines.serve",
    "pipelines.cli",
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in ROOT.rglob("*.py")}


def imported_names(path: Path, name: str) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            found.add(origin)
            found.update(f"{origin}.{alias.name}" for alias in node.names)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the pipelines modules it imports (a name from a module counts as that module)."""
    known = modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        targets = set()
        for imported in imported_names(path, name):
            while imported and imported not in known:
                imported = imported.rpartition(".")[0]
            if imported and imported not in (name, "pipelines"):
                targets.add(imported)
        graph[name] = targets
    return graph


def package_of(module: str) -> str:
    """The package a module lives in; a top-level module of pipelines/ is a package of its own."""
    parent = module.rpartition(".")[0]
    if parent == "pipelines" or (ROOT.parent / module.replace(".", "/")).is_dir():
        return module
    return parent


def layer_of(module: str) -> int:
    matches = [index for index, prefix in enumerate(LAYERS) if module == prefix or module.startswith(prefix + ".")]
    assert matches, f"{module} is in no layer; add its package to LAYERS"
    return max(matches, key=lambda index: len(LAYERS[index]))


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Strongly connected sets of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                members.append(member)
                if member == node:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_cycle_between_files() -> None:
    assert cycles(import_graph()) == []


def test_no_cycle_between_packages() -> None:
    graph = import_graph()
    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        source = package_of(module)
        packages.setdefault(source, set()).update(package_of(target) for target in targets)
        packages[source].discard(source)
    assert cycles(packages) == []


def test_every_import_runs_downward() -> None:
    upward = [
        f"{module} ({LAYERS[layer_of(module)]}) imports {target} ({LAYERS[layer_of(target)]})"
        for module, targets in sorted(import_graph().items())
        for target in sorted(targets)
        if layer_of(target) > layer_of(module)
    ]
    assert upward == []
