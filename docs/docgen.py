"""Generated documentation: what the docs say about the code, taken from the code.

Markdown files hold cog blocks (cogapp, as docs/readme.py does for the README)
that call the functions below:

- `cli_reference()`: every command's and subcommand's `--help`, walked from
  the click tree (the commands registered by name and imported when run
  included), for docs/cli.md;
- `module_map()`: every module of a package with the first sentence of its
  docstring, for docs/ARCHITECTURE.md (and any other page that lists modules);
- `agents_table()`: the compatibility table from the real agents' e2e run
  (tests/e2e/results.json), and `agent_needs()`: what each agent's route needs
  (install/needs.py), for docs/agents.md.

After a change to a command's options or help, or to a module's docstring, or
after adding, moving or removing a module, regenerate with

    .venv/bin/python docs/docgen.py --update    (same as: .venv/bin/cog -r docs/cli.md docs/ARCHITECTURE.md docs/agents.md)

tests/test_docs.py fails (`cog --check`) while a generated page differs.
"""

from __future__ import annotations

import ast
import math
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "todoledger"
GENERATED = (
    ROOT / "docs" / "cli.md",
    ROOT / "docs" / "ARCHITECTURE.md",
    ROOT / "docs" / "agents.md",
    ROOT / "docs" / "security.md",
)
REGENERATE = ".venv/bin/python docs/docgen.py --update"
HELP_WIDTH = 80  # the help text's width, whatever the terminal that regenerates it


# -- the command line ----------------------------------------------------------------------


def commands(group: Any = None) -> Iterator[tuple[list[str], Any]]:
    """Every command under `group` (default: `todoledger`'s), depth first in the
    order `--help` lists them, as (path of names, click command), the group first.

    Commands come from `list_commands` and `get_command`, not from `.commands`:
    the group registers its heavy commands by name and imports each only when
    asked for it (`cli/main.py`, LAZY_COMMANDS), and a command whose module fails
    to import raises here rather than going missing from the page."""
    import click

    if group is None:
        from todoledger.cli.main import cli

        group = cli

    def walk(command: Any, path: list[str], parent: Any) -> Iterator[tuple[list[str], Any]]:
        yield path, command
        if isinstance(command, click.Group):
            ctx = click.Context(command, info_name=path[-1] if path else "todoledger", parent=parent)
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is None:
                    raise LookupError(
                        f"`todoledger {' '.join([*path, name])}` is listed but cannot be loaded"
                    )
                if not sub.hidden:
                    yield from walk(sub, [*path, name], ctx)

    yield from walk(group, [], None)


def help_text(path: list[str], group: Any = None) -> str:
    """What `todoledger <path> --help` prints, at HELP_WIDTH columns."""
    from click.testing import CliRunner

    if group is None:
        from todoledger.cli.main import cli

        group = cli
    result = CliRunner().invoke(
        group,
        [*path, "--help"],
        prog_name="todoledger",
        terminal_width=HELP_WIDTH,
        max_content_width=HELP_WIDTH,
        catch_exceptions=False,
    )
    if result.exit_code != 0:
        raise RuntimeError(f"`todoledger {' '.join(path)} --help` exited {result.exit_code}: {result.output}")
    return "\n".join(line.rstrip() for line in result.output.strip("\n").splitlines())


def cli_reference(group: Any = None, *, base_level: int = 2) -> str:
    """Markdown: an index of the commands, then each one's `--help` in a fenced
    block under a heading (`## todoledger show`, `### todoledger dep add`)."""
    found = list(commands(group))
    index = []
    sections = []
    for path, command in found:
        name = " ".join(["todoledger", *path])
        anchor = re.sub(r"[^a-z0-9 -]", "", name.lower()).replace(" ", "-")
        summary = (
            command.get_short_help_str(limit=300) if path else "the command itself: its options and commands"
        )
        index.append(f"{'  ' * max(len(path) - 1, 0)}- [`{name}`](#{anchor}): {summary}")
        level = "#" * (base_level + max(len(path) - 1, 0))
        sections.append(f"{level} {name}\n\n```\n{help_text(path, group)}\n```\n")
    return "\n".join(index) + "\n\n" + "\n".join(sections)


# -- the modules -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Module:
    path: str  # relative to the package folder, with `/`: `cli/lean.py`
    name: str  # dotted: `todoledger.cli.lean`
    summary: str  # the first sentence of the docstring; "" without one


def summary(docstring: str | None) -> str:
    """The first sentence of a docstring's first paragraph, its lines joined
    (most summaries wrap, so the first line alone is often half a sentence)."""
    if not docstring:
        return ""
    paragraph = " ".join(docstring.strip().split("\n\n")[0].split())
    found = re.match(r"(.+?[.!?])(?=\s+[A-Z`(\"']|$)", paragraph)
    return found.group(1) if found else paragraph


def modules(package: Path = PACKAGE) -> list[Module]:
    """Every .py file under `package` (a folder with `__init__.py`), in path order:
    a package's `__init__.py` before its modules, subpackages after them."""
    package = package.resolve()

    def key(file: Path) -> tuple[tuple[int, str], ...]:
        parts = file.relative_to(package).parts
        # files before folders at each level, __init__.py first
        return tuple(
            (0 if part == "__init__.py" else 1 if n == len(parts) - 1 else 2, part)
            for n, part in enumerate(parts)
        )

    found = []
    for file in sorted(package.rglob("*.py"), key=key):
        rel = file.relative_to(package)
        if any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
            continue
        dotted = ".".join((package.name, *rel.with_suffix("").parts)).removesuffix(".__init__")
        doc = ast.get_docstring(ast.parse(file.read_text(encoding="utf-8"), str(file)))
        found.append(Module(rel.as_posix(), dotted, summary(doc)))
    return found


def module_map(package: Path = PACKAGE, *, link: str | None = None, depth: int | None = None) -> str:
    """Markdown: a nested list of the package's modules, each with its summary;
    a subpackage is its folder's entry (its `__init__` summary) with its modules under it.

    `link`: a path from the page to the package folder (`../src/todoledger/`) to
    link each module; `depth`: list only this many levels (1: the top-level
    modules and subpackages)."""
    lines = []
    for module in modules(package):
        parts = module.path.split("/")
        is_package = parts[-1] == "__init__.py"
        level = max(len(parts) - (2 if is_package else 1), 0)
        if depth is not None and level >= depth:
            continue
        shown = "/".join(parts[:-1]) + "/" if is_package and len(parts) > 1 else module.path
        target = f"[`{shown}`]({link}{shown})" if link is not None else f"`{shown}`"
        text = module.summary or "(no docstring)"
        lines.append(f"{'  ' * level}- {target}: {text}")
    return "\n".join(lines) + "\n"


# -- the agents: what each route needs, and what the real agents did (docs/agents.md) --------

MARK = {True: "✔", False: "✘", None: "—"}


def _results() -> Any:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.e2e import results

    return results


def agents_table() -> str:
    """The compatibility table from the e2e run's results (tests/e2e/results.json)."""
    results = _results()
    return render(results.load())


def render(data: dict[str, Any]) -> str:
    """The table, then each cell's note: how it was seen, and why where it is not ✔."""
    results = _results()
    head = "| agent | version | route | " + " | ".join(title for _, title in results.COLUMNS) + " |"
    rows = [head, "|" + "---|" * (3 + len(results.COLUMNS))]
    notes: list[str] = []
    for cell in sorted(data["cells"].values(), key=results.order):
        marks = []
        for key, _ in results.COLUMNS:
            seen = cell[key]
            mark = MARK[seen["ok"]]
            if seen["ok"] is not True and seen.get("applies") is not False:
                notes.append(f"- {cell['label']}, {cell['route']}, {key}: {mark} {seen['why']}")
            marks.append(f"{mark} {seen['how']}".strip())
        rows.append(f"| {cell['label']} | {cell['version']} | {cell['route']} | " + " | ".join(marks) + " |")
    text = "\n".join(rows) + "\n"
    live = data.get("panel_live")
    if live:
        # The bound, not the figure: each run measures another hundredth (tests/e2e/results.json keeps it).
        bound = 1 if live["shown_s"] <= 1 else math.ceil(live["shown_s"])
        text += (
            f"\nClaude Code's panel, live (interactive {live['version']} under a pseudo-terminal, the "
            f"screen rendered by a terminal emulator after ctrl+t): another agent's `todowrite` over MCP "
            f"was on the panel within {bound} s of the call's return; "
            f"{live['reset']}.\n"
        )
    if notes:
        text += "\nWhere a cell is not ✔, what install printed says why:\n\n" + "\n".join(notes) + "\n"
    return text


def agent_needs() -> str:
    """What each agent's route needs (install/needs.py): who provides it, and what it blocks."""
    from todoledger.install import needs

    who = {"install": "install writes it", "approve": "`install --approve` writes it", "you": "a person"}
    rows = [
        "| agent | routes | what doctor says when it is missing | who provides it | then |",
        "|---|---|---|---|---|",
    ]
    for n in needs.NEEDS:
        what = n.summary.replace("|", "\\|")
        level = "error" if n.blocks else "warning"
        routes = ", ".join(n.routes) + (" (with --gate-stop)" if n.gate else "")
        rows.append(f"| {n.agent} | {routes} | {what} | {who[n.by]} | {level} |")
    return "\n".join(rows) + "\n"


def person_actions_table() -> str:
    """docs/security.md's table of person-only actions, from the one table the
    screen and the ledger read (core/person_actions.py)."""
    from todoledger.core.person_actions import PERSON_ACTIONS

    rows = ["| Action | Command | Enforced in |", "|---|---|---|"]
    for a in PERSON_ACTIONS:
        usage = a.usage.replace("|", "\\|")
        command, _, note = usage.partition(" (")
        shown = f"`{command}`" + (f" ({note}" if note else "")
        where = ", ".join(f"`{p}`" for p in a.enforced_in.split(", "))
        rows.append(f"| {a.what} | {shown} | {where} |")
    return "\n".join(rows) + "\n"


# -- checking and regenerating ---------------------------------------------------------------


def main(argv: list[str]) -> int:
    """`--update` rewrites the generated pages; otherwise check them. Paths may follow."""
    from cogapp import Cog  # type: ignore[import-untyped]

    files = [a for a in argv if not a.startswith("--")] or [str(f) for f in GENERATED]
    hint = f"the generated docs are out of date: run `{REGENERATE}`"
    mode = ["-r"] if "--update" in argv else ["--check", "--diff", "--check-fail-msg", hint]
    return int(Cog().main(["cog", *mode, *files]))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
