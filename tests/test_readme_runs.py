"""README.md runs as written: every command block, in order, in a fresh copy of the
clone (docs/readme.py `clone`), typed into one terminal with HOME in a scratch folder,
exactly as printed, and each shown output is what the command printed.

The rules it compares by are in docs/development.md ("The README runs as written"):
the folder holding the clone is written `..`; an id the reader's own commands made
(random for them, seeded for the generator) maps one to one onto the README's; a
"... (N more lines)" line stands for exactly N more lines; the test-suite line is not
run (it would run this test); `serve` runs for 2 s.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs"))
import readme  # noqa: E402

pytestmark = pytest.mark.slow

ID = re.compile(r"(?<![\w./-])[0-9a-hjkmnp-tv-z]{6}(?![\w/-])")
MORE = re.compile(r"^\.\.\. \((\d+) more lines\)$")
BLOCK = re.compile(r"^```([a-z]*)\n(.*?)^```\n", re.S | re.M)


def steps(text: str) -> list[tuple[str, str, list[str] | None]]:
    """(kind, command, shown output or None) in the README's order: `run` for a line of a
    bash block (its output not shown), `shown` for a `$ ` command and what follows it."""
    out: list[tuple[str, str, list[str] | None]] = []
    for block in BLOCK.finditer(text):
        lang, body = block.group(1), block.group(2)
        lines = body.rstrip("\n").splitlines()
        if any(ln.startswith("$ ") for ln in lines):
            for line in lines:
                if line.startswith("$ "):
                    out.append(("shown", line[2:], []))
                else:
                    shown = out[-1][2]
                    assert shown is not None
                    shown.append(line)
        elif lang == "bash":
            out.extend(("run", ln, None) for ln in lines if ln.strip() and not ln.lstrip().startswith("#"))
    return out


def matches(actual: list[str], shown: list[str], ids: dict[str, str]) -> str | None:
    """None where `actual` is what `shown` shows, else the first difference. Ids map one to one."""
    more = MORE.match(shown[-1]) if shown else None
    if more:
        head = shown[:-1]
        if len(actual) != len(head) + int(more.group(1)):
            return f"{len(actual)} lines, the README says {len(head)} + {more.group(1)}"
        actual = actual[: len(head)]
        shown = head
    if len(actual) != len(shown):
        return f"{len(actual)} lines, the README shows {len(shown)}:\n" + "\n".join(actual)
    for got, want in zip(actual, shown, strict=True):
        if ID.sub("#", got) != ID.sub("#", want):
            return f"printed {got!r}\n  README {want!r}"
        for a, b in zip(ID.findall(got), ID.findall(want), strict=True):
            if ids.setdefault(a, b) != b or list(ids.values()).count(b) > 1:
                return f"id {a} stands for {ids[a]} and {b}: {got!r}"
    return None


@pytest.fixture(scope="session")
def terminal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[readme.Terminal, Path]]:
    """The fresh clone and the reader's terminal, once per suite run (the first block makes a venv)."""
    base = tmp_path_factory.mktemp("reader")
    (base / "home").mkdir()
    folder = readme.clone(base / readme.READER)
    term = readme.Terminal(folder, readme.reader_env(base / "home"))
    yield term, base
    term.close()


@pytest.mark.xdist_group("readme-team-schema")  # the team example's schema: see tests/test_readme.py
def test_the_readme_runs_as_written_in_a_fresh_clone(terminal: tuple[readme.Terminal, Path]) -> None:
    term, base = terminal
    text = (ROOT / "README.md").read_text()
    ids: dict[str, str] = {}
    last_run: tuple[str, list[str]] = ("", [])
    readme.drop_team_schema()
    try:
        for kind, command, shown in steps(text):
            if kind == "run":
                if "pytest" in command:
                    continue  # the test suite's own line: it would run this test
                typed = f"timeout 2 {command}" if command.startswith("todoledger serve") else command
                out = term.run(typed, timeout=900)
                last_run = (command, [ln.rstrip().replace(str(base), "..") for ln in out])
                continue
            assert shown is not None
            first_block, first_out = last_run
            if first_block.endswith(f"&& {command}") or first_block == command:
                # the output the block just run printed, shown under its last command
                start = first_out.index(shown[0]) if shown and shown[0] in first_out else 0
                actual = first_out[start:]
            else:
                actual = [ln.rstrip().replace(str(base), "..") for ln in term.run(command, timeout=300)]
            last_run = ("", [])
            problem = matches(actual, shown, ids)
            assert problem is None, f"README `$ {command}`: {problem}"
    finally:
        readme.drop_team_schema()


def test_the_readme_names_its_example_files_and_they_are_in_the_clone() -> None:
    text = (ROOT / "README.md").read_text()
    named = set(re.findall(r"docs/examples/[\w.]+", text))
    assert named >= {"docs/examples/list.json", "docs/examples/later.json", "docs/examples/bad.json"}
    for path in named:
        assert (ROOT / path).is_file(), path
    assert (ROOT / "docs/examples/bad.json").read_text() == readme.seed_call(4329)  # the seeds' own call


def test_the_steps_parser_reads_shown_output_and_more_lines() -> None:
    text = "```bash\nmake it  # why\n```\n\n```\n$ a\none\n... (2 more lines)\n$ b\n```\n"
    assert steps(text) == [
        ("run", "make it  # why", None),
        ("shown", "a", ["one", "... (2 more lines)"]),
        ("shown", "b", []),
    ]
    assert matches(["one", "x", "y"], ["one", "... (2 more lines)"], {}) is None
    assert matches(["one", "x"], ["one", "... (2 more lines)"], {}) is not None
    assert matches(["abc123 done"], ["zz9zz9 done"], {}) is None
    assert matches(["abc123 x abc123"], ["zz9zz9 x yy8yy8"], {}) is not None
