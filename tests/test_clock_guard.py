"""The clock cannot be set by a writer (issue 29, Why: "the clock"): leases,
liveness ages and `reclaim` use the real clock on every ledger but one created
with `init --test-clock`, and an existing ledger cannot be switched."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from todoledger import Ledger
from todoledger.identity import MARKER_VARS

from .conftest import subprocess_env, todoledger_bin, with_test_clock

FUTURE = "2030-01-01T00:00:00Z"


def run(db: Path | str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = subprocess_env(db, **env)
    for name in MARKER_VARS:  # `env -u <markers>`: the agent's shell without its markers
        base.pop(name, None)
    return subprocess.run([todoledger_bin(), *args], capture_output=True, text=True, env=base, timeout=60)


def held_item(db: Path | str) -> str:
    with Ledger(str(db)) as lg:
        lg.add("Build", writer="lead")
        return str(lg.next(claim=True, writer="codex:w9")[0]["id"])


def test_a_clock_set_past_a_live_lease_neither_completes_nor_reclaims_it(ledger_env: Path | str) -> None:
    """Before: `env -u <markers> TODOLEDGER_NOW=2030-… todoledger done ID` completed
    another agent's leased item (history dated 2030), and `reclaim` under the same
    clock released the live lease."""
    item = held_item(ledger_env)
    done = run(ledger_env, "done", item, "--evidence", "x", TODOLEDGER_NOW=FUTURE)
    assert done.returncode == 1 and f"{item} is leased to codex:w9 until" in done.stderr, done.stderr
    reclaimed = run(ledger_env, "reclaim", "--json", TODOLEDGER_NOW=FUTURE)
    assert reclaimed.returncode == 0 and json.loads(reclaimed.stdout) == [], reclaimed.stdout
    with Ledger(str(ledger_env)) as lg:
        assert [i["status"] for i in lg.items()] == ["in_progress"]
        assert [x["holder"] for x in lg.leases()] == ["codex:w9"]
        assert not [e for e in lg.history() if e["at"].startswith("2030")]
        assert not lg.test_clock


def test_a_test_clock_ledger_honours_the_fixed_clock(ledger_env: Path | str) -> None:
    with_test_clock(ledger_env)
    item = held_item(ledger_env)
    reclaimed = run(ledger_env, "reclaim", "--json", TODOLEDGER_NOW=FUTURE)
    assert reclaimed.returncode == 0 and [r["item"] for r in json.loads(reclaimed.stdout)] == [item]
    with Ledger(str(ledger_env)) as lg:
        assert lg.test_clock and lg.leases() == []
        assert [e["at"] for e in lg.history()][-1].startswith("2030")


def test_an_existing_ledger_cannot_be_switched_to_a_test_clock(tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / ".todoledger").mkdir(parents=True)
    env = {k: v for k, v in subprocess_env("").items() if k != "TODOLEDGER_DB"}  # the project's own ledger
    first = subprocess.run(
        [todoledger_bin(), "add", "x"], cwd=project, capture_output=True, text=True, env=env
    )
    assert first.returncode == 0, first.stderr
    switch = subprocess.run(
        [todoledger_bin(), "init", "--test-clock"],
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
    )
    assert switch.returncode == 1 and "only a new ledger can be created with --test-clock" in switch.stderr
    assert "Traceback" not in switch.stderr
    with Ledger(str(project / ".todoledger" / "ledger.db")) as lg:
        assert not lg.test_clock
