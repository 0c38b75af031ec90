"""The README's example outputs are what the code prints (docs/readme.py runs
the commands; `cog --check` compares), and every shown command is generated."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GENERATOR = ROOT / "docs" / "readme.py"
HINT = "run `.venv/bin/python docs/readme.py --update`"


def generate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(GENERATOR), *args], capture_output=True, text=True, timeout=600, cwd=ROOT
    )


def test_readme_outputs_are_what_the_commands_print() -> None:
    result = generate()
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}\nREADME.md is out of date: {HINT}"


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


def test_every_shown_command_is_generated_or_marked_as_not_run() -> None:
    text = (ROOT / "README.md").read_text()
    blocks = list(re.finditer(r"^```[a-z]*\n(.*?)^```\n", text, re.S | re.M))
    shown = [b for b in blocks if re.search(r"^\$ ", b.group(1), re.M)]
    assert shown, "the README shows no command"
    for block in shown:
        before = text[: block.start()]
        generated = before.rstrip().endswith("]]] -->")
        marked = "the README generator does not run them" in before[-400:]
        assert generated or marked, f"not generated: {block.group(1)[:80]!r}"


def test_the_verification_page_shows_what_the_commands_print() -> None:
    """docs/verification.md (sweeps as the seeds ran them) is generated as the README is."""
    result = generate(str(ROOT / "docs" / "verification.md"))
    hint = "run `.venv/bin/python docs/readme.py --update docs/verification.md`"
    assert result.returncode == 0, (
        f"{result.stdout}\n{result.stderr}\ndocs/verification.md is out of date: {hint}"
    )
