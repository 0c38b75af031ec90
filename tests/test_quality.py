"""Lint and types are part of the suite, and the README documents every command."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_ruff_check_and_format() -> None:
    check = run(str(BIN / "ruff"), "check", "src", "tests", "bench")
    assert check.returncode == 0, check.stdout
    fmt = run(str(BIN / "ruff"), "format", "--check", "src", "tests", "bench")
    assert fmt.returncode == 0, fmt.stdout


@pytest.mark.slow
def test_mypy_strict() -> None:
    result = run(str(BIN / "mypy"))
    assert result.returncode == 0, result.stdout


def test_readme_starts_with_the_two_commands_and_documents_every_command() -> None:
    from todoledger.cli.main import cli

    readme = (ROOT / "README.md").read_text()
    lines = [ln for ln in readme.splitlines() if ln.strip()]
    assert lines[1].endswith(".venv/bin/todoledger demo")
    assert lines[2].endswith(".venv/bin/python -m pytest")
    ci = (ROOT / ".ci" / "run").read_text()
    assert lines[2] in ci
    import click

    ctx = click.Context(cli)
    for name in cli.list_commands(ctx):
        assert re.search(rf"todoledger {name}\b", readme), f"README does not document `todoledger {name}`"
