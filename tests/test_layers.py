"""The layers hold: core <- dialects <- store <- ledger <- interfaces.

Every module is parsed once with `ast` (`parse`, cached) and its imports, lazy
ones inside functions and those for type checkers only included, make one
graph. Each rule is a function of the parsed modules or of that graph, so that
the probes at the end can feed it a small synthetic tree and see it caught:

- `unranked_parts`, `upward_imports`: every part of the package has a rank
  (RANKS) and no module imports a rank above its own;
- `ledger_rank_violations`: the same inside the ledger package (LEDGER_RANKS),
  where modules of one rank do not import each other either;
- `import_cycles`: no cycle, counting `if TYPE_CHECKING:` imports;
- `interface_imports_across`: interfaces do not import each other;
- `interface_storage_imports`: interfaces reach storage only through the
  ledger (the pure dialects and `store.locate` excepted);
- `private_ledger_access`: nothing outside the ledger package touches the
  ledger's private members or its unit of work;
- `ledger_typed_any`: interfaces type the ledger as `Ledger`, not `Any`;
- `sql_outside_store`, `storage_attributes_outside`: no SQL outside the store,
  no `.store` / `.repo` / `.db` outside the store and the ledger.
"""

from __future__ import annotations

import ast
import functools
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "todoledger"

Modules = Mapping[str, tuple[Path, ast.Module]]  # module name -> (file, parsed body)
Graph = Mapping[str, set[str]]  # module name -> the todoledger modules it imports

# Rank of each top-level part of the package; a module imports only its own rank or below.
RANKS = {
    "core": 0,
    "agents": 0,  # the agent registry: data only, names modules as strings
    "dialects": 1,
    "store": 2,
    "defaults": 2,  # who writes and which plan when nobody says (environment)
    "personkeys": 2,  # a person's signing key on their machine: the key file, the passphrase, the heads
    "tokens": 2,  # who holds each token, a person or an agent (the tokens file)
    "identity": 2,  # who is at the other end of a command line: from where the call comes (environment)
    "screen": 2,  # the pre-tool shell screen: denies an agent's shell command running a person-only verb
    "checks": 2,  # runs a check against its target (a command, a URL, a port, a disk): I/O below the ledger
    "ledger": 3,  # the ledger package: class Ledger and what it is made of (LEDGER_RANKS below)
    "service": 3,  # kept for one release: a shim re-exporting todoledger.ledger.Ledger
    "demo": 3,  # the seeds' campaign, written through the ledger
    "demo_checks": 3,  # the seeds' assumptions as checks against local stand-ins (demo --checks)
    "": 3,  # the package itself: `todoledger.Ledger`, `__version__`
    "cli": 4,
    "__main__": 4,  # `python -m todoledger`: the CLI's entry
    "hooks": 4,
    "mcp": 4,
    "ingest": 4,
    "install": 4,
    "web": 4,
    "panel": 4,  # Claude Code's task panel, written one way from a plan after every interface's write
}
INTERFACES = frozenset(name for name, rank in RANKS.items() if rank == 4)

# Inside the ledger package (`todoledger.ledger.NAME`): a module imports only a lower rank;
# modules of one rank do not import each other, but for the pairs in LEDGER_SAME_RANK.
# Keys are module names under the package, or shell patterns (`facade_*`) for families of
# helpers; an exact name wins over a pattern. A module of the package that no key
# names fails `test_every_ledger_module_has_a_rank`: a new module gets a rank here.
LEDGER = "todoledger.ledger"
LEDGER_RANKS = {
    # 0: the unit of work (store, repo, transaction, op/event recording, require, fresh
    # ids, fencing, lease renewal at commit), and the values (field validation, pure helpers).
    "unit": 0,
    "values": 0,
    # the person keys a signed ledger holds, and the signature each person-only action needs
    # (the unit calls it for a --force past a lease; it takes the unit typed loosely)
    "signed": 0,
    # 1: the gates (each check's record, verification state, which items are gated).
    "gates": 1,
    # 2: receipts (running checks and recording them, the gate of done, the checks of an
    # export), and readiness (prerequisites, approvals awaited, the ready items, the fast
    # paths of verification for plans without checks); they take a Unit.
    "receipts": 2,
    "readiness": 2,
    # 3: the concerns; each takes a Unit and plain values, none imports another.
    "writes": 3,
    "items": 3,
    "leases": 3,
    "reading": 3,
    "history": 3,
    "people": 3,
    "persons": 3,
    "tokens": 3,
    "checkrecords": 3,
    "tasks": 3,  # MCP Tasks as rows: the row, its transitions' events, the worker's lease
    # 4: sweeps' records: a sweep defined as items (through `items`) with their checks.
    "sweeprows": 4,
    # 5-7: the façade: its base (default plan and writer), its method groups, `Ledger`.
    "facade": 5,
    "facade_*": 6,
    "ledger": 7,
    # 8: above the façade, public methods only: SharedLedger, checks' compositions, sweeps.
    "shared": 8,
    "verify": 8,
    "sweeps": 8,
    # The package's __init__: it re-exports the façade (and what sits above it);
    # nothing inside the package imports it.
    "": 9,
}
# (importer, imported) pairs of one rank that may import each other, as LEDGER_RANKS keys.
LEDGER_SAME_RANK: set[tuple[str, str]] = {("unit", "signed")}

# Interfaces are siblings: only the command line (the shell over all of them) imports the
# others, and hooks may call the ingest entry points built for them: the Codex rollout, and
# the bridges (a plan approved in plan mode: the hook sees the same call a transcript holds).
ALLOWED_ACROSS = {
    ("hooks", "todoledger.ingest.rollout"),
    ("hooks", "todoledger.ingest.bridges"),
    # Every interface's writes reach Claude Code's task panel (todoledger.panel), and
    # install sets it up; the panel imports no interface.
    *(
        (interface, module)
        for interface in ("hooks", "mcp", "web", "install")
        for module in ("todoledger.panel", "todoledger.panel.sync", "todoledger.panel.files")
    ),
    ("__main__", "todoledger.cli.entry"),  # `python -m todoledger` is the CLI
}
# What of the store and the formats an interface may import itself: the dialects are pure
# (payload in, items out), and `store.locate` only finds where the ledger is.
INTERFACE_STORAGE = ("store", "dialects")
INTERFACE_MAY_IMPORT = ("todoledger.dialects", "todoledger.dialects.*", "todoledger.store.locate")
# Where `.store` / `.repo` / `.db` may be touched.
STORAGE_OWNERS = ("store", "ledger")
# A foreign database read as an input format: opencode's own SQLite file, not the ledger.
FOREIGN_SQL = {"todoledger.ingest.opencode"}
SQL = re.compile(
    r"\b(SELECT\s.+\sFROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+(TABLE|INDEX)|"
    r"ALTER\s+TABLE|PRAGMA\s+\w+|SAVEPOINT|ROLLBACK|BEGIN\s+IMMEDIATE)\b",
    re.IGNORECASE | re.DOTALL,
)


# -- parsing, once per file ------------------------------------------------------

PARSES: Counter[Path] = Counter()  # how often each file was parsed: once (see the test)


@functools.cache
def parse(path: Path) -> ast.Module:
    PARSES[path] += 1
    return ast.parse(path.read_text("utf-8"), filename=str(path))


def _name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path = PACKAGE) -> dict[str, tuple[Path, ast.Module]]:
    return {_name(p): (p, parse(p)) for p in sorted(root.rglob("*.py"))}


def part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _rel(path: Path) -> str:
    return str(path.relative_to(SRC)) if path.is_relative_to(SRC) else str(path)


# -- the import graph --------------------------------------------------------------


def _is_type_checking(test: ast.expr) -> bool:
    """`if TYPE_CHECKING:`, whether the name comes from `typing` or is the
    codebase's own `TYPE_CHECKING = False` (no import of typing at run time),
    and `if typing.TYPE_CHECKING:`."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def typing_only_nodes(tree: ast.Module) -> set[int]:
    """ids of the nodes inside `if TYPE_CHECKING:` bodies (not their `else`)."""
    return {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and _is_type_checking(node.test)
        for stmt in node.body
        for inner in ast.walk(stmt)
    }


def imports(
    module: str, path: Path, tree: ast.Module, known: Iterable[str], *, typing: bool = True
) -> set[str]:
    """The todoledger modules `module` imports, anywhere in its body. `known` are
    the package's modules (`from pkg import name` imports module `pkg.name` when
    there is one, else `pkg`). `typing=False` leaves out the imports made for type
    checkers only; the rules count them: a cycle or an upward dependency is one
    whether or not the interpreter runs the import."""
    known = set(known)
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    skip = set() if typing else typing_only_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
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
                found.add(sub if sub in known else base)
    return found


def graph_of(mods: Modules, *, typing: bool = True) -> dict[str, set[str]]:
    return {m: imports(m, p, t, mods, typing=typing) for m, (p, t) in mods.items()}


MODULES = modules()
GRAPH = graph_of(MODULES)


# -- ranks -------------------------------------------------------------------------


def unranked_parts(graph: Graph, ranks: Mapping[str, int] = RANKS) -> set[str]:
    return {part(m) for m in graph} - set(ranks)


def upward_imports(graph: Graph, ranks: Mapping[str, int] = RANKS) -> list[str]:
    return [
        f"{m} imports {t}"
        for m, targets in sorted(graph.items())
        for t in sorted(targets)
        if part(m) in ranks and part(t) in ranks and ranks[part(t)] > ranks[part(m)]
    ]


def ledger_name(module: str, package: str = LEDGER) -> str:
    """`unit` for todoledger.ledger.unit and what is inside it; "" for the package."""
    return module.removeprefix(package).lstrip(".").split(".")[0]


def ledger_key(module: str, ranks: Mapping[str, int] = LEDGER_RANKS, package: str = LEDGER) -> str | None:
    """The LEDGER_RANKS key that ranks `module` (a module of the package or inside
    one of its subpackages), or None when no key does."""
    name = ledger_name(module, package)
    if name in ranks:
        return name
    return next((key for key in ranks if fnmatchcase(name, key)), None)


def in_package(module: str, package: str = LEDGER) -> bool:
    return module == package or module.startswith(package + ".")


def ledger_rank_violations(
    graph: Graph,
    ranks: Mapping[str, int] = LEDGER_RANKS,
    same_rank: set[tuple[str, str]] = LEDGER_SAME_RANK,
    package: str = LEDGER,
) -> list[str]:
    """Modules of the package without a rank; imports inside it of a higher rank,
    or of another module of the same rank (but the pairs in `same_rank`)."""

    def rank(module: str) -> int | None:
        key = ledger_key(module, ranks, package) if in_package(module, package) else None
        return None if key is None else ranks[key]

    found = [
        f"{m} has no rank in LEDGER_RANKS"
        for m in sorted(graph)
        if in_package(m, package) and rank(m) is None
    ]
    for m, targets in sorted(graph.items()):
        here = rank(m)
        if here is None:
            continue
        for t in sorted(targets):
            there = rank(t)
            if there is None or ledger_name(t, package) == ledger_name(m, package):
                continue
            if there > here:
                found.append(f"{m} (rank {here}) imports {t} (rank {there})")
            elif there == here and not any(
                fnmatchcase(ledger_name(m, package), a) and fnmatchcase(ledger_name(t, package), b)
                for a, b in same_rank
            ):
                found.append(f"{m} imports {t}, both of rank {here}")
    return found


def test_every_part_of_the_package_has_a_layer() -> None:
    assert unranked_parts(GRAPH) == set()


def test_no_module_imports_a_layer_above_its_own() -> None:
    assert upward_imports(GRAPH) == []


def test_the_ledger_package_is_there() -> None:
    # Without it the two tests below check nothing; a renamed package renames LEDGER.
    assert LEDGER in GRAPH and (PACKAGE / "ledger" / "__init__.py").is_file()


def test_every_ledger_module_has_a_rank_and_imports_only_below_it() -> None:
    assert ledger_rank_violations(GRAPH) == []


def test_the_ledger_ranks_are_the_ones_written_down() -> None:
    assert set(LEDGER_RANKS.values()) == set(range(10))
    for a, b in LEDGER_SAME_RANK:
        assert LEDGER_RANKS[a] == LEDGER_RANKS[b]


# -- interfaces --------------------------------------------------------------------


def interface_imports_across(graph: Graph, allowed: set[tuple[str, str]] = ALLOWED_ACROSS) -> list[str]:
    return [
        f"{m} imports {t}"
        for m, targets in sorted(graph.items())
        for t in sorted(targets)
        if part(m) in INTERFACES - {"cli"}
        and part(t) in INTERFACES
        and part(t) != part(m)
        and (part(m), t) not in allowed
    ]


def interface_storage_imports(graph: Graph) -> list[str]:
    return [
        f"{m} imports {t}"
        for m, targets in sorted(graph.items())
        for t in sorted(targets)
        if part(m) in INTERFACES
        and part(t) in INTERFACE_STORAGE
        and not any(fnmatchcase(t, allowed) for allowed in INTERFACE_MAY_IMPORT)
    ]


def test_interfaces_do_not_import_each_other() -> None:
    assert interface_imports_across(GRAPH) == []


def test_interfaces_reach_storage_only_through_the_ledger() -> None:
    assert interface_storage_imports(GRAPH) == []


# -- cycles ------------------------------------------------------------------------


def _cycles(graph: Graph) -> list[list[str]]:
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
        for w in sorted(graph.get(v, ())):
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


def import_cycles(graph: Graph) -> list[list[str]]:
    # A package's __init__ may re-export its own modules; a module importing its
    # package back for shared helpers is the one cycle Python resolves by design.
    return _cycles(
        {m: {t for t in ts if not (m.startswith(t + ".") and t != "todoledger")} for m, ts in graph.items()}
    )


def test_no_import_cycles() -> None:
    assert import_cycles(GRAPH) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# -- the ledger's insides stay inside ----------------------------------------------
# Outside the ledger package, code uses a Ledger through its public methods. Flagged:
# `x._name` where `_name` (not a dunder) is a private member of a class defined in the
# ledger package (its methods, class attributes and `self._name = ...` assignments,
# collected by parsing the package), and any `x.unit` / `x._unit` (the unit of work).
# To keep false positives low, not flagged: access on `self` / `cls` (a class's own
# members), and `x._name` in a module that itself defines a class with a member `_name`
# (most likely that class's own, e.g. `other._lock` in its `__eq__`). Names alone are
# matched, not types: a different object's `_name` that happens to share a Ledger
# private's name would be flagged; rename it or narrow the rule here.
UNIT_ATTRIBUTES = frozenset({"unit", "_unit"})
# Until the split, class Ledger lives in todoledger.service: its privates count too.
PRIVATE_SOURCES = (LEDGER, "todoledger.service")


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def class_privates(tree: ast.Module) -> set[str]:
    """Private member names of the classes defined in `tree`."""
    found: set[str] = set()
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for stmt in cls.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                found.add(stmt.name)
            targets = (
                stmt.targets
                if isinstance(stmt, ast.Assign)
                else [stmt.target]
                if isinstance(stmt, ast.AnnAssign | ast.AugAssign)
                else []
            )
            found.update(t.id for t in targets if isinstance(t, ast.Name))
        found.update(
            node.attr
            for node in ast.walk(cls)
            if isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        )
    return {name for name in found if _private(name)}


def ledger_privates(mods: Modules, sources: Iterable[str] = PRIVATE_SOURCES) -> set[str]:
    sources = tuple(sources)
    return {
        name
        for m, (_, tree) in mods.items()
        if any(in_package(m, s) for s in sources)
        for name in class_privates(tree)
    }


def private_ledger_access(mods: Modules, privates: set[str], package: str = LEDGER) -> list[str]:
    found: list[tuple[str, int, str]] = []
    for m, (path, tree) in mods.items():
        if in_package(m, package):
            continue
        own = class_privates(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            if node.attr in UNIT_ATTRIBUTES or (node.attr in privates and node.attr not in own):
                found.append((_rel(path), node.lineno, node.attr))
    return [f"{where}:{line}: .{attr}" for where, line, attr in sorted(found)]


def test_nothing_outside_the_ledger_touches_its_private_members() -> None:
    assert private_ledger_access(MODULES, ledger_privates(MODULES)) == []


# -- interfaces type the ledger ------------------------------------------------------
# In an interface, a ledger is typed `Ledger` (or `SharedLedger`), never `Any`, so that
# the type checker sees every call an interface makes on it. Flagged: a parameter or an
# annotated variable named `lg`, `led`, `ledger` or `*_ledger` and typed `Any` (also
# `Any | None`, `Optional[Any]`, `Callable[..., Any]`); a function of such a name that
# returns `Any` (a ledger getter, as cli's `ledger()`); and a parameter typed `Any` that
# a call in the same module passes a module (`_verify_once(verification, ...)`), which
# should take the module's functions, or be typed with the module's own types.
LEDGER_NAMES = frozenset({"lg", "led", "ledger"})


def _ledger_name(name: str) -> bool:
    return name.strip("_") in LEDGER_NAMES or name.endswith("_ledger")


def _is_any(node: ast.expr | None) -> bool:
    if node is None:
        return False
    if isinstance(node, ast.Name):
        return node.id == "Any"
    if isinstance(node, ast.Attribute):
        return node.attr == "Any"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return _is_any(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return False
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _is_any(node.left) or _is_any(node.right)
    if isinstance(node, ast.Subscript):
        head = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", "")
        inner = node.slice
        if head in ("Optional", "Iterator", "Generator", "ContextManager", "AbstractContextManager"):
            first = inner.elts[0] if isinstance(inner, ast.Tuple) else inner
            return _is_any(first)
        if head == "Callable" and isinstance(inner, ast.Tuple) and len(inner.elts) == 2:
            return _is_any(inner.elts[1])
    return False


def _parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    a = fn.args
    return [*a.posonlyargs, *a.args, *([a.vararg] if a.vararg else []), *a.kwonlyargs]


def _module_names(module: str, path: Path, tree: ast.Module, known: Iterable[str]) -> set[str]:
    """Names the module binds to a todoledger module (`from todoledger import verification`)."""
    known = set(known)
    bound: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "todoledger":
                    bound.add(a.asname or a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            bound.update(a.asname or a.name for a in node.names if f"{base}.{a.name}" in known)
    return bound


def _passed_modules(
    module: str, path: Path, tree: ast.Module, known: Iterable[str]
) -> Iterator[tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.arg]]:
    """(function, parameter) pairs where a call in this module passes a module."""
    bound = _module_names(module, path, tree, known)
    if not bound:
        return
    defs = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        fn = defs.get(call.func.id) if isinstance(call.func, ast.Name) else None
        if fn is None:
            continue
        positional = [*fn.args.posonlyargs, *fn.args.args]
        by_name = {p.arg: p for p in _parameters(fn)}
        for i, arg in enumerate(call.args):
            if isinstance(arg, ast.Name) and arg.id in bound and i < len(positional):
                yield fn, positional[i]
        for kw in call.keywords:
            if isinstance(kw.value, ast.Name) and kw.value.id in bound and kw.arg in by_name:
                yield fn, by_name[kw.arg]


def ledger_typed_any(mods: Modules) -> list[str]:
    found: set[tuple[str, int, str]] = set()
    for m, (path, tree) in mods.items():
        if part(m) not in INTERFACES:
            continue
        where = _rel(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for p in _parameters(node):
                    if _ledger_name(p.arg) and _is_any(p.annotation):
                        found.add((where, p.lineno, f"{node.name}({p.arg}: Any)"))
                if _ledger_name(node.name) and _is_any(node.returns):
                    found.add((where, node.lineno, f"def {node.name}() -> Any"))
            elif isinstance(node, ast.AnnAssign) and _is_any(node.annotation):
                target = node.target
                name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", "")
                if _ledger_name(name):
                    found.add((where, node.lineno, f"{name}: Any"))
        for fn, p in _passed_modules(m, path, tree, mods):
            if _is_any(p.annotation) or p.annotation is None:
                found.add((where, p.lineno, f"{fn.name}({p.arg}: Any) is passed a module"))
    return [f"{w}:{line}: {what}" for w, line, what in sorted(found)]


def test_interfaces_type_the_ledger_as_ledger_not_any() -> None:
    assert ledger_typed_any(MODULES) == []


# -- SQL and storage ---------------------------------------------------------------


def _strings(tree: ast.Module) -> list[tuple[int, str]]:
    return [
        (n.lineno, n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]


def sql_outside_store(mods: Modules, foreign: set[str] = FOREIGN_SQL) -> list[str]:
    return [
        f"{_rel(path)}:{line}: {text[:60]!r}"
        for m, (path, tree) in sorted(mods.items())
        if part(m) != "store" and m not in foreign
        for line, text in _strings(tree)
        if SQL.search(text)
    ]


def storage_attributes_outside(mods: Modules, owners: Iterable[str] = STORAGE_OWNERS) -> list[str]:
    owners = tuple(owners)
    return [
        f"{_rel(path)}:{node.lineno}: .{node.attr}"
        for m, (path, tree) in sorted(mods.items())
        if part(m) not in owners
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in ("store", "repo", "db")
    ]


def test_no_sql_outside_the_store() -> None:
    assert sql_outside_store(MODULES) == []


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


def test_no_store_or_repo_access_outside_the_store_and_the_ledger() -> None:
    assert storage_attributes_outside(MODULES) == []


# -- each file parsed once ---------------------------------------------------------


def test_every_file_is_parsed_once_for_all_the_rules() -> None:
    unranked_parts(GRAPH)
    upward_imports(GRAPH)
    ledger_rank_violations(GRAPH)
    interface_imports_across(GRAPH)
    interface_storage_imports(GRAPH)
    import_cycles(GRAPH)
    private_ledger_access(modules(), ledger_privates(modules()))
    ledger_typed_any(modules())
    sql_outside_store(modules())
    storage_attributes_outside(modules())
    files = set(PACKAGE.rglob("*.py"))
    assert set(PARSES) >= files
    assert {path: n for path, n in PARSES.items() if n != 1} == {}


# -- probes: each rule catches a small synthetic breach ----------------------------


def probe(sources: Mapping[str, str], packages: Iterable[str] = ()) -> dict[str, tuple[Path, ast.Module]]:
    """A module map of synthetic sources; the modules named in `packages` are
    `__init__.py` files (relative imports resolve from them)."""
    packages = set(packages)
    return {
        m: (Path("probe", *m.split(".")[1:], "__init__.py" if m in packages else "x.py"), ast.parse(text))
        for m, text in sources.items()
    }


def test_probe_an_upward_import_is_caught() -> None:
    mods = probe(
        {
            "todoledger.store.repo": "def f():\n    from todoledger.cli.main import cli\n",
            "todoledger.cli.main": "from todoledger.store import repo\n",
        }
    )
    assert upward_imports(graph_of(mods)) == ["todoledger.store.repo imports todoledger.cli.main"]


def test_probe_an_upward_import_for_type_checkers_is_caught() -> None:
    mods = probe(
        {
            "todoledger.core.model": "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from todoledger.ledger import Ledger\n",
            "todoledger.ledger": "Ledger = 1\n",
        },
        packages={"todoledger.ledger"},
    )
    assert upward_imports(graph_of(mods)) == ["todoledger.core.model imports todoledger.ledger"]
    assert upward_imports(graph_of(mods, typing=False)) == []


def test_probe_an_unranked_part_is_caught() -> None:
    assert unranked_parts(graph_of(probe({"todoledger.newpart.x": ""}))) == {"newpart"}


LEDGER_PROBE = {
    "todoledger.ledger": "from .ledger import Ledger\n",
    "todoledger.ledger.unit": "class Unit:\n    pass\n",
    "todoledger.ledger.values": "",
    "todoledger.ledger.gates": "from .unit import Unit\nfrom .values import check\n",
    "todoledger.ledger.readiness": "from . import gates\n",
    "todoledger.ledger.writes": "from todoledger.ledger import readiness, unit\n",
    "todoledger.ledger.items": "from todoledger.ledger.unit import Unit\n",
    "todoledger.ledger.facade": "from .unit import Unit\n",
    "todoledger.ledger.facade_checks": "from .facade import Facade\n",
    "todoledger.ledger.facade_leases": "from .facade import Facade\n",
    "todoledger.ledger.ledger": "from . import items, writes\nfrom .facade_checks import CheckMethods\n",
    "todoledger.ledger.shared": "from .ledger import Ledger\n",
}


def test_probe_the_ledger_ranks_pass_a_sound_package() -> None:
    assert ledger_rank_violations(graph_of(probe(LEDGER_PROBE, packages={LEDGER}))) == []


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        (
            "todoledger.ledger.unit",
            "def f():\n    from todoledger.ledger.gates import gate\n",
            "todoledger.ledger.unit (rank 0) imports todoledger.ledger.gates (rank 1)",
        ),
        (
            "todoledger.ledger.items",
            "from .writes import write\n",
            "todoledger.ledger.items imports todoledger.ledger.writes, both of rank 3",
        ),
        (
            "todoledger.ledger.unit",
            "from . import values\n",
            "todoledger.ledger.unit imports todoledger.ledger.values, both of rank 0",
        ),
        (
            "todoledger.ledger.facade_checks",
            "from .facade_leases import LeaseMethods\n",
            "todoledger.ledger.facade_checks imports todoledger.ledger.facade_leases, both of rank 6",
        ),
        (
            "todoledger.ledger.writes",
            "from todoledger.ledger import Ledger\n",
            "todoledger.ledger.writes (rank 3) imports todoledger.ledger (rank 9)",
        ),
        (
            "todoledger.ledger.ledger",
            "from .shared import SharedLedger\n",
            "todoledger.ledger.ledger (rank 7) imports todoledger.ledger.shared (rank 8)",
        ),
        ("todoledger.ledger.helpers", "", "todoledger.ledger.helpers has no rank in LEDGER_RANKS"),
    ],
)
def test_probe_a_breach_of_the_ledger_ranks_is_caught(module: str, source: str, expected: str) -> None:
    sources = LEDGER_PROBE | {module: source}
    assert ledger_rank_violations(graph_of(probe(sources, packages={LEDGER}))) == [expected]


def test_probe_a_module_renamed_needs_only_its_key_renamed() -> None:
    sources = {k.replace(".readiness", ".ready"): v for k, v in LEDGER_PROBE.items()}
    sources["todoledger.ledger.writes"] = "from todoledger.ledger import ready, unit\n"
    graph = graph_of(probe(sources, packages={LEDGER}))
    assert ledger_rank_violations(graph) == ["todoledger.ledger.ready has no rank in LEDGER_RANKS"]
    ranks = {("ready" if k == "readiness" else k): r for k, r in LEDGER_RANKS.items()}
    assert ledger_rank_violations(graph, ranks) == []


@pytest.mark.parametrize(
    "guard",
    [
        "TYPE_CHECKING = False\nif TYPE_CHECKING:\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n",
        "import typing\nif typing.TYPE_CHECKING:\n",
    ],
)
def test_probe_a_cycle_through_an_import_for_type_checkers_is_caught(guard: str) -> None:
    mods = probe(
        {
            "todoledger.ledger.gates": "from todoledger.ledger.unit import Unit\n",
            "todoledger.ledger.unit": guard + "    from todoledger.ledger.gates import Gate\n",
        }
    )
    assert import_cycles(graph_of(mods)) == [["todoledger.ledger.gates", "todoledger.ledger.unit"]]
    assert import_cycles(graph_of(mods, typing=False)) == []  # the import was seen as typing-only


def test_probe_a_package_importing_its_own_module_back_is_no_cycle() -> None:
    mods = probe(
        {
            "todoledger.ledger": "from .ledger import Ledger\n",
            "todoledger.ledger.ledger": "from .. import ledger\n",
        },
        packages={LEDGER},
    )
    assert import_cycles(graph_of(mods)) == []


def test_probe_interfaces_importing_each_other_are_caught() -> None:
    mods = probe(
        {
            "todoledger.mcp.tools": "from todoledger.web import app\n",
            "todoledger.web.app": "",
            "todoledger.web": "",
            "todoledger.hooks.codex": "from todoledger.ingest.rollout import read\n",
            "todoledger.ingest.rollout": "",
            "todoledger.cli.main": "from todoledger.mcp import tools\n",
        },
        packages={"todoledger.web"},
    )
    assert interface_imports_across(graph_of(mods)) == ["todoledger.mcp.tools imports todoledger.web.app"]


def test_probe_an_interface_reaching_into_the_store_is_caught() -> None:
    mods = probe(
        {
            "todoledger.cli.doctor": (
                "from todoledger.store import locate\n"
                "from todoledger.dialects import parse\n"
                "from todoledger.dialects.codex import read\n"
                "def f():\n    from todoledger.store.repo import Repo\n"
            ),
            "todoledger.web.app": "import todoledger.store\n",
            "todoledger.store.locate": "",
            "todoledger.store.repo": "",
            "todoledger.store": "",
            "todoledger.dialects": "",
            "todoledger.dialects.codex": "",
        },
        packages={"todoledger.store", "todoledger.dialects"},
    )
    assert interface_storage_imports(graph_of(mods)) == [
        "todoledger.cli.doctor imports todoledger.store.repo",
        "todoledger.web.app imports todoledger.store",
    ]


PRIVATE_PROBE = {
    "todoledger.ledger.ledger": (
        "class Ledger:\n"
        "    _cache = None\n"
        "    def __init__(self):\n        self._unit = None\n        self._lease_seconds = 30\n"
        "    def _require(self, ref):\n        return self._unit\n"
        "    def __repr__(self):\n        return ''\n"
    ),
    "todoledger.ledger.unit": "class Unit:\n    def _op(self):\n        pass\n",
    "todoledger.ledger.writes": "def write(lg):\n    return lg._unit._op()\n",  # inside: allowed
}


def test_probe_the_private_members_are_collected() -> None:
    mods = probe(PRIVATE_PROBE)
    assert ledger_privates(mods) == {"_cache", "_unit", "_lease_seconds", "_require", "_op"}


def test_probe_private_ledger_access_outside_the_ledger_is_caught() -> None:
    mods = probe(
        PRIVATE_PROBE
        | {
            "todoledger.verification": "def gate(lg):\n    lg._require('a')\n    return lg.unit\n",
            "todoledger.mcp.tools": (
                "class Tools:\n"
                "    def _op(self):\n        pass\n"  # its own `_op`: not the ledger's
                "    def call(self, other, lg):\n"
                "        self._op()\n        other._op()\n        lg.__class__\n        lg.show()\n"
                "        return lg._cache\n"
            ),
            "todoledger.install.jsonedit": "class Doc:\n    def f(self):\n        return self.unit\n",
        }
    )
    assert private_ledger_access(mods, ledger_privates(mods)) == [
        "probe/mcp/tools/x.py:9: ._cache",
        "probe/verification/x.py:2: ._require",
        "probe/verification/x.py:3: .unit",
    ]


def test_probe_a_ledger_typed_any_in_an_interface_is_caught() -> None:
    mods = probe(
        {
            "todoledger.cli.main": (
                "from typing import Any\nimport typing\n"
                "from todoledger.ledger import Ledger\n"
                "def where(lg: Any) -> str: ...\n"
                "def run(shared_ledger: typing.Any, n: Any) -> None: ...\n"
                "def ledger() -> Any: ...\n"
                "def fine(lg: Ledger, data: Any) -> Ledger: ...\n"
                "def maybe(*, led: 'Any | None' = None) -> None: ...\n"
                "opener: Any = None\n"
                "_ledger: Any = None\n"
            ),
            "todoledger.cli.cmd_checks": (
                "from typing import Any\n"
                "def _verify_once(verification: Any, refs: tuple[str, ...]) -> bool: ...\n"
                "def _list(checks: Any) -> None: ...\n"
                "def verify() -> None:\n"
                "    from todoledger import verification\n"
                "    _verify_once(verification, ())\n"
                "    _list([])\n"
            ),
            "todoledger.verification": "",
            "todoledger.core.model": "from typing import Any\ndef f(lg: Any) -> None: ...\n",  # not an interface
        }
    )
    assert ledger_typed_any(mods) == [
        "probe/cli/cmd_checks/x.py:2: _verify_once(verification: Any) is passed a module",
        "probe/cli/main/x.py:4: where(lg: Any)",
        "probe/cli/main/x.py:5: run(shared_ledger: Any)",
        "probe/cli/main/x.py:6: def ledger() -> Any",
        "probe/cli/main/x.py:8: maybe(led: Any)",
        "probe/cli/main/x.py:10: _ledger: Any",
    ]


def test_probe_sql_outside_the_store_is_caught() -> None:
    mods = probe(
        {
            "todoledger.store.sqlite": "Q = 'SELECT id FROM items'\n",
            "todoledger.ingest.opencode": "Q = 'SELECT data FROM part'\n",
            "todoledger.ledger.unit": "def f(db):\n    db.execute('DELETE FROM items WHERE id = ?')\n",
        }
    )
    assert sql_outside_store(mods) == ["probe/ledger/unit/x.py:2: 'DELETE FROM items WHERE id = ?'"]


def test_probe_storage_attributes_outside_the_ledger_are_caught() -> None:
    mods = probe(
        {
            "todoledger.ledger.unit": "def f(u):\n    return u.store, u.repo\n",
            "todoledger.store.open": "def f(s):\n    return s.db\n",
            "todoledger.web.app": "def f(lg):\n    return lg.repo\n",
        }
    )
    assert storage_attributes_outside(mods) == ["probe/web/app/x.py:2: .repo"]


# -- the façade ---------------------------------------------------------------------


def undocumented_or_untyped(cls: type) -> list[str]:
    """Public methods of `cls` (its bases' included) without a docstring or with a
    parameter or return left unannotated."""
    import inspect

    found = []
    for name, member in inspect.getmembers(cls):
        if name.startswith("_") or not (inspect.isfunction(member) or isinstance(member, property)):
            continue
        func = member.fget if isinstance(member, property) else member
        if not (func.__doc__ or "").strip():
            found.append(f"{name}: no docstring")
        signature = inspect.signature(func)
        bare = [p for p in signature.parameters.values() if p.name != "self" and p.annotation is p.empty]
        if bare or signature.return_annotation is signature.empty:
            found.append(f"{name}: not fully typed")
    return found


def test_every_public_method_of_the_ledger_is_typed_and_documented() -> None:
    from todoledger.ledger import Ledger

    assert undocumented_or_untyped(Ledger) == []


def test_probe_an_undocumented_untyped_method_is_caught() -> None:
    class Probe:
        def typed(self, a: int) -> int:
            """Documented."""
            return a

        def bare(self, a):  # type: ignore[no-untyped-def]
            return a

    assert undocumented_or_untyped(Probe) == ["bare: no docstring", "bare: not fully typed"]
