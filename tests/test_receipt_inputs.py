"""Receipts record the inputs they depend on (issue 31, part 4), with checks/tree.py as
sweep runs do: a `file:` check its file, a `cmd:` check the whole tree (or its --watch
paths), and a check that reads no file (metric, http, port, disk) nothing of the tree.
"Stale" names the input, or "the tree". In a real git clone, through the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import subprocess_env, todoledger_bin

pytestmark = pytest.mark.sqlite_only


@pytest.fixture
def clone(tmp_path: Path, ledger_env: Path) -> Path:
    repo = tmp_path / "clone"
    repo.mkdir()
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@x",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@x",
    }
    (repo / "README.md").write_text("a project\n")
    (repo / ".gitignore").write_text(".todoledger/\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "first"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env=env | {"PATH": "/usr/bin:/bin"})
    return repo


def tl(repo: Path, *args: str) -> str:
    env = subprocess_env(repo / ".todoledger" / "ledger.db") | {"PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(
        [todoledger_bin(), *args], cwd=repo, capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc.stdout + proc.stderr


def verification(repo: Path, item: str, plan: str = "main") -> str:
    return states(repo, plan)[item]


def states(repo: Path, plan: str) -> dict[str, str]:
    doc = json.loads(tl(repo, "show", "--plan", plan, "--json"))
    return {i["id"]: i["verification"] for i in doc["items"]}


def test_only_what_a_check_reads_makes_its_receipt_stale_and_stale_names_it(clone: Path) -> None:
    tl(clone, "demo")
    before = {plan: states(clone, plan) for plan in ("demo", "demo-qwen")}
    assert "stale" not in [s for plan in before.values() for s in plan.values()]
    (clone / "x").touch()  # a new file in the tree: no metric, http, port or disk check read it
    after = {plan: states(clone, plan) for plan in ("demo", "demo-qwen")}
    assert after == before
    baseline = next(
        i for i, s in before["demo-qwen"].items() if s not in ("unverified", "failed", "reported")
    )
    assert after["demo-qwen"][baseline] != "stale"  # the Qwen baseline's metric check: typed numbers

    (clone / "results.json").write_text('{"tok_s": 82}\n')
    written = tl(
        clone, "add", "Write the benchmark results", "--done-when", "file:results.json", "-q"
    ).strip()
    tl(clone, "verify", written)
    assert verification(clone, written) not in ("stale", "failed", "unverified")
    (clone / "y").touch()  # the tree changes; results.json does not
    assert verification(clone, written) != "stale"
    (clone / "results.json").write_text('{"tok_s": 60}\n')
    assert verification(clone, written) == "stale"
    assert "(stale: the file results.json changed since it ran)" in tl(clone, "show", written)

    (clone / "test_x.py").write_text("def test_a():\n    assert True\n")
    pytest_cmd = f"cmd:{sys.executable} -m pytest -q -p no:cacheprovider test_x.py"
    tested = tl(clone, "add", "The tests pass", "--done-when", pytest_cmd, "-q").strip()
    tl(clone, "verify", tested)
    assert verification(clone, tested) not in ("stale", "failed", "unverified")
    (clone / "src.py").write_text("VALUE = 2\n")  # a file the tests exercise, named by no check
    assert verification(clone, tested) == "stale"
    assert "(stale: the tree changed since it ran)" in tl(clone, "show", tested)
    tl(clone, "done", tested)  # completed on the stale receipt's word? the gate runs again: it holds
    (clone / "src.py").write_text("VALUE = 3\n")
    assert '"The tests pass": the tree changed after its check ran' in tl(clone, "report", "main")
