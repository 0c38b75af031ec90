"""The layers hold: core <- dialects <- store <- service <- interfaces.

Every module's imports (lazy ones inside functions included) are read with
`ast`; no module may import a layer above its own, interfaces reach storage
and the agents' formats only through the service, and no SQL or `.store` /
`.repo` access appears outside the store (and, for the attributes, the
service that owns them).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "todoledger"

# Rank of each top-level part of the package; a module imports only its own rank or below.
RANKS = {
    "core": 0,
    "agents": 0,  # the agent registry: data only, names modules as strings
    "dialects": 1,
    "store": 2,
    "defaults": 2,  # who writes and which plan when nobody says (environment)
    "checks": 2,  # runs a check against its target (a command, a URL, a port, a disk): I/O below the service
    "service": 3,
    "verification": 3,  # the service for checks, gates, receipts, trust and metrics
    "sweeps": 3,  # the service for parameter sweeps
    "demo": 3,  # the seeds' campaign, written through the service
    "demo_checks": 3,  # the seeds' assumptions as checks against local stand-ins (demo --checks)
    "": 3,  # the package itself: `todoledger.Ledger`, `__version__`
    "cli": 4,
    "hooks": 4,
    "mcp": 4,
    "ingest": 4,
    "install": 4,
    "web": 4,
}
INTERFACES = {name for name, rank in RANKS.items() if rank == 4}
# Interfaces are siblings: only the command line (the shell over all of them) imports the
# others, and hooks may call the ingest entry points built for them: the Codex rollout, and
# the bridges (a plan approved in plan mode: the hook sees the same call a transcript holds).
ALLOWED_ACROSS = {("hooks", "todoledger.ingest.rollout"), ("hooks", "todoledger.ingest.bridges")}
# A foreign database read as an input format: opencode's own SQLite file, not the ledger.
FOREIGN_SQL = {"todoledger.ingest.opencode"}
SQL = re.compile(
    r"\b(SELECT\s.+\sFROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+(TABLE|INDEX)|"
    r"ALTER\s+TABLE|PRAGMA\s+\w+|SAVEPOINT|ROLLBACK|BEGIN\s+IMMEDIATE)\b",
    re.IGNORECASE | re.DOTALL,
)


def _name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(root: Path = PACKAGE) -> dict[str, tuple[Path, ast.Module]]:
    return {_name(p): (p, ast.parse(p.read_text("utf-8"))) for p in sorted(root.rglob("*.py"))}


def _exists(module: str) -> bool:
    path = SRC / module.replace(".", "/")
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def imports(module: str, path: Path, tree: ast.Module) -> set[str]:
    """The todoledger modules `module` imports, anywhere in its body."""
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    # Imports for type checkers only (`if TYPE_CHECKING:`) never run: they make no dependency.
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
        for stmt in node.body
        for inner in ast.walk(stmt)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "todoledger")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            if base.split(".")[0] != "todoledger":
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if _exists(sub) else base)
    return found


def part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


GRAPH = {m: imports(m, p, t) for m, (p, t) in _modules().items()}


def test_every_part_of_the_package_has_a_layer() -> None:
    assert {part(m) for m in GRAPH} <= set(RANKS)


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = [
        f"{m} imports {t}" for m, targets in GRAPH.items() for t in targets if RANKS[part(t)] > RANKS[part(m)]
    ]
    assert upward == []


def test_interfaces_do_not_import_each_other() -> None:
    across = [
        f"{m} imports {t}"
        for m, targets in GRAPH.items()
        for t in targets
        if part(m) in INTERFACES - {"cli"}
        and part(t) in INTERFACES
        and part(t) != part(m)
        and (part(m), t) not in ALLOWED_ACROSS
    ]
    assert across == []


def test_interfaces_reach_storage_and_formats_only_through_the_service() -> None:
    direct = [
        f"{m} imports {t}"
        for m, targets in GRAPH.items()
        for t in targets
        if part(m) in INTERFACES and part(t) in ("store", "dialects")
    ]
    assert direct == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles() -> None:
    # A package's __init__ may re-export its own modules; a module importing its
    # package back for shared helpers is the one cycle Python resolves by design.
    graph = {
        m: {t for t in ts if not (m.startswith(t + ".") and t != "todoledger")} for m, ts in GRAPH.items()
    }
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _strings(tree: ast.Module) -> list[tuple[int, str]]:
    return [
        (n.lineno, n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]


def test_no_sql_outside_the_store() -> None:
    found = [
        f"{path.relative_to(SRC)}:{line}: {text[:60]!r}"
        for m, (path, tree) in _modules().items()
        if part(m) != "store" and m not in FOREIGN_SQL
        for line, text in _strings(tree)
        if SQL.search(text)
    ]
    assert found == []


@pytest.mark.parametrize(
    "text",
    [
        "SELECT new FROM events WHERE item = ?",
        "INSERT INTO cursors (source) VALUES (?)",
        "PRAGMA integrity_check",
        "SAVEPOINT ledger_write",
        "UPDATE items SET status = ?",
    ],
)
def test_the_sql_scan_sees_sql(text: str) -> None:
    assert SQL.search(text)


def test_no_store_or_repo_access_outside_the_service() -> None:
    found = [
        f"{path.relative_to(SRC)}:{node.lineno}: .{node.attr}"
        for m, (path, tree) in _modules().items()
        if part(m) not in ("store", "service", "verification", "sweeps")
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in ("store", "repo", "db")
    ]
    assert found == []
