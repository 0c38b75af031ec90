"""A read pays no import machinery per call: everything `show --json` needs
is found on its first run. On Python 3.11 `_sha2` does not exist, and a failed
import is not cached: asked for once per hash, it walked every finder twice per
gate on every read (issue 30). A counting finder on `sys.meta_path`, installed
after a first `show --json`, must see no `find_spec` call during a second one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from todoledger.ledger import Ledger

PROBE = """
import io, json, sys
from todoledger.cli.lean import run

class Counting:
    def __init__(self):
        self.calls = []
    def find_spec(self, name, path=None, target=None):
        self.calls.append(name)
        return None

def once(args):
    out, old = io.StringIO(), sys.stdout
    sys.stdout = out
    try:
        code = run(args)
    finally:
        sys.stdout = old
    assert code == 0, code
    return out.getvalue()

args = sys.argv[1:]
first = once(args)
finder = Counting()
sys.meta_path.insert(0, finder)
second = once(args)
sys.meta_path.remove(finder)
assert first == second
sys.stderr.write("FIND_SPEC " + json.dumps(finder.calls) + "\\n")
sys.stdout.write(second)
"""


def second_run_imports(db: Path | str, cwd: Path, *args: str) -> tuple[list[str], str]:
    env = {**os.environ, "TODOLEDGER_DB": str(db), "TODOLEDGER_WRITER": "agent:1"}
    env.pop("TODOLEDGER_PLAN", None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=60
    )
    assert done.returncode == 0, done.stderr
    calls: list[str] = json.loads(done.stderr.rsplit("FIND_SPEC ", 1)[1])
    return calls, done.stdout


def test_a_second_show_of_a_gated_plan_attempts_no_import(ledger_env: Path | str, tmp_path: Path) -> None:
    db = ledger_env
    with Ledger(db) as lg:
        for k in range(12):
            item = lg.add(f"gated {k}", writer="setup")
            lg.add_check(item["id"], f"file:{tmp_path / f'out{k}.txt'}", writer="cli:setup")
        lg.add("ungated", writer="setup")
    calls, out = second_run_imports(db, tmp_path, "show", "--json")
    assert len(json.loads(out)["items"]) == 13  # the gates were read: the hashing ran
    assert calls == []
    calls, out = second_run_imports(db, tmp_path, "next", "--json")
    assert json.loads(out)
    assert calls == []


HOOK_PROBE = """
import sys
from todoledger.cli.entry import main
try:
    main(["hook", "claude-code"])
except SystemExit:
    pass
sys.stderr.write("LOADED " + " ".join(m for m in ("contextlib",) if m in sys.modules) + "\\n")
"""


@pytest.mark.sqlite_only  # store/postgres.py still imports contextlib itself (issue 30: not done there)
def test_the_session_start_hook_loads_no_contextlib(ledger_env: Path | str, tmp_path: Path) -> None:
    """`contextlib` (with `collections`, `functools`, `types`) is a good part of an
    interpreter's start; the hooks run at every start, resume, clear and compaction
    under the agents' timeout (issue 30): they use core/scoped.py instead."""
    with Ledger(ledger_env) as lg:
        lg.add("Fix the loader", writer="setup")
    env = {**os.environ, "TODOLEDGER_DB": str(ledger_env)}
    env.pop("TODOLEDGER_PLAN", None)
    event = json.dumps({"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup"})
    done = subprocess.run(
        [sys.executable, "-c", HOOK_PROBE], input=event, capture_output=True, text=True, env=env, timeout=60
    )
    assert "Fix the loader" in done.stdout
    assert done.stderr.rsplit("LOADED ", 1)[1].strip() == ""


GATED_PROBE = """
import sys
from todoledger.cli.entry import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = ("json", "re", "math", "hashlib", "_hashlib", "importlib", "todoledger.checks.tree")
sys.stderr.write("LOADED " + " ".join(m for m in heavy if m in sys.modules) + "\\n")
"""


@pytest.mark.sqlite_only  # store/postgres.py imports json itself
def test_a_gated_show_loads_no_json_re_or_math(ledger_env: Path | str, tmp_path: Path) -> None:
    """A read of a gated plan parses and judges its gates from stored data: `json` and `re`
    (with `enum`...) cost more than the rest of that read (issue 30: `show --json` of 300
    gated items at most 1.2x the same plan without gates). A gate's state is as strict."""
    with Ledger(ledger_env) as lg:
        for k in range(3):
            item = lg.add(f"gated {k}", writer="setup")
            lg.add_check(item["id"], f"file:{tmp_path / f'out{k}.txt'}", writer="cli:setup")
            lg.add_check(item["id"], "cmd:test -s out.txt", writer="cli:setup")
        lg.add("ungated", writer="setup")
    env = {**os.environ, "TODOLEDGER_DB": str(ledger_env)}
    env.pop("TODOLEDGER_PLAN", None)
    for args in (["show", "--json"], ["next", "--json"]):
        done = subprocess.run(
            [sys.executable, "-c", GATED_PROBE, *args], capture_output=True, text=True, env=env, cwd=tmp_path
        )
        assert done.stderr.rsplit("LOADED ", 1)[1].split() == [], args
    shown = subprocess.run(
        [sys.executable, "-m", "todoledger", "show", "--json"], capture_output=True, env=env, cwd=tmp_path
    )
    states = {it["content"]: it["verification"] for it in json.loads(shown.stdout)["items"]}
    assert states == {
        "gated 0": "unverified",
        "gated 1": "unverified",
        "gated 2": "unverified",
        "ungated": None,
    }
