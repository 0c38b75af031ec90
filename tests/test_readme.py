"""The README's and the docs pages' example outputs are what the code prints
(docs/readme.py runs the commands; `cog --check` compares), every shown command
is generated, every id an example uses comes from an earlier step of it, and
the README stays short enough to act on in two minutes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GENERATOR = ROOT / "docs" / "readme.py"
HINT = "run `.venv/bin/python docs/readme.py --update`"
README_BUDGET = 300  # lines (issue 31): the reference lives in docs/, the example files in docs/examples/
sys.path.insert(0, str(GENERATOR.parent))
from readme import PAGES  # noqa: E402

PAGE_PATHS = [ROOT / page for page in PAGES]
DOCS = sorted((ROOT / "docs").glob("*.md"))
ID = re.compile(r"(?<![\w./-])[0-9a-hjkmnp-tv-z]{6}(?![\w/-])")  # core/ids.py: 6 of the 32 symbols


def generate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(GENERATOR), *args], capture_output=True, text=True, timeout=900, cwd=ROOT
    )


# The README's team example drops and makes the schema `readme_team`, as the README-runs test
# does (the commands name it as printed): both run on one worker, one after the other.
@pytest.mark.xdist_group("readme-team-schema")
def test_readme_and_docs_outputs_are_what_the_commands_print() -> None:
    result = generate()
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}\nout of date: {HINT}"


def test_a_stale_output_fails_the_check_with_the_command_that_regenerates_it(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        f"<!-- [[[cog import sys; sys.path.insert(0, {str(GENERATOR.parent)!r}); import readme ]]] -->\n"
        "<!-- [[[end]]] -->\n"
        '<!-- [[[cog cog.out(readme.shell("t", "todoledger add \'Benchmark with 5 draft tokens\'")) ]]] -->\n'
        "```\n$ todoledger add 'Benchmark with 5 draft tokens'\nxxxxxx ○ pending Benchmark with 10 draft tokens\n```\n"
        "<!-- [[[end]]] -->\n"
    )
    stale = generate(str(doc))
    assert stale.returncode != 0
    assert HINT in stale.stdout + stale.stderr
    assert generate("--update", str(doc)).returncode == 0
    updated = doc.read_text()
    assert "Benchmark with 5 draft tokens" in updated.split("```")[1].splitlines()[2]
    assert generate(str(doc)).returncode == 0
    again = tmp_path / "again.md"
    again.write_text(updated)
    generate("--update", str(again))
    assert again.read_text() == updated  # seeded ids and a fixed clock: the same text every run


def blocks(text: str) -> list[re.Match[str]]:
    return list(re.finditer(r"^```([a-z]*)\n(.*?)^```\n", text, re.S | re.M))


def test_every_shown_command_is_generated_or_marked_as_not_run() -> None:
    for path in PAGE_PATHS:
        text = path.read_text()
        shown = [b for b in blocks(text) if re.search(r"^\$ ", b.group(2), re.M)]
        assert shown or path.name != "README.md", "the README shows no command"
        for block in shown:
            before = text[: block.start()]
            generated = before.rfind("]]] -->") > before.rfind("[[[end]]]")  # inside a cog block's output
            marked = "generator does not run them" in before[-400:]
            assert generated or marked, f"{path.name}: not generated: {block.group(2)[:80]!r}"


def commands(body: str, prompted: bool) -> list[tuple[int, str]]:
    """(line number in the block, command) of a block: `$ ` lines (and their continuations), or
    every line of a shell block without prompts; comments left out."""
    out, lines, n = [], body.splitlines(), 0
    while n < len(lines):
        line = lines[n]
        if (line.startswith("$ ") if prompted else line.strip()) and not line.lstrip().startswith("#"):
            start, command = n, line.removeprefix("$ ")
            while command.endswith("\\") and n + 1 < len(lines):
                n += 1
                command += "\n" + lines[n]
            out.append((start, command.split(" #", 1)[0]))
        n += 1
    return out


def printed_ids(text: str) -> set[str]:
    """The ids the page's outputs print as ids: a plan's lines, `[id]`, `"id":"..."`, `added id`."""
    found = re.findall(r'"id":"(\w{6})"|^(\w{6})  |\[(\w{6})\]|added (\w{6}) |^(\w{6}) [●◐○✕]', text, re.M)
    return {token for group in found for token in group if token}


def test_every_id_an_example_uses_comes_from_an_earlier_step_of_it() -> None:
    """A reader following an example has only what its own earlier steps printed: an id in a
    command that no earlier output of the same block (or example) showed is one they do not have."""
    for path in [ROOT / "README.md", *DOCS]:
        if path.name in ("cli.md", "ARCHITECTURE.md"):
            continue
        text = path.read_text()
        for block in blocks(text):
            body = block.group(2)
            prompted = bool(re.search(r"^\$ ", body, re.M))
            if not prompted and block.group(1) not in ("bash", "sh"):
                continue
            lines = body.splitlines()
            for start, command in commands(body, prompted):
                for token in ID.findall(command):
                    if not any(ch.isdigit() for ch in token) and token not in printed_ids(text):
                        continue  # a word ("pytest", "search"), not an id
                    earlier = "\n".join(ln for ln in lines[:start] if not ln.startswith("$ "))
                    assert token in earlier, (
                        f"{path.name}: {token!r} in {command!r} comes from no earlier step"
                    )


def test_nothing_refers_to_a_folder_outside_the_clone() -> None:
    for path in [ROOT / "README.md", *DOCS, GENERATOR]:
        assert "../shared" not in path.read_text(), path.name


def test_the_readme_stays_within_its_budget_and_opens_with_the_two_set_up_commands() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= README_BUDGET, (
        f"README.md is over {README_BUDGET} lines: move reference to docs/"
    )
    first, second = (b.group(2).strip() for b in blocks(text)[:2])
    assert text.startswith("```bash\n") and first.endswith("todoledger demo")
    assert "source .venv/bin/activate" in first  # todoledger on PATH for every later example
    between = text[text.index(first) : text.index(second)]
    assert "For development" in between and "pytest" in second and "demo" not in second
    ci = (ROOT / ".ci" / "run").read_text()
    assert second in ci, "CI runs the README's test command: keep .ci/run and the README in agreement"
    for heading in ("## Quick start", "## Use it with your agent", "## What you get", "## Learn more"):
        assert heading in text
    order = [
        text.index(h)
        for h in ("## Quick start", "## Use it with your agent", "## What you get", "## Learn more")
    ]
    assert order == sorted(order)


def test_every_page_the_readme_links_exists() -> None:
    text = (ROOT / "README.md").read_text()
    for link in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / link).is_file(), link
    for page in ("agents", "verification", "board", "team", "forensics", "mcp", "cli", "performance"):
        assert f"(docs/{page}.md)" in text, page
