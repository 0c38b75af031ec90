"""Stand-ins are never proof (issue 31 part 1): a check against a stand-in reads
`stand-in`, never verified, until a person says it runs against the real thing;
the demo's stand-in checks, its config.json gate and its stand-in sweep are
marked so, and the board's sweeps page says simulated."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from todoledger import Ledger, LedgerError

from .conftest import person_env, subprocess_env, todoledger_bin

PERSON = "cli:ann"
AGENT = "mcp:claude-code:s1"


def state(lg: Ledger, item: str, plan: str | None = None) -> str | None:
    return next(i["verification"] for i in lg.show(plan)["items"] if i["id"] == item)


def test_a_stand_in_is_never_proof_and_only_a_person_clears_the_mark(ledger_env: Path | str) -> None:
    with Ledger() as lg:
        item = lg.add("Server is up", writer=PERSON)["id"]
        after = lg.add("Benchmark it", depends_on=[item], writer=PERSON)["id"]
    added = subprocess.run(
        [todoledger_bin(), "gate", "add", item, "cmd:test -d .", "--stand-in", "--json"],
        env=person_env(ledger_env),
        capture_output=True,
        text=True,
    )
    assert added.returncode == 0, added.stderr
    with Ledger() as lg:
        (row,) = lg.checks([item])
        assert row.stand_in and row.person_backed  # a person's own gate, and still a stand-in
        lg.done(item, evidence="it answers", writer=AGENT)
        assert state(lg, item) == "stand-in"
        assert after not in [i["id"] for i in lg.next()]
        with pytest.raises(LedgerError, match="a person must run it"):
            lg.clear_stand_in(row.id, writer=AGENT)
    # The screen stops the agent's shell too; the ledger refuses it on every route.
    agent = subprocess.run(
        [todoledger_bin(), "gate", "real", row.id],
        env=subprocess_env(ledger_env, CLAUDECODE="1"),
        capture_output=True,
        text=True,
    )
    assert agent.returncode == 1 and "a person must run it" in agent.stderr
    real = subprocess.run(
        [todoledger_bin(), "gate", "real", row.id], env=person_env(ledger_env), capture_output=True, text=True
    )
    assert real.returncode == 0, real.stderr
    with Ledger() as lg:
        lg.verify([item])
        assert state(lg, item) == "verified"
        assert after in [i["id"] for i in lg.next()]


@pytest.mark.sqlite_only
def test_the_demos_stand_ins_and_its_own_files_never_read_verified(ledger_env: Path) -> None:
    """Before: after `demo --checks`, "Verify the SGLang EAGLE3 server is still up" and
    "Verify benchmark_eagle3.py measures ..." read verified (a local stand-in server, a
    simulation script), and Phase 0.2 was "verified by cli:reviewer" by a gate reading a
    config.json the demo wrote; the board's sweeps page never said simulated."""
    from todoledger.demo import load_demo
    from todoledger.demo_checks import PHASE_02, SCRIPT_ITEM, SERVER_ITEM, SWEEP, run_checks
    from todoledger.web import sweeps_page

    with Ledger(ledger_env) as lg:
        load_demo(lg)
        run_checks(lg)
        items = {i["content"]: i for i in lg.show("demo")["items"]}
        for start in (SERVER_ITEM, SCRIPT_ITEM):
            it = next(i for c, i in items.items() if c.startswith(start))
            assert it["verification"] == "stand-in", (start, it["verification"])
        assert items[PHASE_02]["verification"] == "stand-in"
        assert not [c for c, i in items.items() if i.get("verification") == "verified"]
        results = lg.sweep_results(SWEEP, plan="demo")
        assert results["simulated"] is True
        html = str(sweeps_page.page("demo", [({"name": SWEEP, "parent": "x"}, results)]))
    assert "simulated: run against stand-ins" in html
