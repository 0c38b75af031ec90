"""The generated docs are what the code says: docs/cli.md is every command's
`--help`, docs/ARCHITECTURE.md's module map is every module's docstring
(docs/docgen.py generates both in cog blocks; `cog --check` compares)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs"))

import docgen  # noqa: E402  (docs/docgen.py: not a package)

ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"
CLI = ROOT / "docs" / "cli.md"


def check(capsys: pytest.CaptureFixture[str], *paths: Path) -> tuple[int, str]:
    code = docgen.main([str(p) for p in paths])
    out = capsys.readouterr()
    return code, out.out + out.err


@pytest.mark.parametrize("page", docgen.GENERATED, ids=lambda p: p.name)
def test_generated_page_is_up_to_date(page: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, output = check(capsys, page)
    assert code == 0, f"{output}\n{page.name} is out of date: run `{docgen.REGENERATE}`"


def test_every_command_is_in_the_cli_reference() -> None:
    """Those the group imports only when they run (LAZY_COMMANDS) included."""
    from todoledger.cli.main import LAZY_COMMANDS, cli

    headings = set(re.findall(r"^#+ (todoledger(?: [a-z-]+)*)$", CLI.read_text(), re.M))
    names = {" ".join(["todoledger", *path]) for path, _ in docgen.commands()}
    assert {f"todoledger {name}" for name in LAZY_COMMANDS} <= names
    assert {f"todoledger {name}" for name in cli.list_commands(click.Context(cli))} <= names
    missing = sorted(names - headings)
    assert not missing, f"not in docs/cli.md: {missing}: run `{docgen.REGENERATE}`"
    assert not headings - names, (
        f"docs/cli.md documents commands that do not exist: {sorted(headings - names)}"
    )


def test_every_module_has_a_docstring_and_is_in_the_module_map() -> None:
    modules = docgen.modules()
    assert len(modules) > 100 and modules[0].name == "todoledger"
    undocumented = [m.path for m in modules if not m.summary]
    assert not undocumented, (
        f"modules without a docstring: {undocumented}: give each a one-line summary of what it owns"
    )
    text = ARCHITECTURE.read_text()
    shown = set(re.findall(r"^ *- \[`([^`]+)`\]", text, re.M))
    wanted = {m.path.removesuffix("__init__.py") or "__init__.py" for m in modules}
    missing = sorted(wanted - shown)
    assert not missing, (
        f"modules missing from docs/ARCHITECTURE.md's map: {missing}: run `{docgen.REGENERATE}`"
    )
    gone = sorted(shown - wanted)
    assert not gone, f"docs/ARCHITECTURE.md's map lists modules that do not exist: {gone}"


def test_summary_is_the_first_sentence_of_the_first_paragraph() -> None:
    assert docgen.summary(None) == ""
    assert docgen.summary("Console entry point.\n\nMore.") == "Console entry point."
    assert docgen.summary("Where the ledger lives: a path, or\n`.todoledger/` above. Then more.") == (
        "Where the ledger lives: a path, or `.todoledger/` above."
    )
    assert docgen.summary("Reads v1.2 files, e.g. x.json. Then.") == "Reads v1.2 files, e.g. x.json."


def test_the_module_map_of_any_package(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text('"""The package."""\n')
    (package / "b.py").write_text('"""Module b\nwraps."""\n')
    (package / "a.py").write_text("x = 1\n")
    (package / "sub" / "__init__.py").write_text('"""A subpackage."""\n')
    (package / "sub" / "c.py").write_text('"""Module c."""\n')
    assert docgen.module_map(package) == (
        "- `__init__.py`: The package.\n"
        "- `a.py`: (no docstring)\n"
        "- `b.py`: Module b wraps.\n"
        "- `sub/`: A subpackage.\n"
        "  - `sub/c.py`: Module c.\n"
    )
    assert docgen.module_map(package, depth=1, link="src/") == (
        "- [`__init__.py`](src/__init__.py): The package.\n"
        "- [`a.py`](src/a.py): (no docstring)\n"
        "- [`b.py`](src/b.py): Module b wraps.\n"
        "- [`sub/`](src/sub/): A subpackage.\n"
    )
    assert [m.name for m in docgen.modules(package)] == ["pkg", "pkg.a", "pkg.b", "pkg.sub", "pkg.sub.c"]


def test_a_stale_page_fails_the_check_with_the_command_that_regenerates_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        f"<!-- [[[cog import sys; sys.path.insert(0, {str(ROOT / 'docs')!r}); import docgen ]]] -->\n"
        "<!-- [[[end]]] -->\n"
        "<!-- [[[cog cog.out(docgen.help_text(['lease'])) ]]] -->\n"
        "Usage: todoledger lease [OPTIONS] [SECONDS]\n\n  An old description.\n"
        "<!-- [[[end]]] -->\n"
    )
    code, output = check(capsys, page)
    assert code != 0
    assert docgen.REGENERATE in output and "-  An old description." in output
    assert docgen.main(["--update", str(page)]) == 0
    assert "Set the plan's lease length in seconds" in page.read_text()
    assert check(capsys, page)[0] == 0
