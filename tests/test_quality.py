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
    code = [ln for ln in readme.splitlines() if ln.strip() and not ln.startswith(("```", "For development"))]
    assert code[0].endswith("source .venv/bin/activate && pip install -q -e . && todoledger demo")
    assert code[1].endswith(".venv/bin/python -m pytest")
    ci = (ROOT / ".ci" / "run").read_text()
    assert code[1] in ci
    import click

    # Every command is told in prose somewhere a reader finds from the README: the README or a
    # hand-written page (docs/cli.md, generated from --help, lists them all anyway).
    pages = [readme, *(p.read_text() for p in (ROOT / "docs").glob("*.md") if p.name != "cli.md")]
    ctx = click.Context(cli)
    for name in cli.list_commands(ctx):
        assert any(re.search(rf"todoledger {name}\b", text) for text in pages), (
            f"`todoledger {name}` is told nowhere"
        )


def test_xdist_groups_keep_their_tests_on_one_worker(tmp_path: Path) -> None:
    """The suite relies on `--dist loadgroup`: the real agents' runs are shared by
    the tests of one worker, and the Inspector's npm cache is used by one at a
    time. Some pytest and pytest-xdist releases drop the grouping silently."""
    (tmp_path / "test_grouped.py").write_text(
        "import os\n"
        "import pytest\n\n"
        "pytestmark = pytest.mark.xdist_group('together')\n\n"
        "@pytest.mark.parametrize('n', range(6))\n"
        "def test_where(n):\n"
        "    with open('workers.txt', 'a') as fh:\n"
        "        fh.write(os.environ['PYTEST_XDIST_WORKER'] + '\\n')\n"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            "2",
            "--dist",
            "loadgroup",
            "test_grouped.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    workers = (tmp_path / "workers.txt").read_text().split()
    assert len(workers) == 6 and len(set(workers)) == 1, workers
